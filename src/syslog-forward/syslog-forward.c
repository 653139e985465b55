/*
 * syslog-forward: every line said on the rescue's consoles (the append-only
 * /run/extrescue/said) to a syslog server, as RFC 5424 messages over UDP
 * (one a datagram) or TCP (RFC 6587 octet counting). The file is the queue:
 * a line is read only when the one before is out, so a server that is away
 * costs a file offset and no memory, and nothing said meanwhile is lost.
 * Every wait is bounded; SIGTERM sends what is left within 3 s.
 *
 * usage: syslog-forward [--tcp] [--hostname NAME] [--version V] [--state FILE] HOST[:PORT] FILE
 *        PORT 514 unless given; NAME this machine's host name unless given;
 *        --state FILE gets our PID, for whoever stops us (SIGTERM).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../lib/connect.h"
#include "../lib/text.h"

#define MAX_MSG 1024		/* bytes of a line sent; the rest is dropped */
#define MAX_HOSTNAME 64
#define MAX_VERSION 32
#define TICK_MS 200		/* how often the file is looked at for growth */
#define CONNECT_MS 3000
#define RETRY_MS 5000
#define DRAIN_MS 2800		/* after SIGTERM: 3 s, less the time to exit */
#define CLOSE_MS 2000		/* for the server to close after our SHUT_WR */
/* A TCP peer that acknowledges nothing for this long is gone (a server
 * that died without a reset would otherwise hold us for 15 minutes). */
#define UNACKED_MS 30000

/* The file followed, a line at a time, its current line bounded. */
struct follow {
	const char *path;
	int fd;
	size_t start, end;
	char buf[4096];
	size_t len;
	char line[MAX_MSG];
};

struct server {
	char host[CONNECT_HOST_MAX + 1];
	char name[CONNECT_HOST_MAX + 16];	/* HOST:PORT, as said */
	int port, tcp, fd;
	long long retry_at;
	int said_down, said_again, said_send_error;
};

/* The message being sent, framed; SENT bytes of it are out (TCP). */
struct message {
	int pending;
	size_t len, sent;
	char text[MAX_MSG + 512];
};

static char hostname[MAX_HOSTNAME + 1] = "-";
static char origin[MAX_VERSION * 2 + 64];
static long sequence;
static char file_shown[256];

static volatile sig_atomic_t stopping;
static volatile long long stopped_at;

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* The drain's 3 s count from the signal itself, not from when the main loop
 * notices it (a connect under way may hold it); clock_gettime is
 * async-signal-safe. */
static void on_term(int sig)
{
	int saved = errno;

	(void)sig;
	if (!stopping)
		stopped_at = now_ms();
	stopping = 1;
	errno = saved;
}

static void nap(int ms)
{
	if (ms > 0)
		poll(NULL, 0, ms);
}

/* One line to stderr and to the followed file, so it reaches the consoles'
 * record and the report (and, read back, the server). */
static void say(struct follow *f, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n, fd;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	fprintf(stderr, "%.*s", n, line);
	fd = open(f->path, O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) < 0)
			fprintf(stderr, "syslog-forward: %s: %s\n", file_shown, strerror(errno));
		close(fd);
	}
}

/* Opens the file when it is there; a file that is not there yet is waited
 * for, one that cannot be read is a mistake worth stopping for. */
static int follow_open(struct follow *f)
{
	if (f->fd >= 0)
		return 0;
	/* O_NONBLOCK: a FIFO put in its place must not hold the open or a read. */
	f->fd = open(f->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (f->fd >= 0)
		return 0;
	if (errno == ENOENT)
		return -1;
	fprintf(stderr, "syslog-forward: %s: %s; check the file given\n", file_shown, strerror(errno));
	exit(1);
}

/* The next non-empty line in f->line (f->len bytes, at most MAX_MSG, its
 * newline dropped): 1 when there is one, 0 until the file grows. With FINAL
 * a last line without its newline counts too. The caller empties f->len. */
static int next_line(struct follow *f, int final)
{
	if (follow_open(f))
		return 0;
	for (;;) {
		char c;

		if (f->start == f->end) {
			ssize_t r = read(f->fd, f->buf, sizeof(f->buf));

			if (r <= 0)
				return final && f->len;
			f->start = 0;
			f->end = (size_t)r;
		}
		c = f->buf[f->start++];
		if (c == '\n' && f->len)
			return 1;
		if (c != '\n' && f->len < MAX_MSG)
			f->line[f->len++] = c;
	}
}

/* RFC 5424's TIMESTAMP, or its NILVALUE when the clock was never set (the
 * server's own time is better than 1970) or past what four digits hold. */
static void timestamp(char *out, size_t size)
{
	struct timespec t;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &t);
	if (!gmtime_r(&t.tv_sec, &tm) || tm.tm_year + 1900 < 2020 || tm.tm_year + 1900 > 9999) {
		snprintf(out, size, "-");
		return;
	}
	snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (t.tv_nsec / 1000) % 1000000);
}

/* LINE as the next message: printable ASCII only (so no BOM is due), with
 * its octet count in front for TCP. */
static void compose(struct message *m, const char *line, size_t n, int tcp)
{
	char text[MAX_MSG + 1], stamp[96], body[sizeof(m->text) - 16];
	int len;

	for (size_t i = 0; i < n; i++)
		text[i] = (unsigned char)line[i] >= 0x20 && (unsigned char)line[i] < 0x7f ? line[i] : '?';
	text[n] = 0;
	timestamp(stamp, sizeof(stamp));
	sequence = sequence == INT32_MAX ? 1 : sequence + 1;
	/* PRI 29: facility daemon (3), severity notice (5). */
	len = snprintf(body, sizeof(body), "<29>1 %s %s extrescue - - [meta sequenceId=\"%ld\"]%s %s", stamp, hostname,
		       sequence, origin, text);
	if (tcp)
		m->len = (size_t)snprintf(m->text, sizeof(m->text), "%d %s", len, body);
	else
		m->len = (size_t)snprintf(m->text, sizeof(m->text), "%s", body);
	m->sent = 0;
	m->pending = 1;
}

static void set_hostname(const char *name)
{
	size_t n = 0;

	for (; name[n] && n < MAX_HOSTNAME; n++)
		hostname[n] = (unsigned char)name[n] > 32 && (unsigned char)name[n] < 127 ? name[n] : '_';
	hostname[n] = 0;
	if (!n)
		strcpy(hostname, "-");
}

/* The origin SD element, its value escaped as RFC 5424 6.3.3 asks. */
static void set_origin(const char *version)
{
	char shown[MAX_VERSION + 1], escaped[MAX_VERSION * 2 + 1];
	size_t j = 0;

	text_shown(shown, sizeof(shown), version, MAX_VERSION, 0);
	for (size_t i = 0; shown[i]; i++) {
		if (shown[i] == '"' || shown[i] == '\\' || shown[i] == ']')
			escaped[j++] = '\\';
		escaped[j++] = shown[i];
	}
	escaped[j] = 0;
	snprintf(origin, sizeof(origin), "[origin software=\"extrescue\" swVersion=\"%s\"]", escaped);
}

static void drop_link(struct server *s, struct message *m)
{
	close(s->fd);
	s->fd = -1;
	s->retry_at = 0;
	m->sent = 0;
}

/* Connects when it is time to try; 1 when there is a link. */
static int link_up(struct server *s, struct follow *f, int connect_ms)
{
	unsigned unacked = UNACKED_MS;
	char why[128];

	if (s->fd >= 0)
		return 1;
	if (now_ms() < s->retry_at)
		return 0;
	s->fd = connect_to(s->host, s->port, s->tcp ? SOCK_STREAM : SOCK_DGRAM, connect_ms, why, sizeof(why));
	if (s->fd < 0) {
		s->retry_at = now_ms() + RETRY_MS;
		if (!s->said_down && !stopping) {
			say(f, "extrescue: syslog server %s (%s) not reachable: %s; lines kept in %s", s->name,
			    s->tcp ? "tcp" : "udp", why, file_shown);
			s->said_down = 1;
		}
		return 0;
	}
	if (s->said_down && !s->said_again) {
		say(f, "extrescue: syslog server %s reachable again", s->name);
		s->said_again = 1;
	}
	if (s->tcp)
		setsockopt(s->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &unacked, sizeof(unacked));
	return 1;
}

/* Whether a TCP syslog server, which never talks, closed or reset its end. */
static int server_closed(int fd)
{
	char scrap[512];
	ssize_t r = recv(fd, scrap, sizeof(scrap), MSG_DONTWAIT);

	return r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR);
}

/* UDP is fire and forget: a datagram the server refuses is dropped, the
 * first refusal said; one our own full buffer holds back waits. 1 when
 * done with the message. */
static int send_datagram(struct server *s, struct follow *f, struct message *m, int wait_ms)
{
	struct pollfd p = {.fd = s->fd, .events = POLLOUT};

	if (poll(&p, 1, wait_ms) < 0 && errno == EINTR)
		return 0;
	if (send(s->fd, m->text, m->len, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
		return 1;
	if (errno == EINTR || errno == EAGAIN)
		return 0;
	if (!s->said_send_error) {
		say(f, "extrescue: syslog server %s (udp) not reachable: %s; lines kept in %s", s->name,
		    strerror(errno), file_shown);
		s->said_send_error = 1;
	}
	return 1;
}

/* Sends what it can of the message within WAIT_MS; 1 when all is out. A
 * broken link is dropped and the message sent whole on the next one. */
static int send_stream(struct server *s, struct message *m, int wait_ms)
{
	struct pollfd p = {.fd = s->fd, .events = POLLOUT | POLLIN};
	ssize_t r;

	if (poll(&p, 1, wait_ms) <= 0)
		return 0;
	if ((p.revents & (POLLIN | POLLHUP | POLLERR)) && server_closed(s->fd)) {
		drop_link(s, m);
		return 0;
	}
	if (!(p.revents & POLLOUT))
		return 0;
	r = send(s->fd, m->text + m->sent, m->len - m->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (r < 0 && errno != EAGAIN && errno != EINTR) {
		drop_link(s, m);
		return 0;
	}
	if (r > 0)
		m->sent += (size_t)r;
	return m->sent == m->len;
}

/* 1 when done with the pending message, 0 to come back to it. */
static int deliver(struct server *s, struct follow *f, struct message *m, int wait_ms, int connect_ms)
{
	if (!link_up(s, f, connect_ms))
		return 0;
	if (!s->tcp)
		return send_datagram(s, f, m, wait_ms);
	return send_stream(s, m, wait_ms);
}

static void forward(struct server *s, struct follow *f, struct message *m)
{
	while (!stopping) {
		if (!m->pending && next_line(f, 0)) {
			compose(m, f->line, f->len, s->tcp);
			f->len = 0;
		}
		if (!m->pending) {
			nap(TICK_MS);
		} else if (deliver(s, f, m, TICK_MS, CONNECT_MS)) {
			m->pending = 0;
		} else if (s->fd < 0) {
			nap(TICK_MS);
		}
	}
}

/* Our end closed, then the server's awaited, so that it has taken every
 * message before we go (closing at once could reset what is in flight). */
static void close_gently(struct server *s, long long deadline)
{
	struct pollfd p = {.fd = s->fd, .events = POLLIN};

	shutdown(s->fd, SHUT_WR);
	while (now_ms() < deadline && poll(&p, 1, (int)(deadline - now_ms())) > 0)
		if (server_closed(s->fd))
			break;
	close(s->fd);
	s->fd = -1;
}

/* What is left in the file, the last line without its newline included,
 * sent within DRAIN_MS of the signal. */
static void drain(struct server *s, struct follow *f, struct message *m)
{
	long long deadline = stopped_at + DRAIN_MS, left;

	s->retry_at = 0;	/* one more try, whatever the wait between tries */
	while ((left = deadline - now_ms()) > 0) {
		if (!m->pending && next_line(f, 1)) {
			compose(m, f->line, f->len, s->tcp);
			f->len = 0;
		}
		if (!m->pending)
			break;
		if (deliver(s, f, m, left < TICK_MS ? (int)left : TICK_MS, left < CONNECT_MS ? (int)left : CONNECT_MS))
			m->pending = 0;
		else if (s->fd < 0 && s->retry_at > deadline)
			break;
	}
	if (s->tcp && s->fd >= 0) {
		left = deadline - now_ms();
		close_gently(s, now_ms() + (left < CLOSE_MS ? left : CLOSE_MS));
	}
}

static void usage(void)
{
	fprintf(stderr, "syslog-forward: usage: syslog-forward [--tcp] [--hostname NAME] [--version V] [--state FILE] "
			"HOST[:PORT] FILE\n");
	exit(2);
}

static void write_state(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || dprintf(fd, "%ld\n", (long)getpid()) < 0 || close(fd) < 0) {
		fprintf(stderr, "syslog-forward: --state %.200s: %s; give a writable file\n", path, strerror(errno));
		exit(1);
	}
}

static void catch_signals(void)
{
	struct sigaction term = {.sa_handler = on_term};

	/* No SA_RESTART: a wait ends on SIGTERM and the drain starts at once. */
	sigaction(SIGTERM, &term, NULL);
	/* Whatever ignored them where we were started from. */
	signal(SIGINT, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv)
{
	static struct follow f = {.fd = -1};
	static struct message m;
	struct server s = {.fd = -1};
	const char *state = NULL;
	char name[MAX_HOSTNAME + 1] = "";
	int i;

	gethostname(name, sizeof(name) - 1);
	set_hostname(name);
	for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--tcp"))
			s.tcp = 1;
		else if (!strcmp(argv[i], "--hostname") && i + 1 < argc)
			set_hostname(argv[++i]);
		else if (!strcmp(argv[i], "--version") && i + 1 < argc)
			set_origin(argv[++i]);
		else if (!strcmp(argv[i], "--state") && i + 1 < argc)
			state = argv[++i];
		else
			usage();
	}
	if (argc - i != 2)
		usage();
	if (connect_parse(argv[i], 514, s.host, sizeof(s.host), &s.port)) {
		char shown[128];

		text_shown(shown, sizeof(shown), argv[i], sizeof(shown) - 1, 0);
		fprintf(stderr, "syslog-forward: server must be HOST, HOST:PORT or [IPV6]:PORT (port 1-65535), not %s\n",
			shown);
		exit(2);
	}
	connect_name(s.host, s.port, s.name, sizeof(s.name));
	f.path = argv[i + 1];
	text_shown(file_shown, sizeof(file_shown), f.path, sizeof(file_shown) - 1, 0);
	catch_signals();
	if (state)
		write_state(state);
	link_up(&s, &f, CONNECT_MS);
	forward(&s, &f, &m);
	drain(&s, &f, &m);
	return 0;
}

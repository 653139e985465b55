/*
 * http-put: one file sent with HTTP PUT, for rescue.metrics= (a Prometheus
 * Pushgateway replaces a group's metrics on PUT; busybox wget only POSTs).
 * Plain HTTP only, no redirects followed, the whole exchange within the
 * timeout; the answer is hostile and only its status line and the first
 * line of its body are shown, bounded and made printable.
 *
 * usage: http-put [--timeout SECONDS] [--content-type TYPE] URL FILE
 * exit:  0 the server took it (2xx), 1 it did not or could not be reached,
 *        2 a wrong argument or an unreadable or too large FILE
 */
#define _GNU_SOURCE	/* strcasestr */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../lib/connect.h"
#include "../lib/text.h"

#define MAX_URL 2048
#define MAX_BODY (4 * 1024 * 1024)
#define MAX_TIMEOUT 300
#define MAX_ANSWER 8192		/* bytes of the answer read: headers and a line */
#define SHOWN_STATUS 100

struct target {
	char authority[MAX_URL + 1];	/* HOST[:PORT] as written, for Host: */
	char path[MAX_URL + 2];
	char host[CONNECT_HOST_MAX + 1];
	int port;
};

static void usage(void)
{
	fprintf(stderr, "http-put: usage: http-put [--timeout SECONDS] [--content-type TYPE] URL FILE\n");
	exit(2);
}

static void bad_url(const char *url)
{
	char shown[MAX_URL + 1];

	text_shown(shown, sizeof(shown), url, MAX_URL, 0);
	fprintf(stderr, "http-put: URL must be http://HOST[:PORT]/PATH: %s\n", shown);
	exit(2);
}

/* Visible ASCII only: no space or control byte may reach the request line. */
static int visible(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

/* URL into T, or -1. A fragment is the browser's and never sent; user
 * names and passwords in the URL are refused rather than ignored. */
static int parse_url(const char *url, struct target *t)
{
	const char *a = url + 7;
	size_t n;

	if (strlen(url) > MAX_URL || !visible(url) || strncasecmp(url, "http://", 7))
		return -1;
	n = strcspn(a, "/?#");
	if (!n || memchr(a, '@', n))
		return -1;
	memcpy(t->authority, a, n);
	t->authority[n] = 0;
	if (connect_parse(t->authority, 80, t->host, sizeof(t->host), &t->port))
		return -1;
	snprintf(t->path, sizeof(t->path), "%s%.*s", a[n] == '/' ? "" : "/", (int)strcspn(a + n, "#"), a + n);
	return 0;
}

/* FILE whole, at most MAX_BODY bytes; exits 2 when it cannot be. */
static char *read_body(const char *path, size_t *len)
{
	char *buf = malloc(MAX_BODY + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r = 0;

	if (!buf || fd < 0) {
		fprintf(stderr, "http-put: %s: %s\n", path, buf ? strerror(errno) : "out of memory");
		exit(2);
	}
	*len = 0;
	while (*len <= MAX_BODY && (r = read(fd, buf + *len, MAX_BODY + 1 - *len)) > 0)
		*len += (size_t)r;
	close(fd);
	if (r < 0) {
		fprintf(stderr, "http-put: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	if (*len > MAX_BODY) {
		fprintf(stderr, "http-put: %s: larger than %d MiB; send a smaller file\n", path, MAX_BODY >> 20);
		exit(2);
	}
	return buf;
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* Waits for EVENTS on FD until DEADLINE; 0 when ready, -1 with errno. */
static int wait_for(int fd, short events, long long deadline)
{
	struct pollfd p = {.fd = fd, .events = events};
	long long left = deadline - now_ms();
	int r;

	if (left <= 0) {
		errno = ETIMEDOUT;
		return -1;
	}
	r = poll(&p, 1, (int)left);
	if (r == 0)
		errno = ETIMEDOUT;
	return r > 0 ? 0 : -1;
}

static int send_all(int fd, const char *buf, size_t len, long long deadline)
{
	while (len) {
		ssize_t r;

		if (wait_for(fd, POLLOUT, deadline))
			return -1;
		r = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (r > 0) {
			buf += r;
			len -= (size_t)r;
		}
	}
	return 0;
}

/* Whether the status line at S is HTTP/x.y 2xx. */
static int success(const char *s)
{
	const char *code = strchr(s, ' ');

	return !strncmp(s, "HTTP/", 5) && code && code < s + 10 && code[1] == '2' && strspn(code + 1, "0123456789") == 3 &&
	       (code[4] == ' ' || code[4] == '\r' || code[4] == '\n');
}

/* Where the body of ANSWER starts, or NULL before the headers' end. */
static char *body_of(const char *answer)
{
	char *end = strstr(answer, "\r\n\r\n");

	return end ? end + 4 : NULL;
}

/* Whether the answer in BUF (LEN bytes) holds what is shown of it: the
 * status line of a 2xx; else the headers and the first line of the body, or
 * the whole body its Content-Length announces. */
static int answer_complete(const char *buf, size_t len)
{
	const char *body = body_of(buf), *length;

	if (memchr(buf, '\n', len) && success(buf))
		return 1;
	if (!body)
		return 0;
	length = strcasestr(buf, "\ncontent-length:");
	if (length && length < body && strtoul(length + 16, NULL, 10) <= len - (size_t)(body - buf))
		return 1;
	return memchr(body, '\n', len - (size_t)(body - buf)) != NULL;
}

/* Reads the answer into BUF (NUL-terminated) until it is complete, the server
 * closes or DEADLINE passes; returns its length, or -1 with nothing read. */
static ssize_t read_answer(int fd, char *buf, size_t size, long long deadline)
{
	size_t len = 0;

	buf[0] = 0;
	while (len + 1 < size && !answer_complete(buf, len)) {
		ssize_t r;

		if (wait_for(fd, POLLIN, deadline))
			break;
		r = recv(fd, buf + len, size - 1 - len, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0)
			break;
		/* A NUL in hostile bytes would end the string searches early. */
		for (ssize_t i = 0; i < r; i++)
			if (!buf[len + (size_t)i])
				buf[len + (size_t)i] = '?';
		len += (size_t)r;
		buf[len] = 0;
	}
	return len ? (ssize_t)len : -1;
}

/* The first line of the body of ANSWER, shown, in OUT; a chunked body's
 * first line is its chunk size, so the line after it. */
static void body_line(char *answer, char *out, size_t size)
{
	char *body = body_of(answer);
	char *chunked = strcasestr(answer, "\ntransfer-encoding: chunked");

	out[0] = 0;
	if (!body)
		return;
	if (chunked && chunked < body)
		body += strcspn(body, "\n") + (body[strcspn(body, "\n")] == '\n');
	text_shown(out, size, body, strcspn(body, "\r\n"), 0);
}

static void refused(const char *url, char *answer)
{
	char status[SHOWN_STATUS + 1], body[SHOWN_STATUS + 1];
	char *line = answer, *sp = strchr(answer, ' ');

	/* "HTTP/1.1 500 Oops" is shown as "HTTP 500 Oops". */
	if (!strncmp(answer, "HTTP/", 5) && sp && sp < answer + 10)
		line = sp + 1;
	text_shown(status, sizeof(status), line, strcspn(line, "\r\n"), 0);
	body_line(answer, body, sizeof(body));
	fprintf(stderr, "http-put: %s: HTTP %s%s%s\n", url, status, *body ? ": " : "", body);
}

static int put(const struct target *t, const char *url, const char *type, const char *body, size_t len,
	       int timeout)
{
	long long deadline = now_ms() + timeout * 1000LL;
	char head[MAX_URL * 2 + 512], answer[MAX_ANSWER], name[CONNECT_HOST_MAX + 16], why[128];
	int fd, n, sent, send_error;
	ssize_t got;

	connect_name(t->host, t->port, name, sizeof(name));
	fd = connect_to(t->host, t->port, SOCK_STREAM, timeout * 1000, why, sizeof(why));
	if (fd < 0) {
		fprintf(stderr, "http-put: %s: %s\n", name, why);
		return 1;
	}
	n = snprintf(head, sizeof(head),
		     "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\nUser-Agent: extrescue\r\n\r\n",
		     t->path, t->authority, type, len);
	sent = !send_all(fd, head, (size_t)n, deadline) && !send_all(fd, body, len, deadline);
	send_error = errno;
	/* Read even when sending failed: a server that refuses early may
	 * answer and close before it took all. */
	got = read_answer(fd, answer, sizeof(answer), deadline);
	close(fd);
	if (got > 0 && memchr(answer, '\n', (size_t)got)) {
		if (success(answer))
			return 0;
		refused(url, answer);
		return 1;
	}
	if (now_ms() >= deadline)
		snprintf(why, sizeof(why), "no answer within %d s", timeout);
	else
		snprintf(why, sizeof(why), "%s", sent ? "closed without an answer" : strerror(send_error));
	fprintf(stderr, "http-put: %s: %s\n", name, why);
	return 1;
}

static int parse_timeout(const char *s)
{
	size_t n = strspn(s, "0123456789");
	int value = atoi(s);

	if (!n || n > 3 || s[n] || value < 1 || value > MAX_TIMEOUT) {
		fprintf(stderr, "http-put: --timeout takes whole seconds from 1 to %d, not %.16s\n", MAX_TIMEOUT, s);
		exit(2);
	}
	return value;
}

int main(int argc, char **argv)
{
	const char *type = "text/plain; version=0.0.4";
	struct target t;
	int timeout = 10, i;
	size_t len;
	char *body;
	int status;

	for (i = 1; i + 1 < argc && !strncmp(argv[i], "--", 2); i += 2) {
		if (!strcmp(argv[i], "--timeout"))
			timeout = parse_timeout(argv[i + 1]);
		else if (!strcmp(argv[i], "--content-type"))
			type = argv[i + 1];
		else
			usage();
	}
	if (argc - i != 2)
		usage();
	if (strlen(type) > 128 || !text_printable(type) || !*type) {
		fprintf(stderr, "http-put: --content-type must be printable and at most 128 bytes\n");
		exit(2);
	}
	if (parse_url(argv[i], &t))
		bad_url(argv[i]);
	body = read_body(argv[i + 1], &len);
	status = put(&t, argv[i], type, body, len, timeout);
	free(body);
	return status;
}

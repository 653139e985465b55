/*
 * HOST[:PORT] from the command line, and a connection to it with a bounded
 * wait: connect() runs non-blocking and poll() holds the clock, since a
 * blocking connect to an address that drops packets waits minutes.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "connect.h"

/* Letters, digits and the few marks of host names and addresses: nothing
 * that could break the line or the header the name is written into. */
static int host_char(char c, int bracketed)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return 1;
	if (c == '.' || c == '-' || c == '_')
		return 1;
	return bracketed && (c == ':' || c == '%');
}

static int parse_port(const char *s, int *port)
{
	size_t n = strspn(s, "0123456789");
	int value = 0;

	if (!n || n > 5 || s[n])
		return -1;
	for (size_t i = 0; i < n; i++)
		value = value * 10 + (s[i] - '0');
	if (value < 1 || value > 65535)
		return -1;
	*port = value;
	return 0;
}

int connect_parse(const char *spec, int default_port, char *host, size_t hsize, int *port)
{
	int bracketed = spec[0] == '[';
	const char *start = spec + bracketed, *end, *rest;
	size_t n;

	if (bracketed) {
		end = strchr(start, ']');
		if (!end)
			return -1;
		rest = end + 1;
	} else {
		end = start + strcspn(start, ":");
		rest = end;
	}
	n = (size_t)(end - start);
	if (!n || n > CONNECT_HOST_MAX || n >= hsize)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!host_char(start[i], bracketed))
			return -1;
	/* Brackets are for IPv6 alone; an IPv6 address without them is
	 * ambiguous (is ::1:514 a port?), so it is refused above by ':'. */
	if (bracketed && !memchr(start, ':', n))
		return -1;
	if (*rest && (*rest != ':' || parse_port(rest + 1, port)))
		return -1;
	if (!*rest)
		*port = default_port;
	memcpy(host, start, n);
	host[n] = 0;
	return 0;
}

void connect_name(const char *host, int port, char *out, size_t size)
{
	snprintf(out, size, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* Waits until the non-blocking connect on FD is done or DEADLINE passes;
 * 0 when connected, else an errno value (ETIMEDOUT for the deadline). */
static int connect_wait(int fd, long long deadline)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	socklen_t len = sizeof(int);
	long long left = deadline - now_ms();
	int err = 0, r;

	if (left <= 0)
		return ETIMEDOUT;
	r = poll(&p, 1, (int)left);
	if (r < 0)
		return errno;
	if (r == 0)
		return ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return errno;
	return err;
}

/* A socket connected to AI before DEADLINE, or -1 with *ERR set. */
static int connect_one(const struct addrinfo *ai, long long deadline, int *err)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);

	if (fd < 0) {
		*err = errno;
		return -1;
	}
	*err = 0;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0)
		*err = errno == EINPROGRESS ? connect_wait(fd, deadline) : errno;
	if (!*err && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		*err = errno;
	if (*err) {
		close(fd);
		return -1;
	}
	return fd;
}

int connect_to(const char *host, int port, int socktype, int timeout_ms, char *why, size_t wsize)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = socktype, .ai_flags = AI_NUMERICSERV};
	long long deadline = now_ms() + timeout_ms;
	struct addrinfo *list, *ai;
	char service[8];
	int fd = -1, err = ETIMEDOUT, r;

	snprintf(service, sizeof(service), "%d", port);
	r = getaddrinfo(host, service, &hints, &list);
	if (r) {
		snprintf(why, wsize, "%s", r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
		return -1;
	}
	for (ai = list; ai && fd < 0 && err != EINTR; ai = ai->ai_next) {
		if (now_ms() >= deadline) {
			err = ETIMEDOUT;
			break;
		}
		fd = connect_one(ai, deadline, &err);
	}
	freeaddrinfo(list);
	if (fd >= 0)
		return fd;
	if (err == ETIMEDOUT && timeout_ms % 1000)
		snprintf(why, wsize, "timed out after %d ms", timeout_ms);
	else if (err == ETIMEDOUT)
		snprintf(why, wsize, "timed out after %d s", timeout_ms / 1000);
	else
		snprintf(why, wsize, "%s", strerror(err));
	return -1;
}

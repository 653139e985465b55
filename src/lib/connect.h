/* A server named on the command line (HOST[:PORT]) and a socket to it
 * that never waits longer than asked: what the fleet tools (http-put,
 * syslog-forward) need to reach a server without blocking the rescue. */
#ifndef EXTRESCUE_CONNECT_H
#define EXTRESCUE_CONNECT_H

#include <stddef.h>

#define CONNECT_HOST_MAX 255

/*
 * Splits SPEC, one of HOST, HOST:PORT, [IPV6] or [IPV6]:PORT, into HOST
 * (HSIZE bytes; a name or address of at most CONNECT_HOST_MAX harmless
 * characters) and *PORT (1..65535, DEFAULT_PORT when SPEC names none).
 * Returns 0, or -1 when SPEC is none of these.
 */
int connect_parse(const char *spec, int default_port, char *host, size_t hsize, int *port);

/*
 * A socket of SOCKTYPE (SOCK_STREAM or SOCK_DGRAM) connected to HOST:PORT,
 * trying each of its addresses within TIMEOUT_MS in all (the name lookup
 * itself is bounded by the resolver's own timeouts). Returns the descriptor,
 * blocking and close-on-exec, or -1 with a short reason in WHY. A signal
 * ends the wait early ("Interrupted system call"), so a caller that stops
 * on a signal is not held.
 */
int connect_to(const char *host, int port, int socktype, int timeout_ms, char *why, size_t wsize);

/* HOST:PORT as a person writes it, [HOST]:PORT for an IPv6 address, in OUT. */
void connect_name(const char *host, int port, char *out, size_t size);

#endif

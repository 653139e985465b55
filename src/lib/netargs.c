/*
 * The network parameters of the kernel command line, in the kernel's own ip=
 * syntax and dracut's vlan=/ifname=, checked field by field. Nothing here
 * configures anything: the boot scripts read the normalised lines.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netargs.h"

#define MAX_FIELDS 16

static const char *const known[] = {"ip", "nameserver", "vlan", "ifname", "BOOTIF"};

int netarg_known(const char *param)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(param, known[i]))
			return 1;
	return 0;
}

static int is_ipv4(const char *s)
{
	struct in_addr a;

	return inet_pton(AF_INET, s, &a) == 1;
}

static int is_ip(const char *s)
{
	struct in6_addr a;

	return is_ipv4(s) || inet_pton(AF_INET6, s, &a) == 1;
}

/* Interface names as the kernel takes them, restricted to harmless characters. */
static int is_ifname(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 15 || *s == '-' || *s == '.')
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return 0;
	return 1;
}

static int hex_pair(const char *s)
{
	return strlen(s) == 2 && isxdigit((unsigned char)s[0]) && isxdigit((unsigned char)s[1]);
}

/* A MAC as aa-bb-cc-dd-ee-ff (one field) into OUT as aa:bb:cc:dd:ee:ff. */
static int dashed_mac(const char *s, char *out)
{
	if (strlen(s) != 17)
		return 0;
	for (int i = 0; i < 17; i++) {
		if (i % 3 == 2 ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
			return 0;
		out[i] = i % 3 == 2 ? ':' : (char)tolower((unsigned char)s[i]);
	}
	out[17] = 0;
	return 1;
}

/* Splits VALUE at ':' into F (at most MAX_FIELDS); six hex pairs in a row
 * starting at field AT are one MAC address. Returns the count, -1 if too many. */
static int split(char *value, char **f, char *mac, int at)
{
	char *tok[MAX_FIELDS * 2];
	int n = 0, m = 0;

	for (char *p = value;; p++) {
		char *c = strchr(p, ':');

		if (n == MAX_FIELDS * 2)
			return -1;
		tok[n++] = p;
		if (!c)
			break;
		*c = 0;
		p = c;
	}
	for (int i = 0; i < n; i++) {
		if (m == MAX_FIELDS)
			return -1;
		if (m == at && i + 5 < n && hex_pair(tok[i]) && hex_pair(tok[i + 1]) && hex_pair(tok[i + 2]) &&
		    hex_pair(tok[i + 3]) && hex_pair(tok[i + 4]) && hex_pair(tok[i + 5])) {
			snprintf(mac, 18, "%s:%s:%s:%s:%s:%s", tok[i], tok[i + 1], tok[i + 2], tok[i + 3],
				 tok[i + 4], tok[i + 5]);
			for (char *x = mac; *x; x++)
				*x = (char)tolower((unsigned char)*x);
			f[m++] = mac;
			i += 5;
			continue;
		}
		f[m++] = tok[i];
	}
	return m;
}

/* The device field: "-" when empty, a MAC, or an interface name. */
static const char *device(const char *s, char *out)
{
	if (!*s) {
		strcpy(out, "-");
		return NULL;
	}
	if (strlen(s) == 17 && s[2] == ':') {
		strcpy(out, s);
		return NULL;
	}
	if (dashed_mac(s, out))
		return NULL;
	if (!is_ifname(s))
		return "names a device that is neither an interface name nor a MAC address";
	strcpy(out, s);
	return NULL;
}

/* A netmask, dotted or as a prefix length, as a prefix length. */
static int prefix_len(const char *s)
{
	struct in_addr a;
	unsigned long m;
	char *end;
	int n = 0;

	if (*s && strlen(s) <= 2 && isdigit((unsigned char)*s)) {
		m = strtoul(s, &end, 10);
		return *end || m > 32 ? -1 : (int)m;
	}
	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	m = ntohl(a.s_addr);
	while (m & 0x80000000UL) {
		n++;
		m = (m << 1) & 0xffffffffUL;
	}
	return m ? -1 : n;
}

static int is_hostname(const char *s)
{
	size_t n = strlen(s);

	if (n > 63 || *s == '-')
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '.')
			return 0;
	return 1;
}

static const char *autoconf(const char *s, const char **method)
{
	if (!strcmp(s, "dhcp") || !strcmp(s, "on") || !strcmp(s, "any"))
		*method = "dhcp";
	else if (!strcmp(s, "dhcp6"))
		*method = "dhcp6";
	else if (!strcmp(s, "none") || !strcmp(s, "off") || !strcmp(s, "static") || !*s)
		*method = "static";
	else
		return "asks for an address method other than dhcp, dhcp6 or none";
	return NULL;
}

static const char *parse_ip(char *v, char *out, size_t size)
{
	char *f[MAX_FIELDS], mac[18], dev[18], whole[NETARGS_LINE];
	const char *method, *why;
	int n, prefix;

	snprintf(whole, sizeof(whole), "%s", v);

	if (!strcmp(v, "off") || !strcmp(v, "none")) {
		*out = 0;
		return NULL;
	}
	if (!strcmp(v, "dhcp") || !strcmp(v, "on") || !strcmp(v, "any") || !strcmp(v, "dhcp6")) {
		snprintf(out, size, "%s -", strcmp(v, "dhcp6") ? "dhcp" : "dhcp6");
		return NULL;
	}
	/* dracut's short form DEVICE:METHOD, DEVICE possibly a MAC. */
	n = split(v, f, mac, 0);
	if (n == 2) {
		if ((why = device(f[0], dev)) || (why = autoconf(f[1], &method)))
			return why;
		if (!strcmp(method, "static"))
			return "gives a device but no address";
		snprintf(out, size, "%s %s", method, dev);
		return NULL;
	}
	/* The kernel's CLIENT:SERVER:GW:NETMASK:HOSTNAME:DEVICE:AUTOCONF[:DNS0[:DNS1[:NTP]]];
	 * split again with the MAC looked for in the device's place. */
	strcpy(v, whole);
	n = split(v, f, mac, 5);
	if (n < 0 || n < 6 || n > 10)
		return "is not CLIENT:SERVER:GW:NETMASK:HOSTNAME:DEVICE:METHOD[:DNS0[:DNS1]]";
	if ((why = device(f[5], dev)) || (why = autoconf(n > 6 ? f[6] : "", &method)))
		return why;
	for (int i = 7; i < n; i++)
		if (*f[i] && !is_ip(f[i]))
			return "has a DNS or NTP server that is not an IP address";
	if (*f[1] && !is_ipv4(f[1]))
		return "has a server that is not an IPv4 address";
	if (!is_hostname(f[4]))
		return "has a host name with characters other than letters, digits, '-' and '.'";
	if (strcmp(method, "static")) {
		snprintf(out, size, "%s %s", method, dev);
		return NULL;
	}
	if (!is_ipv4(f[0]))
		return "has no IPv4 client address (the static form needs one)";
	if (*f[2] && !is_ipv4(f[2]))
		return "has a gateway that is not an IPv4 address";
	if ((prefix = prefix_len(f[3])) < 0)
		return "has no valid netmask (a.b.c.d or a prefix length)";
	snprintf(out, size, "static %s %s/%d %s %s %s %s", dev, f[0], prefix, *f[2] ? f[2] : "-",
		 *f[4] ? f[4] : "-", n > 7 && *f[7] ? f[7] : "-", n > 8 && *f[8] ? f[8] : "-");
	return NULL;
}

/* vlan=NAME:PARENT; the VLAN id is the number NAME ends with (vlan0005, eth0.5). */
static const char *parse_vlan(char *v, char *out, size_t size)
{
	char *colon = strchr(v, ':'), *digits;
	long id;

	if (!colon)
		return "is not NAME:PARENT";
	*colon = 0;
	if (!is_ifname(v) || !is_ifname(colon + 1))
		return "has a name that is not an interface name";
	digits = strrchr(v, '.');
	digits = digits ? digits + 1 : (!strncmp(v, "vlan", 4) ? v + 4 : NULL);
	if (!digits || !*digits || strspn(digits, "0123456789") != strlen(digits))
		return "has a name that carries no VLAN id (vlanN or PARENT.N)";
	id = strtol(digits, NULL, 10);
	if (id < 1 || id > 4094)
		return "has a VLAN id outside 1-4094";
	snprintf(out, size, "%s %s %ld", v, colon + 1, id);
	return NULL;
}

/* ifname=NAME:MAC */
static const char *parse_ifname(char *v, char *out, size_t size)
{
	char *f[MAX_FIELDS], mac[18];
	int n = split(v, f, mac, 1);

	if (n != 2 || f[1] != mac)
		return "is not NAME:MAC (aa:bb:cc:dd:ee:ff)";
	if (!is_ifname(f[0]))
		return "has a name that is not an interface name";
	snprintf(out, size, "%s %s", f[0], mac);
	return NULL;
}

const char *netarg_parse(const char *param, const char *value, char *out, size_t size)
{
	char v[NETARGS_LINE];

	*out = 0;
	if (strlen(value) >= sizeof(v))
		return "is longer than 255 characters";
	strcpy(v, value);
	if (!strcmp(param, "ip"))
		return parse_ip(v, out, size);
	if (!strcmp(param, "nameserver")) {
		if (!is_ip(v))
			return "is not an IP address";
		snprintf(out, size, "%s", v);
		return NULL;
	}
	if (!strcmp(param, "vlan"))
		return parse_vlan(v, out, size);
	if (!strcmp(param, "ifname"))
		return parse_ifname(v, out, size);
	/* pxelinux's IPAPPEND 2 and iPXE give the booting NIC as 01-MAC (01: Ethernet). */
	if (!strcmp(param, "BOOTIF")) {
		if (!dashed_mac(strncmp(v, "01-", 3) ? v : v + 3, out))
			return "is not 01-aa-bb-cc-dd-ee-ff (an Ethernet MAC address)";
		return NULL;
	}
	return "is not a network parameter";
}

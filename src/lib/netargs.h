#ifndef EXTRESCUE_NETARGS_H
#define EXTRESCUE_NETARGS_H
#include <stddef.h>

#define NETARGS_LINE 256

/* 1 when PARAM is one of the network parameters: ip, nameserver, vlan, ifname, BOOTIF. */
int netarg_known(const char *param);

/*
 * Checks the network parameter PARAM=VALUE and writes it to OUT as one line
 * of words a shell script reads with `read` (no quoting needed: every word is
 * checked), "-" for an empty field:
 *   ip=          dhcp DEV | dhcp6 DEV | static DEV ADDR/PREFIX GATEWAY HOSTNAME DNS0 DNS1
 *                (DEV: an interface name, a MAC address aa:bb:.., or - for any);
 *                ip=off or none leaves OUT empty
 *   nameserver=  ADDRESS
 *   vlan=        NAME PARENT ID
 *   ifname=      NAME MAC
 *   BOOTIF=      MAC    (the NIC the firmware booted from; 01-aa-bb-.. or aa-bb-..)
 * Returns NULL when the value is taken, otherwise why not.
 */
const char *netarg_parse(const char *param, const char *value, char *out, size_t size);

#endif

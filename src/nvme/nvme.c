/*
 * nvme: what an NVMe drive says about itself, for a rescue: the namespaces
 * present (list), the controller's identity (id-ctrl), its health (smart-log)
 * and its error log (error-log). extrescue's own implementation of these
 * read-only nvme-cli commands, with nvme-cli's field names (the archive the
 * build may use does not serve libnvme's sources, which nvme-cli needs).
 * Only Identify and Get Log Page are sent: nothing here changes a drive.
 *
 * The drive's answers are data: strings are cut at their field's width and
 * printed only where printable.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../lib/le.h"
#include "../lib/text.h"

#define OP_GET_LOG_PAGE 0x02
#define OP_IDENTIFY 0x06
#define LOG_ERROR 0x01
#define LOG_SMART 0x02
#define NSID_ALL 0xffffffffu

static void die(const char *what, const char *why)
{
	fprintf(stderr, "nvme: %s: %s\n", what, why);
	exit(1);
}

/* A fixed-width ASCII field, trailing blanks dropped, non-printables as '?'. */
static const char *field(const uint8_t *p, size_t width)
{
	static char out[4][128];
	static int slot;
	char *s = out[slot++ % 4];

	text_shown(s, sizeof(out[0]), p, width, TEXT_PADDED);
	return s;
}

static int open_dev(const char *dev)
{
	int fd = open(dev, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die(dev, strerror(errno));
	return fd;
}

static void admin(int fd, const char *dev, uint8_t opcode, uint32_t nsid, uint32_t cdw10, void *buf, uint32_t len)
{
	struct nvme_admin_cmd cmd;
	int r;

	memset(&cmd, 0, sizeof(cmd));
	memset(buf, 0, len);
	cmd.opcode = opcode;
	cmd.nsid = nsid;
	cmd.addr = (uint64_t) (uintptr_t) buf;
	cmd.data_len = len;
	cmd.cdw10 = cdw10;
	if ((r = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd)) < 0)
		die(dev, errno == ENOTTY ? "not an NVMe device" : strerror(errno));
	if (r > 0) {
		char why[80];

		snprintf(why, sizeof(why), "the controller answered status 0x%x", (unsigned) r);
		die(dev, why);
	}
}

/* Get Log Page: LEN bytes (a multiple of 4) of log LID. */
static void get_log(int fd, const char *dev, uint8_t lid, void *buf, uint32_t len)
{
	admin(fd, dev, OP_GET_LOG_PAGE, NSID_ALL, (len / 4 - 1) << 16 | lid, buf, len);
}

static const char *base(const char *dev)
{
	const char *slash = strrchr(dev, '/');

	return slash ? slash + 1 : dev;
}

static void id_ctrl(const char *dev)
{
	uint8_t id[4096];
	int fd = open_dev(dev);

	admin(fd, dev, OP_IDENTIFY, 0, 1, id, sizeof(id));
	close(fd);
	printf("NVME Identify Controller:\n");
	printf("vid       : %#x\n", (unsigned) le_get(id, 2));
	printf("ssvid     : %#x\n", (unsigned) le_get(id + 2, 2));
	printf("sn        : %s\n", field(id + 4, 20));
	printf("mn        : %s\n", field(id + 24, 40));
	printf("fr        : %s\n", field(id + 64, 8));
	printf("rab       : %u\n", id[72]);
	printf("ieee      : %02x%02x%02x\n", id[75], id[74], id[73]);
	printf("cmic      : %u\n", id[76]);
	printf("mdts      : %u\n", id[77]);
	printf("cntlid    : %#x\n", (unsigned) le_get(id + 78, 2));
	printf("ver       : %#x\n", (unsigned) le_get(id + 80, 4));
	printf("oacs      : %#x\n", (unsigned) le_get(id + 256, 2));
	printf("acl       : %u\n", id[258]);
	printf("aerl      : %u\n", id[259]);
	printf("frmw      : %#x\n", id[260]);
	printf("lpa       : %#x\n", id[261]);
	printf("elpe      : %u\n", id[262]);
	printf("npss      : %u\n", id[263]);
	printf("wctemp    : %u\n", (unsigned) le_get(id + 266, 2));
	printf("cctemp    : %u\n", (unsigned) le_get(id + 268, 2));
	printf("tnvmcap   : %llu\n", (unsigned long long) le_get(id + 280, 8));
	printf("unvmcap   : %llu\n", (unsigned long long) le_get(id + 296, 8));
	printf("sqes      : %#x\n", id[512]);
	printf("cqes      : %#x\n", id[513]);
	printf("nn        : %u\n", (unsigned) le_get(id + 516, 4));
	printf("oncs      : %#x\n", (unsigned) le_get(id + 520, 2));
	printf("vwc       : %#x\n", id[525]);
	printf("subnqn    : %s\n", field(id + 768, 256));
}

/* A 128-bit little-endian counter, printed exactly while it fits 64 bits. */
static void counter(const char *name, const uint8_t *p)
{
	if (le_get(p + 8, 8))
		printf("%-38s: 0x%016llx%016llx\n", name, (unsigned long long) le_get(p + 8, 8),
		       (unsigned long long) le_get(p, 8));
	else
		printf("%-38s: %llu\n", name, (unsigned long long) le_get(p, 8));
}

static void smart_log(const char *dev)
{
	uint8_t s[512];
	int fd = open_dev(dev);
	unsigned kelvin;

	get_log(fd, dev, LOG_SMART, s, sizeof(s));
	close(fd);
	kelvin = (unsigned) le_get(s + 1, 2);
	printf("Smart Log for NVME device:%s namespace-id:%x\n", base(dev), NSID_ALL);
	printf("%-38s: %#x\n", "critical_warning", s[0]);
	printf("%-38s: %u °C (%u K)\n", "temperature", kelvin ? kelvin - 273 : 0, kelvin);
	printf("%-38s: %u%%\n", "available_spare", s[3]);
	printf("%-38s: %u%%\n", "available_spare_threshold", s[4]);
	printf("%-38s: %u%%\n", "percentage_used", s[5]);
	counter("data_units_read", s + 32);
	counter("data_units_written", s + 48);
	counter("host_read_commands", s + 64);
	counter("host_write_commands", s + 80);
	counter("controller_busy_time", s + 96);
	counter("power_cycles", s + 112);
	counter("power_on_hours", s + 128);
	counter("unsafe_shutdowns", s + 144);
	counter("media_errors", s + 160);
	counter("num_err_log_entries", s + 176);
	printf("%-38s: %u\n", "Warning Temperature Time", (unsigned) le_get(s + 192, 4));
	printf("%-38s: %u\n", "Critical Composite Temperature Time", (unsigned) le_get(s + 196, 4));
}

static void error_log(const char *dev, long want)
{
	uint8_t id[4096], *log;
	int fd = open_dev(dev), n, shown = 0;

	admin(fd, dev, OP_IDENTIFY, 0, 1, id, sizeof(id));
	n = id[262] + 1;	/* elpe: entries the controller keeps, minus one */
	if (want > 0 && want < n)
		n = (int) want;
	if (!(log = calloc((size_t) n, 64)))
		die(dev, "out of memory");
	get_log(fd, dev, LOG_ERROR, log, (uint32_t) n * 64);
	close(fd);
	printf("Error Log Entries for device:%s entries:%d\n", base(dev), n);
	printf(".................\n");
	for (int i = 0; i < n; i++) {
		const uint8_t *e = log + 64 * i;

		if (!le_get(e, 8))
			continue;	/* an empty slot */
		shown++;
		printf(" Entry[%2d]\n", i);
		printf(".................\n");
		printf("error_count     : %llu\n", (unsigned long long) le_get(e, 8));
		printf("sqid            : %u\n", (unsigned) le_get(e + 8, 2));
		printf("cmdid           : %#x\n", (unsigned) le_get(e + 10, 2));
		printf("status_field    : %#x\n", (unsigned) le_get(e + 12, 2) >> 1);
		printf("parm_err_loc    : %#x\n", (unsigned) le_get(e + 14, 2));
		printf("lba             : %#llx\n", (unsigned long long) le_get(e + 16, 8));
		printf("nsid            : %#x\n", (unsigned) le_get(e + 24, 4));
		printf("vs              : %u\n", e[28]);
		printf(".................\n");
	}
	if (!shown)
		printf("no errors logged\n");
	free(log);
}

/* Reads /sys/class/.../ATTR of an NVMe device into OUT, blanks trimmed. */
static void sysfs(const char *dir, const char *attr, char *out, size_t size)
{
	char path[512];
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	if (!(f = fopen(path, "r")))
		return;
	if (!fgets(out, (int) size, f))
		out[0] = 0;
	fclose(f);
	for (size_t n = strlen(out); n && isspace((unsigned char) out[n - 1]); n--)
		out[n - 1] = 0;
	text_shown(out, size, out, size, 0);
}

static int cmp_names(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Every NVMe namespace block device, from sysfs: no command is sent. */
static void list(void)
{
	struct dirent **ns;
	int n = scandir("/sys/block", &ns, NULL, cmp_names);

	printf("%-16s %-20s %-40s %-9s %-18s %-8s\n", "Node", "SN", "Model", "Namespace", "Size", "Format");
	printf("%-16s %-20s %-40s %-9s %-18s %-8s\n", "----------------", "--------------------",
	       "----------------------------------------", "---------", "------------------", "--------");
	for (int i = 0; i < n; i++) {
		char dir[300], ctrl[300], sn[64], mn[80], nsid[16], size[32], lbs[16], node[64];
		double gb;

		if (strncmp(ns[i]->d_name, "nvme", 4) || strchr(ns[i]->d_name, 'c')) {
			free(ns[i]);
			continue;	/* not NVMe, or a multipath controller path (nvmeXcYnZ) */
		}
		snprintf(dir, sizeof(dir), "/sys/block/%.100s", ns[i]->d_name);
		snprintf(ctrl, sizeof(ctrl), "/sys/block/%.100s/device", ns[i]->d_name);
		sysfs(ctrl, "serial", sn, sizeof(sn));
		sysfs(ctrl, "model", mn, sizeof(mn));
		sysfs(dir, "nsid", nsid, sizeof(nsid));
		sysfs(dir, "size", size, sizeof(size));
		sysfs(dir, "queue/logical_block_size", lbs, sizeof(lbs));
		gb = (double) strtoull(size, NULL, 10) * 512 / 1e9;
		snprintf(node, sizeof(node), "/dev/%.50s", ns[i]->d_name);
		printf("%-16s %-20s %-40s %-9s %15.2f GB %s B\n", node, sn, mn, nsid[0] ? nsid : "?", gb, lbs);
		free(ns[i]);
	}
	free(ns);
}

static void usage(FILE *to)
{
	fputs("usage: nvme list                    the NVMe namespaces: node, serial, model, size, block size\n"
	      "       nvme id-ctrl DEVICE          the controller's Identify data\n"
	      "       nvme smart-log DEVICE        health: critical warnings, temperature, spare, wear, errors\n"
	      "       nvme error-log DEVICE [-e N] the controller's error log (N entries)\n"
	      "DEVICE is /dev/nvmeX or /dev/nvmeXnY. extrescue's own implementation of these\n"
	      "read-only nvme-cli commands; nothing is written to the drive.\n", to);
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "list") && argc == 2) {
		list();
	} else if (argc == 3 && !strcmp(argv[1], "id-ctrl")) {
		id_ctrl(argv[2]);
	} else if (argc == 3 && !strcmp(argv[1], "smart-log")) {
		smart_log(argv[2]);
	} else if ((argc == 3 || (argc == 5 && !strcmp(argv[3], "-e"))) && !strcmp(argv[1], "error-log")) {
		char *end = NULL;
		long want = argc == 5 ? strtol(argv[4], &end, 10) : 0;

		if (argc == 5 && (*end || want < 1 || want > 256))
			die("-e", "takes a number of entries (1-256)");
		error_log(argv[2], want);
	} else {
		fprintf(stderr, "nvme: unknown command or arguments; see nvme help (the commands that change a drive, format included, are not in this image)\n");
		return 2;
	}
	return 0;
}

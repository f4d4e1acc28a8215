// SPDX-License-Identifier: GPL-2.0
/*
 * lmqdev: loopmq device operations (see lmqdev.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/fs.h>
#include <linux/loop.h>

#include "lmqdev.h"

#define NAME(id, name, help)	name,

const char *const lmq_path_names[LOOPMQ_PATH_NR] = { LOOPMQ_PATHS(NAME) };
const char *const lmq_fallback_names[LOOPMQ_FB_NR] = { LOOPMQ_FALLBACKS(NAME) };
static const char *const mode_names[LOOPMQ_MODE_NR] = { LOOPMQ_MODES(NAME) };
const char *const lmq_dio_names[LOOPMQ_DIO_NR] = { LOOPMQ_DIO_SETTINGS(NAME) };
const char *const lmq_dio_reason_names[LOOPMQ_DIO_WHY_NR] = {
	LOOPMQ_DIO_REASONS(NAME)
};

const char *lmq_fallback_name(unsigned int reason)
{
	static char buf[LOOPMQ_STATS_FALLBACKS][16];

	if (reason < LOOPMQ_FB_NR && lmq_fallback_names[reason])
		return lmq_fallback_names[reason];
	if (reason >= LOOPMQ_STATS_FALLBACKS)
		return "?";
	snprintf(buf[reason], sizeof(buf[reason]), "reason%u", reason);
	return buf[reason];
}

const char *lmq_mode_name(unsigned int mode)
{
	return mode < LOOPMQ_MODE_NR ? mode_names[mode] : NULL;
}

/* The index of @s in @names (@n of them), or -EINVAL. */
static int name_index(const char *const *names, int n, const char *s)
{
	int i;

	for (i = 0; i < n; i++)
		if (s && strcmp(s, names[i]) == 0)
			return i;
	return -EINVAL;
}

int lmq_mode_parse(const char *s)
{
	return name_index(mode_names, LOOPMQ_MODE_NR, s);
}

const char *lmq_dio_name(unsigned int setting)
{
	return setting < LOOPMQ_DIO_NR ? lmq_dio_names[setting] : NULL;
}

const char *lmq_dio_reason_name(unsigned int reason)
{
	return reason < LOOPMQ_DIO_WHY_NR ? lmq_dio_reason_names[reason] : NULL;
}

int lmq_dio_parse(const char *s)
{
	if (s && !strcmp(s, "1"))
		return LOOPMQ_DIO_ON;
	if (s && !strcmp(s, "0"))
		return LOOPMQ_DIO_OFF;
	return name_index(lmq_dio_names, LOOPMQ_DIO_NR, s);
}

int lmq_dio_state_parse(const char *text, struct lmq_dio *d)
{
	const char *line, *end;
	int seen = 0;

	memset(d, 0, sizeof(*d));
	d->setting = -1;
	d->chosen = -1;
	d->reason = -1;
	d->write_costly_permille = -1;
	for (line = text; line && *line; line = end ? end + 1 : NULL) {
		char buf[96], key[32], val[32];
		uint64_t *num = NULL;
		size_t len;

		/* one line at a time: a value never comes from the next */
		end = strchr(line, '\n');
		len = end ? (size_t)(end - line) : strlen(line);
		if (len >= sizeof(buf))
			continue;
		memcpy(buf, line, len);
		buf[len] = '\0';
		if (sscanf(buf, "%31s %31s", key, val) != 2)
			continue;
		if (!strcmp(key, "setting")) {
			d->setting = name_index(lmq_dio_names, LOOPMQ_DIO_NR,
						val);
			seen = 1;
		} else if (!strcmp(key, "chosen")) {
			d->chosen = name_index(lmq_dio_names, LOOPMQ_DIO_NR,
					       val);
			if (d->chosen == LOOPMQ_DIO_AUTO)
				d->chosen = -EINVAL;
		} else if (!strcmp(key, "reason")) {
			d->reason = name_index(lmq_dio_reason_names,
					       LOOPMQ_DIO_WHY_NR, val);
		} else if (!strcmp(key, "holes_permille")) {
			num = &d->holes_permille;
		} else if (!strcmp(key, "unwritten_permille")) {
			num = &d->unwritten_permille;
		} else if (!strcmp(key, "shared_permille")) {
			num = &d->shared_permille;
		} else if (!strcmp(key, "costly_permille")) {
			num = &d->costly_permille;
		} else if (!strcmp(key, "block_size")) {
			num = &d->block_size;
		} else if (!strcmp(key, "switches")) {
			num = &d->switches;
		} else if (!strcmp(key, "write_costly_permille")) {
			if (sscanf(val, "%" SCNd64, &d->write_costly_permille) != 1 ||
			    d->write_costly_permille < -1)
				d->write_costly_permille = -1;
		}
		if (num && sscanf(val, "%" SCNu64, num) != 1)
			*num = 0;
	}
	/* a name this tool does not know */
	d->setting = d->setting < 0 ? -1 : d->setting;
	d->chosen = d->chosen < 0 ? -1 : d->chosen;
	d->reason = d->reason < 0 ? -1 : d->reason;
	return seen ? 0 : -EINVAL;
}

/* ---- names ------------------------------------------------------------ */

/* loopmq loaded with replace_loop=1: its devices are loopN on major 7 */
static int lmq_replacing(void)
{
	static int replacing = -1;
	char c = 'N';
	FILE *f;

	if (replacing < 0) {
		f = fopen("/sys/module/loopmq/parameters/replace_loop", "r");
		if (f) {
			if (fread(&c, 1, 1, f) != 1)
				c = 'N';
			fclose(f);
		}
		replacing = c == 'Y';
	}
	return replacing;
}

const char *lmq_prefix(void)
{
	/* TEST ONLY: LOOPMQCTL_PREFIX=loop drives the stock loop driver. */
	const char *p = getenv("LOOPMQCTL_PREFIX");

	if (p && *p && strlen(p) < 16 && !strchr(p, '/'))
		return p;
	return lmq_replacing() ? "loop" : LOOPMQ_DISK_PREFIX;
}

const char *lmq_control_path(void)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "/dev/%s-control", lmq_prefix());
	return buf;
}

void lmq_dev_path(int index, char *buf, size_t len)
{
	snprintf(buf, len, "/dev/%s%d", lmq_prefix(), index);
}

static void disk_name(int index, char *buf, size_t len)
{
	snprintf(buf, len, "%s%d", lmq_prefix(), index);
}

/* "N" -> N; anything else (empty, sign, junk, too big) -> -1 */
static int parse_index(const char *s)
{
	long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		v = v * 10 + (*s - '0');
		if (v > (1L << 20))
			return -1;
	}
	return (int)v;
}

/* "loopmqN" -> N, else -1 */
static int parse_disk_name(const char *name)
{
	size_t n = strlen(lmq_prefix());

	if (strncmp(name, lmq_prefix(), n) != 0)
		return -1;
	return parse_index(name + n);
}

int lmq_parse_device(const char *arg, int *index)
{
	char sys[128], link[PATH_MAX];
	struct stat st;
	const char *base;
	ssize_t n;
	int idx;

	if (!arg || !*arg)
		return -ENODEV;
	idx = parse_index(arg);
	if (idx < 0)
		idx = parse_disk_name(arg);
	if (idx < 0 && strncmp(arg, "/dev/", 5) == 0)
		idx = parse_disk_name(arg + 5);
	if (idx >= 0) {
		*index = idx;
		return 0;
	}
	if (!strchr(arg, '/'))
		return -ENODEV;
	/* some other path: accept it when it is a node of one of ours */
	if (stat(arg, &st) != 0)
		return -errno;
	if (!S_ISBLK(st.st_mode))
		return -ENODEV;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u",
		 major(st.st_rdev), minor(st.st_rdev));
	n = readlink(sys, link, sizeof(link) - 1);
	if (n < 0)
		return -ENODEV;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	idx = parse_disk_name(base);
	if (idx < 0)
		return -ENODEV;
	*index = idx;
	return 0;
}

/* ---- sysfs ------------------------------------------------------------ */

/* Read /sys/block/<disk>/<rel> into buf without the trailing newline. */
static int sysfs_read(const char *disk, const char *rel, char *buf, size_t len)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/block/%s/%s", disk, rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return 0;
}

static int sysfs_exists(const char *disk, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/block/%s/%s", disk, rel);
	return access(path, F_OK) == 0;
}

static int sysfs_u64(const char *disk, const char *rel, uint64_t *v)
{
	char buf[64], *end;
	int r = sysfs_read(disk, rel, buf, sizeof(buf));

	if (r)
		return r;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	return 0;
}

static int sysfs_bool(const char *disk, const char *rel, int *v)
{
	uint64_t x;
	int r = sysfs_u64(disk, rel, &x);

	if (!r)
		*v = x != 0;
	return r;
}

/* ---- control device --------------------------------------------------- */

int lmq_control_open(void)
{
	int fd = open(lmq_control_path(), O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int ctl_ioctl(unsigned long cmd, long arg)
{
	int fd = lmq_control_open(), r;

	if (fd < 0)
		return fd;
	r = ioctl(fd, cmd, arg);
	if (r < 0)
		r = -errno;
	close(fd);
	return r;
}

int lmq_add(int index)
{
	return ctl_ioctl(LOOP_CTL_ADD, index);
}

int lmq_remove(int index)
{
	return ctl_ioctl(LOOP_CTL_REMOVE, index);
}

int lmq_find_free(void)
{
	int r = ctl_ioctl(LOOP_CTL_GET_FREE, 0);

	/* a driver that does not add on demand: add one ourselves */
	if (r == -ENODEV || r == -ENOSPC)
		r = lmq_add(-1);
	return r;
}

/* ---- device ----------------------------------------------------------- */

static int dev_open(int index, int flags)
{
	char path[LMQ_NAME_MAX];
	int fd;

	lmq_dev_path(index, path, sizeof(path));
	fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* One ioctl on device @index; @arg is the pointer or the value it takes. */
static int dev_ioctl(int index, unsigned long cmd, unsigned long arg)
{
	int fd = dev_open(index, O_RDONLY), r;

	if (fd < 0)
		return fd;
	r = ioctl(fd, cmd, arg);
	if (r < 0)
		r = -errno;
	close(fd);
	return r;
}

int lmq_exists(int index)
{
	char path[LMQ_NAME_MAX];
	struct stat st;

	lmq_dev_path(index, path, sizeof(path));
	return stat(path, &st) == 0 && S_ISBLK(st.st_mode);
}

int lmq_is_bound(int index)
{
	struct loop_info64 li;
	int r;

	memset(&li, 0, sizeof(li));
	r = dev_ioctl(index, LOOP_GET_STATUS64, (unsigned long)&li);
	if (r == -ENXIO)
		return 0;
	return r < 0 ? r : 1;
}

/*
 * The mode and the statistics are read through the device node first and
 * from sysfs when it cannot be opened: sysfs is world-readable where the
 * node is not (root:disk 0660), so any user can list them, as any user can
 * run losetup -l; and a device being detached refuses opens (ENXIO) while
 * its counters are still there to read.
 */
static int stats_from_sysfs(const char *disk, struct loopmq_stats *st)
{
	char buf[2048], *line, *save = NULL;
	int r = sysfs_read(disk, "loopmq/stats", buf, sizeof(buf)), i, seen = 0;

	if (r)
		return r;
	memset(st, 0, sizeof(*st));
	st->nr_paths = LOOPMQ_PATH_NR;
	st->nr_fallbacks = LOOPMQ_FB_NR;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[32];
		uint64_t v;

		if (sscanf(line, "%31s %" SCNu64, name, &v) != 2)
			continue;
		seen++;
		for (i = 0; i < LOOPMQ_PATH_NR; i++)
			if (!strcmp(name, lmq_path_names[i]))
				st->path[i] = v;
		for (i = 0; i < LOOPMQ_FB_NR; i++)
			if (!strncmp(name, "fb_", 3) &&
			    !strcmp(name + 3, lmq_fallback_name(i)))
				st->fallback[i] = v;
		if (!strcmp(name, "kthread_wakeups"))
			st->kthread_wakeups = v;
		else if (!strcmp(name, "peak_inflight"))
			st->peak_inflight = v;
		else if (!strcmp(name, "errors"))
			st->errors = v;
	}
	return seen ? 0 : -EINVAL;
}

int lmq_get_mode(int index, unsigned int *mode)
{
	struct loopmq_mode_info mi;
	char disk[LMQ_NAME_MAX], buf[32];
	int r;

	memset(&mi, 0, sizeof(mi));
	r = dev_ioctl(index, LOOPMQ_GET_MODE, (unsigned long)&mi);
	if (r == 0) {
		*mode = mi.mode;
		return 0;
	}
	disk_name(index, disk, sizeof(disk));
	if (sysfs_read(disk, "loopmq/mode", buf, sizeof(buf)) == 0 &&
	    lmq_mode_parse(buf) >= 0) {
		*mode = (unsigned int)lmq_mode_parse(buf);
		return 0;
	}
	return r;
}

int lmq_set_mode(int index, unsigned int mode)
{
	struct loopmq_mode_info mi;

	memset(&mi, 0, sizeof(mi));
	mi.mode = mode;
	return dev_ioctl(index, LOOPMQ_SET_MODE, (unsigned long)&mi);
}

int lmq_set_remap(int index, unsigned int remap)
{
	return dev_ioctl(index, LOOPMQ_SET_REMAP, remap);
}

int lmq_get_pinned(int index)
{
	char disk[LMQ_NAME_MAX], path[PATH_MAX], buf[16];
	ssize_t n;
	int fd;

	disk_name(index, disk, sizeof(disk));
	snprintf(path, sizeof(path), "/sys/block/%s/loopmq/pinned", disk);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = 0;
	return buf[0] == '1';
}

int lmq_get_stats(int index, struct loopmq_stats *st)
{
	char disk[LMQ_NAME_MAX];
	int r;

	memset(st, 0, sizeof(*st));
	r = dev_ioctl(index, LOOPMQ_GET_STATS, (unsigned long)st);
	if (r == 0)
		return 0;
	disk_name(index, disk, sizeof(disk));
	if (stats_from_sysfs(disk, st) == 0) {
		unsigned int m;

		if (lmq_get_mode(index, &m) == 0)
			st->mode = m;
		return 0;
	}
	return r;
}

int lmq_reset_stats(int index)
{
	return dev_ioctl(index, LOOPMQ_RESET_STATS, 0);
}

int lmq_set_capacity(int index)
{
	return dev_ioctl(index, LOOP_SET_CAPACITY, 0);
}

int lmq_set_direct_io(int index, int on)
{
	return dev_ioctl(index, LOOP_SET_DIRECT_IO, on ? 1 : 0);
}

int lmq_set_dio(int index, unsigned int setting)
{
	return dev_ioctl(index, LOOPMQ_SET_DIO, setting);
}

int lmq_get_dio(int index, struct lmq_dio *d)
{
	char disk[LMQ_NAME_MAX], buf[512];
	int r;

	disk_name(index, disk, sizeof(disk));
	r = sysfs_read(disk, "loopmq/dio_auto", buf, sizeof(buf));
	if (r)
		return r;
	/*
	 * An unbound device's file holds what its last binding left; the
	 * loop/ group is there only while it is bound.
	 */
	if (!sysfs_exists(disk, "loop/backing_file"))
		return -ENXIO;
	return lmq_dio_state_parse(buf, d);
}

int lmq_set_block_size(int index, unsigned int size)
{
	return dev_ioctl(index, LOOP_SET_BLOCK_SIZE, size);
}

int lmq_get_info(int index, struct lmq_info *in)
{
	struct loop_info64 li;
	char buf[64];
	uint64_t v;
	int fd, r, sz;

	memset(in, 0, sizeof(*in));
	in->index = index;
	lmq_dev_path(index, in->path, sizeof(in->path));
	disk_name(index, in->disk, sizeof(in->disk));

	fd = dev_open(index, O_RDONLY);
	if (fd < 0)
		return fd;
	if (sysfs_read(in->disk, "dev", buf, sizeof(buf)) == 0)
		sscanf(buf, "%u:%u", &in->maj, &in->min);
	if (ioctl(fd, BLKSSZGET, &sz) == 0 && sz > 0)
		in->log_sec = (unsigned int)sz;
	memset(&li, 0, sizeof(li));
	r = ioctl(fd, LOOP_GET_STATUS64, &li);
	if (r < 0 && errno != ENXIO) {
		r = -errno;
		close(fd);
		return r;
	}
	in->bound = r == 0;
	if (in->bound) {
		in->offset = li.lo_offset;
		in->sizelimit = li.lo_sizelimit;
		in->back_ino = li.lo_inode;
		in->back_devno = li.lo_device;
		in->back_maj = major(li.lo_device);
		in->back_min = minor(li.lo_device);
		in->ro = !!(li.lo_flags & LO_FLAGS_READ_ONLY);
		in->autoclear = !!(li.lo_flags & LO_FLAGS_AUTOCLEAR);
		in->partscan = !!(li.lo_flags & LO_FLAGS_PARTSCAN);
		in->dio = !!(li.lo_flags & LO_FLAGS_DIRECT_IO);
		/* sysfs has the full name; lo_file_name is cut at 64 bytes */
		if (sysfs_read(in->disk, "loop/backing_file", in->back_file,
			       sizeof(in->back_file)) != 0) {
			memcpy(in->back_file, li.lo_file_name, LO_NAME_SIZE);
			in->back_file[LO_NAME_SIZE] = '\0';
		}
		if (sysfs_u64(in->disk, "loop/offset", &v) == 0)
			in->offset = v;
		if (sysfs_u64(in->disk, "loop/sizelimit", &v) == 0)
			in->sizelimit = v;
		sysfs_bool(in->disk, "loop/autoclear", &in->autoclear);
		sysfs_bool(in->disk, "loop/partscan", &in->partscan);
		sysfs_bool(in->disk, "loop/dio", &in->dio);
	}
	sysfs_bool(in->disk, "ro", &in->ro);
	close(fd);
	if (lmq_get_mode(index, &in->mode) == 0)
		in->have_mode = 1;
	if (lmq_get_stats(index, &in->stats) == 0)
		in->have_stats = 1;
	if (in->bound && lmq_get_dio(index, &in->dio_state) == 0)
		in->have_dio_state = 1;
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int lmq_list(int **list, int *count, int sorted)
{
	DIR *d = opendir("/sys/block");
	struct dirent *de;
	int *v = NULL, n = 0, cap = 0, idx;

	*list = NULL;
	*count = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		idx = parse_disk_name(de->d_name);
		if (idx < 0)
			continue;
		if (n == cap) {
			int *nv;

			cap = cap ? 2 * cap : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = idx;
	}
	closedir(d);
	if (n && sorted)
		qsort(v, n, sizeof(*v), cmp_int);
	*list = v;
	*count = n;
	return 0;
}

/* ---- attach / detach -------------------------------------------------- */

const char *lmq_attach_step_name(enum lmq_attach_step step)
{
	static const char *const names[] = {
		[LMQ_STEP_OPEN_FILE] = "open backing file",
		[LMQ_STEP_OPEN_DEV] = "open device",
		[LMQ_STEP_ATTACH] = "attach",
		[LMQ_STEP_SET_STATUS] = "set status",
		[LMQ_STEP_SET_BLOCK_SIZE] = "set sector size",
		[LMQ_STEP_SET_DIRECT_IO] = "set direct-io",
		[LMQ_STEP_SET_DIO] = "set direct-io",
		[LMQ_STEP_SET_MODE] = "set mode",
		[LMQ_STEP_SET_REMAP] = "set remap",
	};

	if ((unsigned int)step < sizeof(names) / sizeof(names[0]))
		return names[step];
	return "attach";
}

static int attach_legacy(int dfd, int ffd, const struct loop_config *cfg,
			 const struct lmq_attach *a,
			 enum lmq_attach_step *step)
{
	struct loop_info64 li = cfg->info;

	*step = LMQ_STEP_ATTACH;
	if (ioctl(dfd, LOOP_SET_FD, (unsigned long)ffd) < 0)
		return -errno;
	li.lo_flags &= LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN;
	*step = LMQ_STEP_SET_STATUS;
	if (ioctl(dfd, LOOP_SET_STATUS64, &li) < 0)
		goto undo;
	*step = LMQ_STEP_SET_BLOCK_SIZE;
	if (a->block_size &&
	    ioctl(dfd, LOOP_SET_BLOCK_SIZE, (unsigned long)a->block_size) < 0)
		goto undo;
	*step = LMQ_STEP_SET_DIRECT_IO;
	if (a->dio_setting == LOOPMQ_DIO_ON &&
	    ioctl(dfd, LOOP_SET_DIRECT_IO, 1UL) < 0)
		goto undo;
	return 0;
undo:
	{
		int e = -errno;

		ioctl(dfd, LOOP_CLR_FD, 0);
		return e;
	}
}

/*
 * A device just attached without direct I/O asked for: has the driver's
 * dio_default given it another setting than off?
 */
static int dio_not_off(int index)
{
	char disk[LMQ_NAME_MAX], buf[32];
	int on = 0;

	disk_name(index, disk, sizeof(disk));
	if (sysfs_read(disk, "loopmq/direct_io", buf, sizeof(buf)) == 0)
		return lmq_dio_parse(buf) != LOOPMQ_DIO_OFF;
	/* the stock driver, a loopmq without the setting: dio_default=Y */
	return sysfs_bool(disk, "loop/dio", &on) == 0 && on;
}

int lmq_attach(int index, const struct lmq_attach *a,
	       enum lmq_attach_step *step)
{
	struct loop_config cfg;
	char *real;
	int ffd, dfd, r;

	*step = LMQ_STEP_OPEN_FILE;
	ffd = open(a->file, (a->read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (ffd < 0)
		return -errno;
	*step = LMQ_STEP_OPEN_DEV;
	dfd = dev_open(index, O_RDWR);
	if (dfd == -EROFS || dfd == -EACCES)
		dfd = dev_open(index, O_RDONLY);
	if (dfd < 0) {
		close(ffd);
		return dfd;
	}

	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = (unsigned int)ffd;
	cfg.block_size = a->block_size;
	cfg.info.lo_offset = a->offset;
	cfg.info.lo_sizelimit = a->sizelimit;
	if (a->read_only)
		cfg.info.lo_flags |= LO_FLAGS_READ_ONLY;
	if (a->partscan)
		cfg.info.lo_flags |= LO_FLAGS_PARTSCAN;
	if (a->dio_setting == LOOPMQ_DIO_ON)
		cfg.info.lo_flags |= LO_FLAGS_DIRECT_IO;
	real = realpath(a->file, NULL);
	snprintf((char *)cfg.info.lo_file_name, LO_NAME_SIZE, "%s",
		 real ? real : a->file);
	free(real);

	*step = LMQ_STEP_ATTACH;
	/* TEST ONLY: LOOPMQCTL_LEGACY_ATTACH=1 takes the pre-5.8 path */
	if (getenv("LOOPMQCTL_LEGACY_ATTACH")) {
		r = -1;
		errno = ENOTTY;
	} else {
		r = ioctl(dfd, LOOP_CONFIGURE, &cfg);
	}
	if (r < 0 && (errno == ENOTTY || errno == EINVAL))
		r = attach_legacy(dfd, ffd, &cfg, a, step);
	else if (r < 0)
		r = -errno;
	if (r == 0 && (a->dio_setting == LOOPMQ_DIO_AUTO ||
		       (a->dio_setting == LOOPMQ_DIO_OFF && dio_not_off(index)))) {
		*step = LMQ_STEP_SET_DIO;
		if (a->dio_setting == LOOPMQ_DIO_AUTO)
			r = ioctl(dfd, LOOPMQ_SET_DIO,
				  (unsigned long)LOOPMQ_DIO_AUTO);
		else
			r = ioctl(dfd, LOOP_SET_DIRECT_IO, 0UL);
		if (r < 0) {
			r = -errno;
			ioctl(dfd, LOOP_CLR_FD, 0);
		}
	}
	if (r == 0 && a->mode >= 0) {
		struct loopmq_mode_info mi;

		memset(&mi, 0, sizeof(mi));
		mi.mode = (unsigned int)a->mode;
		*step = LMQ_STEP_SET_MODE;
		if (ioctl(dfd, LOOPMQ_SET_MODE, &mi) < 0) {
			r = -errno;
			ioctl(dfd, LOOP_CLR_FD, 0);
		}
	}
	if (r == 0 && a->remap >= 0) {
		*step = LMQ_STEP_SET_REMAP;
		if (ioctl(dfd, LOOPMQ_SET_REMAP, (unsigned long)a->remap) < 0) {
			r = -errno;
			ioctl(dfd, LOOP_CLR_FD, 0);
		}
	}
	close(dfd);
	close(ffd);
	return r;
}

int lmq_detach(int index)
{
	return dev_ioctl(index, LOOP_CLR_FD, 0);
}

/* ---- numbers ---------------------------------------------------------- */

int lmq_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGTPE";
	unsigned long long v;
	uint64_t base = 1, mult = 1;
	const char *u;
	char *end;
	int power = 0, i;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end) {
		u = strchr(units, toupper((unsigned char)*end));
		if (u && *u) {
			power = (int)(u - units) + 1;
			end++;
			if (!*end || !strcasecmp(end, "iB"))
				base = 1024;
			else if (!strcasecmp(end, "B"))
				base = 1000;
			else
				return -EINVAL;
		} else if (strcmp(end, "B") != 0) {
			return -EINVAL;
		}
	}
	for (i = 0; i < power; i++)
		mult *= base;
	if (mult > 1 && v > UINT64_MAX / mult)
		return -ERANGE;
	*out = (uint64_t)v * mult;
	return 0;
}


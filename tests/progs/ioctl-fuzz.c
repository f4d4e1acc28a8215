// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl-fuzz: a seeded, reproducible ioctl fuzzer for loop-like block
 * drivers (loopmq, and the stock loop driver with the same ABI).
 *
 * Usage: ioctl-fuzz [-s SEED] [-n CALLS] [-j WORKERS] [-p PREFIX] [-c CTL]
 *                   [-d NDEV] [-t DIR] [-S SANITY] [-v]
 *   -s SEED     random seed (default: time); always printed first
 *   -n CALLS    ioctl calls per worker (default 100000)
 *   -j WORKERS  processes fuzzing the same devices at once (default 1;
 *               worker i uses SEED+i; with -j 1 the call sequence is
 *               exactly reproducible from the seed)
 *   -p PREFIX   device node prefix (default /dev/loopmq)
 *   -c CTL      control node (default /dev/loopmq-control)
 *   -d NDEV     fuzz devices PREFIX0 .. PREFIX<NDEV-1> (default 4; must exist)
 *   -t DIR      where to create the backing files (default /tmp)
 *   -S SANITY   restore sanity every SANITY calls (default 5000): close all
 *               fds, detach every device, remove devices that CTL_ADD made
 *   -v          print every call
 *
 * What it calls: the exact LOOP_* and LOOP_CTL_* numbers and loopmq's own
 * (include/uapi/loopmq.h) with plausible and random arguments; random
 * numbers with magic 0x4C as _IO/_IOR/_IOW/_IOWR of random sizes and
 * directions; raw numbers in 0x4C00-0x4CFF.  Targets: the control device,
 * devices read-write and read-only, unbound, bound and being detached
 * (another worker or a churned fd holds the last reference).  Pointer
 * arguments: valid buffers with random contents, NULL, an unmapped page,
 * kernel addresses, a read-only page, (void *)-1, small integers, and
 * structures that end in (or start on the last byte before) an unmapped
 * page.  fd arguments: regular files rw and ro, an empty and an odd-sized
 * file, a directory, a pipe, /dev/null, the control device, the device
 * itself and another device, closed and negative fds.
 *
 * It fails (exit 1) when:
 *   - an ioctl whose structure pointer is bad (not fully readable, or for a
 *     GET not fully writable) succeeds;
 *   - a number that is not a known command succeeds;
 *   - an ioctl returns something other than 0 or -1 (except CTL_ADD /
 *     CTL_GET_FREE, which return an index >= 0), or an errno outside 1..4095;
 *   - a successful LOOPMQ_GET_MODE / LOOPMQ_GET_STATS into a buffer of
 *     random bytes leaves a mode out of range, wrong nr_paths/nr_fallbacks,
 *     or nonzero flags/pad/reserved/unused array slots;
 *   - a single call takes longer than 60 s (reported as a hang, exit 3);
 *   - after the final sanity pass a device is still bound, or does not
 *     answer LOOP_GET_STATUS64 with ENXIO.
 * At the end it prints counts per errno (and per target kind), then
 * "ioctl-fuzz: PASS" or "ioctl-fuzz: FAIL (N violations)".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <linux/loop.h>
#include "../../include/uapi/loopmq.h"

#define MAX_DEV		64
#define MAX_ERRNO	4096
#define MAX_ADDED	256
#define PAGE		4096

/* ---- deterministic PRNG (xorshift64*) ---- */
static uint64_t rng_state;

static uint64_t rnd64(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static unsigned int rnd(unsigned int n)	/* 0 .. n-1 */
{
	return n ? (unsigned int)(rnd64() % n) : 0;
}

static int chance(unsigned int one_in)
{
	return rnd(one_in) == 0;
}

/* ---- options ---- */
static uint64_t opt_seed;
static long opt_calls = 100000;
static int opt_workers = 1;
static const char *opt_prefix = "/dev/loopmq";
static const char *opt_ctl = "/dev/loopmq-control";
static int opt_ndev = 4;
static const char *opt_dir = "/tmp";
static long opt_sanity = 5000;
static int opt_verbose;

/* ---- shared counters (one block per worker, summed by the parent) ---- */
enum target_kind { TK_CTL, TK_DEV_RW, TK_DEV_RO, TK_NR };
static const char *const tk_name[TK_NR] = { "control", "device-rw", "device-ro" };

enum state_kind { ST_UNBOUND, ST_BOUND, ST_OTHER, ST_NR };
static const char *const st_name[ST_NR] = { "unbound", "bound", "probe-failed" };

struct counters {
	uint64_t calls;
	uint64_t ok;
	uint64_t per_errno[MAX_ERRNO];
	uint64_t per_target[TK_NR];
	uint64_t per_state[ST_NR];	/* device calls after a state probe */
	uint64_t known_ok[32];		/* successes per known command */
	uint64_t known_calls[32];
	uint64_t added, removed;	/* CTL_ADD / CTL_REMOVE successes */
	uint64_t churns, sanity_passes;
	uint64_t violations;
};
static struct counters *all_counters;
static struct counters *cnt;

/* ---- known commands ---- */
enum argkind {
	A_NONE,		/* arg ignored */
	A_FD,		/* arg is an fd */
	A_INT,		/* arg is a number */
	A_IN,		/* arg points to a struct the kernel reads */
	A_OUT,		/* arg points to a struct the kernel writes */
};

struct known {
	const char *name;
	unsigned long cmd;
	enum argkind kind;
	size_t size;
	int ctl;	/* a control-device command */
};

static const struct known known[] = {
	{ "LOOP_SET_FD", LOOP_SET_FD, A_FD, 0, 0 },
	{ "LOOP_CLR_FD", LOOP_CLR_FD, A_NONE, 0, 0 },
	{ "LOOP_SET_STATUS", LOOP_SET_STATUS, A_IN, sizeof(struct loop_info), 0 },
	{ "LOOP_GET_STATUS", LOOP_GET_STATUS, A_OUT, sizeof(struct loop_info), 0 },
	{ "LOOP_SET_STATUS64", LOOP_SET_STATUS64, A_IN, sizeof(struct loop_info64), 0 },
	{ "LOOP_GET_STATUS64", LOOP_GET_STATUS64, A_OUT, sizeof(struct loop_info64), 0 },
	{ "LOOP_CHANGE_FD", LOOP_CHANGE_FD, A_FD, 0, 0 },
	{ "LOOP_SET_CAPACITY", LOOP_SET_CAPACITY, A_NONE, 0, 0 },
	{ "LOOP_SET_DIRECT_IO", LOOP_SET_DIRECT_IO, A_INT, 0, 0 },
	{ "LOOP_SET_BLOCK_SIZE", LOOP_SET_BLOCK_SIZE, A_INT, 0, 0 },
	{ "LOOP_CONFIGURE", LOOP_CONFIGURE, A_IN, sizeof(struct loop_config), 0 },
	{ "LOOP_CTL_ADD", LOOP_CTL_ADD, A_INT, 0, 1 },
	{ "LOOP_CTL_REMOVE", LOOP_CTL_REMOVE, A_INT, 0, 1 },
	{ "LOOP_CTL_GET_FREE", LOOP_CTL_GET_FREE, A_NONE, 0, 1 },
	{ "LOOPMQ_SET_MODE", LOOPMQ_SET_MODE, A_IN, sizeof(struct loopmq_mode_info), 0 },
	{ "LOOPMQ_GET_MODE", LOOPMQ_GET_MODE, A_OUT, sizeof(struct loopmq_mode_info), 0 },
	{ "LOOPMQ_GET_STATS", LOOPMQ_GET_STATS, A_OUT, sizeof(struct loopmq_stats), 0 },
	{ "LOOPMQ_RESET_STATS", LOOPMQ_RESET_STATS, A_NONE, 0, 0 },
	{ "LOOPMQ_SET_REMAP", LOOPMQ_SET_REMAP, A_INT, 0, 0 },
	{ "LOOPMQ_SET_DIO", LOOPMQ_SET_DIO, A_INT, 0, 0 },
};
#define NKNOWN ((int)(sizeof(known) / sizeof(known[0])))

static int known_index(unsigned long cmd)
{
	int i;

	for (i = 0; i < NKNOWN; i++)
		if (known[i].cmd == cmd)
			return i;
	return -1;
}

/* ---- memory for pointer arguments ---- */
static unsigned char *buf;		/* 4 valid rw pages, random contents */
static unsigned char *ro_page;		/* a read-only page */
static unsigned char *edge;		/* a rw page followed by an unmapped page */
static unsigned char *unmapped;		/* an unmapped page */

enum ptrkind {
	P_VALID, P_NULL, P_UNMAPPED, P_KERNEL, P_RO, P_MINUS1, P_SMALL,
	P_EDGE_END, P_EDGE_LAST, P_NR
};
static const char *const ptr_name[P_NR] = {
	"valid", "NULL", "unmapped", "kernel", "read-only", "-1", "small-int",
	"straddle-end", "last-byte"
};

/* Is a pointer of this kind fully usable for SIZE bytes (W: written)? */
static int ptr_good(enum ptrkind k, int w)
{
	return k == P_VALID || (k == P_RO && !w);
}

static unsigned long make_ptr(enum ptrkind k, size_t size)
{
	static const unsigned long kaddrs[] = {
		0xffff888000000000UL, 0xffffffff81000000UL, 0xffffffffff600000UL,
		0xffffc90000000000UL, 0x8000000000000000UL, 0x00007ffffffff000UL,
	};

	switch (k) {
	case P_VALID:
		return (unsigned long)(buf + rnd(PAGE) / 8 * 8);
	case P_NULL:
		return 0;
	case P_UNMAPPED:
		return (unsigned long)(unmapped + rnd(PAGE));
	case P_KERNEL:
		return kaddrs[rnd(sizeof(kaddrs) / sizeof(kaddrs[0]))] + rnd(PAGE);
	case P_RO:
		return (unsigned long)ro_page;
	case P_MINUS1:
		return ~0UL - rnd(16);
	case P_SMALL:
		return 1 + rnd(PAGE);
	case P_EDGE_END:	/* the struct runs into the unmapped page */
		return (unsigned long)(edge + PAGE - (size > 1 ? 1 + rnd(size - 1) : 1));
	case P_EDGE_LAST:	/* starts on the last mapped byte */
		return (unsigned long)(edge + PAGE - 1);
	default:
		return 0;
	}
}

static void randomize(unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)rnd64();
}

/* ---- fds ---- */
enum fdkind {
	F_FILE_RW, F_FILE_RO, F_FILE2_RW, F_EMPTY, F_ODD, F_DIR, F_PIPE,
	F_DEVNULL, F_CTL, F_SELF, F_OTHERDEV, F_CLOSED, F_NEG, F_HUGE, F_NR
};
static int pool[F_NR];
static int dev_rw[MAX_DEV], dev_ro[MAX_DEV];
static int ctl_fd = -1;
static char path_a[PATH_MAX], path_b[PATH_MAX], path_empty[PATH_MAX], path_odd[PATH_MAX];

static int added[MAX_ADDED];
static int nadded;

static void die(const char *what)
{
	fprintf(stderr, "ioctl-fuzz: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void devpath(char *out, size_t n, int i)
{
	snprintf(out, n, "%s%d", opt_prefix, i);
}

static int open_dev(int i, int flags)
{
	char p[PATH_MAX];

	devpath(p, sizeof(p), i);
	return open(p, flags | O_CLOEXEC);
}

static void open_devs(void)
{
	int i;

	for (i = 0; i < opt_ndev; i++) {
		if (dev_rw[i] < 0)
			dev_rw[i] = open_dev(i, O_RDWR);
		if (dev_ro[i] < 0)
			dev_ro[i] = open_dev(i, O_RDONLY);
	}
}

static void close_devs(void)
{
	int i;

	for (i = 0; i < opt_ndev; i++) {
		if (dev_rw[i] >= 0)
			close(dev_rw[i]);
		if (dev_ro[i] >= 0)
			close(dev_ro[i]);
		dev_rw[i] = dev_ro[i] = -1;
	}
}

static int make_file(const char *path, off_t size, int flags)
{
	int fd = open(path, flags | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0)
		die(path);
	if ((flags & O_ACCMODE) != O_RDONLY && ftruncate(fd, size))
		die("ftruncate");
	return fd;
}

static void setup_pool(int worker)
{
	int p[2];

	snprintf(path_a, sizeof(path_a), "%s/ioctl-fuzz-%d-a", opt_dir, worker);
	snprintf(path_b, sizeof(path_b), "%s/ioctl-fuzz-%d-b", opt_dir, worker);
	snprintf(path_empty, sizeof(path_empty), "%s/ioctl-fuzz-%d-empty", opt_dir, worker);
	snprintf(path_odd, sizeof(path_odd), "%s/ioctl-fuzz-%d-odd", opt_dir, worker);
	pool[F_FILE_RW] = make_file(path_a, 8 << 20, O_RDWR);
	pool[F_FILE_RO] = open(path_a, O_RDONLY | O_CLOEXEC);
	pool[F_FILE2_RW] = make_file(path_b, 1 << 20, O_RDWR);
	pool[F_EMPTY] = make_file(path_empty, 0, O_RDWR);
	pool[F_ODD] = make_file(path_odd, 4096 * 3 + 777, O_RDWR);
	pool[F_DIR] = open(opt_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pipe2(p, O_CLOEXEC))
		die("pipe");
	pool[F_PIPE] = p[0];
	pool[F_DEVNULL] = open("/dev/null", O_RDWR | O_CLOEXEC);
	pool[F_CLOSED] = 1000;
	pool[F_NEG] = -1;
	pool[F_HUGE] = INT_MAX;
	if (pool[F_FILE_RO] < 0 || pool[F_DIR] < 0 || pool[F_DEVNULL] < 0)
		die("open pool");
}

static int pick_fd(int self)
{
	int k = rnd(F_NR);

	/* Mostly usable backing files: most calls should reach the driver. */
	if (rnd(3) == 0)
		k = rnd(3) == 0 ? F_FILE2_RW : F_FILE_RW;
	switch (k) {
	case F_CTL:
		return ctl_fd;
	case F_SELF:
		return self;
	case F_OTHERDEV:
		return dev_rw[rnd(opt_ndev)];
	default:
		return pool[k];
	}
}

static void setup_memory(void)
{
	unsigned char *m;

	buf = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro_page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	m = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || ro_page == MAP_FAILED || m == MAP_FAILED)
		die("mmap");
	memset(ro_page, 0, PAGE);
	if (mprotect(ro_page, PAGE, PROT_READ))
		die("mprotect");
	edge = m;
	unmapped = m + PAGE;
	if (munmap(unmapped, 2 * PAGE))
		die("munmap");
}

/* ---- the current call, for the hang report ---- */
static char cur_desc[256];

static void on_alarm(int sig)
{
	char msg[400];
	int n;

	(void)sig;
	n = snprintf(msg, sizeof(msg), "ioctl-fuzz: HANG: no return in 60 s from %s\n", cur_desc);
	if (write(2, msg, n) < 0)
		_exit(3);
	_exit(3);
}

static void violation(const char *why)
{
	cnt->violations++;
	fprintf(stderr, "ioctl-fuzz: VIOLATION: %s: %s\n", why, cur_desc);
}

/* ---- building one call ---- */
static void fill_struct(int ki, unsigned char *p, int self)
{
	unsigned long cmd = known[ki].cmd;

	randomize(p, known[ki].size);
	if (rnd(3) == 0)
		return;			/* fully random */
	if (cmd == LOOP_SET_STATUS64 || cmd == LOOP_CONFIGURE) {
		struct loop_info64 *li;

		if (cmd == LOOP_CONFIGURE) {
			struct loop_config *c = (struct loop_config *)p;
			static const uint32_t bs[] = { 0, 512, 1024, 2048, 4096, 8192, 511, 3, 65536 };

			c->fd = pick_fd(self);
			c->block_size = rnd(4) ? bs[rnd(9)] : (uint32_t)rnd64();
			if (rnd(2))
				memset(c->__reserved, 0, sizeof(c->__reserved));
			li = &c->info;
		} else {
			li = (struct loop_info64 *)p;
		}
		if (rnd(2)) {
			li->lo_offset = rnd(4) ? rnd(16) * 512ULL : rnd64();
			li->lo_sizelimit = rnd(4) ? rnd(16) * 4096ULL : rnd64();
			li->lo_flags = rnd(3) ? rnd(32) : (uint32_t)rnd64();
			li->lo_encrypt_type = rnd(4) ? 0 : rnd(40);
			li->lo_encrypt_key_size = rnd(4) ? 0 : rnd(64);
			li->lo_init[0] = li->lo_init[1] = 0;
		}
	} else if (cmd == LOOP_SET_STATUS) {
		struct loop_info *li = (struct loop_info *)p;

		if (rnd(2)) {
			li->lo_offset = rnd(4) ? (int)(rnd(16) * 512) : (int)rnd64();
			li->lo_flags = rnd(3) ? (int)rnd(32) : (int)rnd64();
			li->lo_encrypt_type = rnd(4) ? 0 : (int)rnd(40);
			li->lo_encrypt_key_size = rnd(4) ? 0 : (int)rnd(64);
		}
	} else if (cmd == LOOPMQ_SET_MODE) {
		struct loopmq_mode_info *mi = (struct loopmq_mode_info *)p;

		mi->mode = rnd(3) ? rnd(LOOPMQ_MODE_NR + 2) : (uint32_t)rnd64();
		if (rnd(4)) {
			mi->flags = 0;
			memset(mi->reserved, 0, sizeof(mi->reserved));
		}
	}
}

static unsigned long int_arg(unsigned long cmd)
{
	static const unsigned long bs[] = {
		0, 1, 256, 511, 512, 513, 1024, 2048, 4096, 8192, 65536, 1UL << 31,
		~0UL, 0x100000000UL,
	};

	if (cmd == LOOP_SET_BLOCK_SIZE)
		return rnd(4) ? bs[rnd(sizeof(bs) / sizeof(bs[0]))] : rnd64();
	if (cmd == LOOP_SET_DIRECT_IO)
		return rnd(4) ? rnd(3) : rnd64();
	if (cmd == LOOPMQ_SET_DIO)	/* off, on, auto, and one past */
		return rnd(4) ? rnd(LOOPMQ_DIO_NR + 1) : rnd64();
	if (cmd == LOOP_CTL_ADD || cmd == LOOP_CTL_REMOVE) {
		switch (rnd(8)) {
		case 0:
			return (unsigned long)-1L;
		case 1:
			return rnd64();
		case 2:
			return (unsigned long)(long)(int)rnd64();
		case 3:
			return 1UL << 20;
		default:
			return opt_ndev + rnd(12);	/* near the fuzzed ones */
		}
	}
	return rnd64();
}

/* A random command number: mostly known, else 0x4C-ish garbage. */
static unsigned long pick_cmd(int on_ctl)
{
	static const unsigned int dirs[] = { _IOC_NONE, _IOC_READ, _IOC_WRITE, _IOC_READ | _IOC_WRITE };
	unsigned int nr, dir, size;
	int i;

	switch (rnd(10)) {
	case 0: case 1: case 2: case 3: case 4:
		do {
			i = rnd(NKNOWN);
		} while (known[i].ctl != on_ctl && rnd(4));
		return known[i].cmd;
	case 5:		/* raw number in 0x4C00..0x4CFF */
		return 0x4C00 | rnd(256);
	case 6:		/* a known number with another direction or size */
		i = rnd(NKNOWN);
		nr = _IOC_NR(known[i].cmd);
		dir = dirs[rnd(4)];
		size = rnd(2) ? known[i].size + rnd(17) - 8 : rnd(1 << _IOC_SIZEBITS);
		return _IOC(dir, LOOPMQ_IOC_MAGIC, nr, size & ((1 << _IOC_SIZEBITS) - 1));
	case 7:		/* loopmq's numbers neighbourhood */
		nr = 0x9C + rnd(16);
		return _IOC(dirs[rnd(4)], LOOPMQ_IOC_MAGIC, nr,
			    rnd(2) ? sizeof(struct loopmq_stats) : rnd(1024));
	default:	/* magic 0x4C, anything else random */
		return _IOC(dirs[rnd(4)], LOOPMQ_IOC_MAGIC, rnd(256), rnd(1 << _IOC_SIZEBITS));
	}
}

static int state_of(int fd)
{
	struct loop_info64 li;

	if (ioctl(fd, LOOP_GET_STATUS64, &li) == 0)
		return ST_BOUND;
	return errno == ENXIO ? ST_UNBOUND : ST_OTHER;
}

static void remember_added(int idx)
{
	int i;

	if (idx < 0)
		return;
	for (i = 0; i < nadded; i++)
		if (added[i] == idx)
			return;
	if (nadded < MAX_ADDED)
		added[nadded++] = idx;
}

/* What a successful GET must have written (the buffer held random bytes). */
static void check_output(unsigned long cmd, const void *p)
{
	unsigned int i;

	if (cmd == LOOPMQ_GET_MODE) {
		const struct loopmq_mode_info *mi = p;

		if (mi->mode >= LOOPMQ_MODE_NR)
			violation("LOOPMQ_GET_MODE: mode out of range");
		if (mi->flags || mi->reserved[0] || mi->reserved[1] || mi->reserved[2])
			violation("LOOPMQ_GET_MODE: flags/reserved not zeroed");
	} else if (cmd == LOOPMQ_GET_STATS) {
		const struct loopmq_stats *st = p;

		if (st->mode >= LOOPMQ_MODE_NR)
			violation("LOOPMQ_GET_STATS: mode out of range");
		if (st->nr_paths != LOOPMQ_PATH_NR || st->nr_fallbacks != LOOPMQ_FB_NR)
			violation("LOOPMQ_GET_STATS: nr_paths/nr_fallbacks");
		if (st->pad)
			violation("LOOPMQ_GET_STATS: pad not zeroed");
		for (i = 0; i < sizeof(st->reserved) / sizeof(st->reserved[0]); i++)
			if (st->reserved[i])
				violation("LOOPMQ_GET_STATS: reserved not zeroed");
		for (i = LOOPMQ_PATH_NR; i < LOOPMQ_STATS_PATHS; i++)
			if (st->path[i])
				violation("LOOPMQ_GET_STATS: unused path[] not zeroed");
		for (i = LOOPMQ_FB_NR; i < LOOPMQ_STATS_FALLBACKS; i++)
			if (st->fallback[i])
				violation("LOOPMQ_GET_STATS: unused fallback[] not zeroed");
	}
}

static void one_call(long n)
{
	int on_ctl = rnd(8) == 0;
	int dev = rnd(opt_ndev);
	int ro = !on_ctl && rnd(5) == 0;
	int fd, ki, self;
	enum target_kind tk;
	unsigned long cmd, arg;
	enum ptrkind pk = P_NR;
	long ret;
	int err;

	/* Churn: drop and reopen a device's fds; if nobody else holds the
	 * device this runs an autoclear detach. */
	if (!on_ctl && chance(60)) {
		cnt->churns++;
		if (dev_rw[dev] >= 0)
			close(dev_rw[dev]);
		if (dev_ro[dev] >= 0)
			close(dev_ro[dev]);
		dev_rw[dev] = open_dev(dev, O_RDWR);
		/* With ours the only open, LOOP_CLR_FD detaches right away;
		 * with another worker's open it only marks autoclear. */
		if (dev_rw[dev] >= 0 && chance(2))
			ioctl(dev_rw[dev], LOOP_CLR_FD, 0);
		dev_ro[dev] = open_dev(dev, O_RDONLY);
	}
	/* Some real I/O on bound devices, so a bound device is used too. */
	if (!on_ctl && chance(40) && dev_rw[dev] >= 0) {
		if (chance(2)) {
			if (pread(dev_rw[dev], buf, 4096, 512 * rnd(64)) < 0)
				(void)0;
		} else if (pwrite(dev_rw[dev], buf + PAGE, 4096, 512 * rnd(64)) < 0) {
			(void)0;
		}
	}

	if (on_ctl) {
		tk = TK_CTL;
		fd = ctl_fd;
	} else {
		tk = ro ? TK_DEV_RO : TK_DEV_RW;
		fd = ro ? dev_ro[dev] : dev_rw[dev];
	}
	self = fd;
	if (fd < 0)
		return;		/* the device was removed under us */

	cmd = pick_cmd(on_ctl);
	ki = known_index(cmd);
	if (ki >= 0 && (known[ki].kind == A_IN || known[ki].kind == A_OUT)) {
		pk = rnd(3) ? P_VALID : (enum ptrkind)rnd(P_NR);
		arg = make_ptr(pk, known[ki].size);
		if (pk == P_VALID)
			fill_struct(ki, (unsigned char *)arg, self);
	} else if (ki >= 0 && known[ki].kind == A_FD) {
		arg = (unsigned long)(long)pick_fd(self);
	} else if (ki >= 0 && known[ki].kind == A_INT) {
		arg = int_arg(cmd);
	} else {
		/* unknown number or no-arg command: any of the above */
		switch (rnd(3)) {
		case 0:
			pk = (enum ptrkind)rnd(P_NR);
			arg = make_ptr(pk, _IOC_SIZE(cmd) ? _IOC_SIZE(cmd) : 64);
			if (pk == P_VALID)
				randomize((unsigned char *)arg, 64);
			break;
		case 1:
			arg = (unsigned long)(long)pick_fd(self);
			break;
		default:
			arg = rnd64() >> rnd(64);
			break;
		}
	}

	/* A state probe on some device calls, to count what we hit. */
	if (!on_ctl && chance(4))
		cnt->per_state[state_of(fd)]++;

	snprintf(cur_desc, sizeof(cur_desc),
		 "call %ld: %s fd %d (%s%d) cmd 0x%lx (%s) arg 0x%lx ptr %s",
		 n, tk_name[tk], fd, on_ctl ? "ctl" : opt_prefix, on_ctl ? 0 : dev,
		 cmd, ki >= 0 ? known[ki].name : "unknown", arg,
		 pk < P_NR ? ptr_name[pk] : "-");
	if (opt_verbose)
		fprintf(stderr, "%s\n", cur_desc);

	alarm(60);
	errno = 0;
	ret = ioctl(fd, cmd, arg);
	err = errno;
	alarm(0);

	cnt->calls++;
	cnt->per_target[tk]++;
	if (ki >= 0)
		cnt->known_calls[ki]++;
	if (ret < 0) {
		if (ret != -1)
			violation("return value below -1");
		if (err <= 0 || err >= MAX_ERRNO)
			violation("errno out of range");
		else
			cnt->per_errno[err]++;
	} else {
		cnt->ok++;
		if (ki >= 0)
			cnt->known_ok[ki]++;
		if (ki < 0) {
			violation("unknown command number succeeded");
		} else if (known[ki].kind == A_IN || known[ki].kind == A_OUT) {
			if (pk < P_NR && !ptr_good(pk, known[ki].kind == A_OUT))
				violation("bad pointer accepted");
		}
		if (ret != 0 && !(cmd == LOOP_CTL_ADD || cmd == LOOP_CTL_GET_FREE))
			violation("positive return value");
		if (pk == P_VALID)
			check_output(cmd, (const void *)arg);
		if (cmd == LOOP_CTL_ADD) {
			cnt->added++;
			remember_added((int)ret);
		}
		if (cmd == LOOP_CTL_REMOVE) {
			cnt->removed++;
			if ((long)arg >= 0 && (long)arg < opt_ndev) {
				/* one of ours is gone: recreate it later */
				dev_rw[arg] = dev_ro[arg] = -1;
			}
		}
	}
}

/* Devices of this driver beyond the fuzzed ones, from /sys/block. */
static void scan_extra_devices(void)
{
	const char *base = strrchr(opt_prefix, '/');
	size_t bl;
	struct dirent *de;
	DIR *d;
	char *end;
	long idx;

	base = base ? base + 1 : opt_prefix;
	bl = strlen(base);
	d = opendir("/sys/block");
	if (!d)
		return;
	while ((de = readdir(d)) && nadded < MAX_ADDED) {
		if (strncmp(de->d_name, base, bl) || !de->d_name[bl])
			continue;
		idx = strtol(de->d_name + bl, &end, 10);
		if (*end || idx < opt_ndev || idx > INT_MAX)
			continue;
		remember_added((int)idx);
	}
	closedir(d);
}

/*
 * Close everything, detach every device, remove what CTL_ADD made.  A
 * device can be the backing file of another, so detach in rounds until
 * every device is unbound (final) or a few rounds went by.
 */
static int sanity(int final)
{
	int i, fd, tries, round, nbound, st[MAX_DEV], bad = 0;

	cnt->sanity_passes++;
	close_devs();
	for (i = 0; i < opt_ndev; i++) {
		/* recreate a device a CTL_REMOVE took away */
		if (ioctl(ctl_fd, LOOP_CTL_ADD, i) < 0 && errno != EEXIST && final) {
			fprintf(stderr, "ioctl-fuzz: LOOP_CTL_ADD %d: %s\n", i, strerror(errno));
			bad++;
		}
	}
	for (round = 0; round < (final ? 100 : 3); round++) {
		nbound = 0;
		for (i = 0; i < opt_ndev; i++) {
			st[i] = ST_OTHER;
			fd = open_dev(i, O_RDONLY);
			if (fd < 0)
				continue;
			st[i] = state_of(fd);
			if (st[i] == ST_BOUND) {
				ioctl(fd, LOOP_CLR_FD, 0);
				nbound++;
			}
			close(fd);
		}
		if (!nbound)
			break;
		usleep(50000);
	}
	if (final) {
		scan_extra_devices();
		for (i = 0; i < opt_ndev; i++) {
			if (st[i] == ST_UNBOUND)
				continue;
			fprintf(stderr, "ioctl-fuzz: %s%d is not unbound at the end (%s)\n",
				opt_prefix, i, st_name[st[i]]);
			bad++;
		}
	}
	for (i = 0; i < nadded; i++) {
		if (added[i] < opt_ndev)
			continue;
		fd = open_dev(added[i], O_RDONLY);
		if (fd >= 0) {
			ioctl(fd, LOOP_CLR_FD, 0);
			close(fd);
		}
		for (tries = 0; tries < 50; tries++) {
			if (ioctl(ctl_fd, LOOP_CTL_REMOVE, added[i]) == 0 || errno == ENODEV)
				break;
			usleep(20000);
		}
		if (final && tries == 50) {
			fprintf(stderr, "ioctl-fuzz: cannot remove %s%d: %s\n",
				opt_prefix, added[i], strerror(errno));
			bad++;
		}
	}
	nadded = 0;
	open_devs();
	return bad;
}

static void worker(int id)
{
	long n;

	cnt = &all_counters[id];
	rng_state = (opt_seed + (uint64_t)id) * 0x9E3779B97F4A7C15ULL + 1;
	setup_memory();
	randomize(buf, 4 * PAGE);
	setup_pool(id);
	ctl_fd = open(opt_ctl, O_RDWR | O_CLOEXEC);
	if (ctl_fd < 0)
		die(opt_ctl);
	for (n = 0; n < MAX_DEV; n++)
		dev_rw[n] = dev_ro[n] = -1;
	open_devs();
	for (n = 0; n < opt_calls; n++) {
		if (n && opt_sanity && n % opt_sanity == 0)
			sanity(0);
		one_call(n);
	}
	close_devs();
	for (n = 0; n < F_NR; n++)
		if (pool[n] > 2 && pool[n] != 1000 && pool[n] != INT_MAX)
			close(pool[n]);
	unlink(path_a);
	unlink(path_b);
	unlink(path_empty);
	unlink(path_odd);
	_exit(0);
}

static void usage(void)
{
	fprintf(stderr, "usage: ioctl-fuzz [-s SEED] [-n CALLS] [-j WORKERS] [-p PREFIX] "
		"[-c CTL] [-d NDEV] [-t DIR] [-S SANITY] [-v]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct counters sum;
	struct timespec t0, t1;
	int c, i, j, status, bad = 0;
	double secs;

	opt_seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
	while ((c = getopt(argc, argv, "s:n:j:p:c:d:t:S:v")) != -1) {
		switch (c) {
		case 's': opt_seed = strtoull(optarg, NULL, 0); break;
		case 'n': opt_calls = atol(optarg); break;
		case 'j': opt_workers = atoi(optarg); break;
		case 'p': opt_prefix = optarg; break;
		case 'c': opt_ctl = optarg; break;
		case 'd': opt_ndev = atoi(optarg); break;
		case 't': opt_dir = optarg; break;
		case 'S': opt_sanity = atol(optarg); break;
		case 'v': opt_verbose = 1; break;
		default: usage();
		}
	}
	if (opt_ndev < 1 || opt_ndev > MAX_DEV || opt_workers < 1 || opt_workers > 16 ||
	    opt_calls < 0)
		usage();
	printf("ioctl-fuzz: seed %" PRIu64 " calls %ld workers %d devices %s0..%d control %s\n",
	       opt_seed, opt_calls, opt_workers, opt_prefix, opt_ndev - 1, opt_ctl);
	fflush(stdout);

	all_counters = mmap(NULL, sizeof(struct counters) * (opt_workers + 1),
			    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (all_counters == MAP_FAILED)
		die("mmap counters");
	signal(SIGALRM, on_alarm);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < opt_workers; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0)
			worker(i);
	}
	for (i = 0; i < opt_workers; i++) {
		if (wait(&status) < 0)
			die("wait");
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "ioctl-fuzz: a worker ended with status 0x%x%s\n", status,
				WIFEXITED(status) && WEXITSTATUS(status) == 3 ? " (hang)" : "");
			bad++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;

	/* final sanity in the parent, with no worker left */
	cnt = &all_counters[opt_workers];
	rng_state = opt_seed + 12345;
	ctl_fd = open(opt_ctl, O_RDWR | O_CLOEXEC);
	if (ctl_fd < 0)
		die(opt_ctl);
	for (i = 0; i < MAX_DEV; i++)
		dev_rw[i] = dev_ro[i] = -1;
	bad += sanity(1);
	close_devs();

	memset(&sum, 0, sizeof(sum));
	for (i = 0; i <= opt_workers; i++) {
		struct counters *w = &all_counters[i];

		sum.calls += w->calls;
		sum.ok += w->ok;
		for (j = 0; j < MAX_ERRNO; j++)
			sum.per_errno[j] += w->per_errno[j];
		for (j = 0; j < TK_NR; j++)
			sum.per_target[j] += w->per_target[j];
		for (j = 0; j < ST_NR; j++)
			sum.per_state[j] += w->per_state[j];
		for (j = 0; j < NKNOWN; j++) {
			sum.known_calls[j] += w->known_calls[j];
			sum.known_ok[j] += w->known_ok[j];
		}
		sum.added += w->added;
		sum.removed += w->removed;
		sum.churns += w->churns;
		sum.sanity_passes += w->sanity_passes;
		sum.violations += w->violations;
	}
	printf("ioctl-fuzz: %" PRIu64 " calls in %.1f s (%.0f/s), %" PRIu64 " succeeded\n",
	       sum.calls, secs, secs > 0 ? sum.calls / secs : 0.0, sum.ok);
	for (j = 1; j < MAX_ERRNO; j++)
		if (sum.per_errno[j])
			printf("  errno %-4d %-28s %" PRIu64 "\n", j, strerror(j), sum.per_errno[j]);
	for (j = 0; j < TK_NR; j++)
		printf("  target %-10s %" PRIu64 " calls\n", tk_name[j], sum.per_target[j]);
	for (j = 0; j < ST_NR; j++)
		printf("  probed state %-12s %" PRIu64 "\n", st_name[j], sum.per_state[j]);
	for (j = 0; j < NKNOWN; j++)
		printf("  %-20s %8" PRIu64 " calls %8" PRIu64 " ok\n", known[j].name,
		       sum.known_calls[j], sum.known_ok[j]);
	printf("  ctl-add ok %" PRIu64 ", ctl-remove ok %" PRIu64 ", fd churns %" PRIu64
	       ", sanity passes %" PRIu64 "\n", sum.added, sum.removed, sum.churns, sum.sanity_passes);
	bad += (int)sum.violations;
	if (bad) {
		printf("ioctl-fuzz: FAIL (%d violations; seed %" PRIu64 ")\n", bad, opt_seed);
		return 1;
	}
	printf("ioctl-fuzz: PASS (seed %" PRIu64 ")\n", opt_seed);
	return 0;
}

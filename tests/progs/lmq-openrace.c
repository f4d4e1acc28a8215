// SPDX-License-Identifier: GPL-2.0
/*
 * lmq-openrace: opens, reads and loop ioctls racing the end of a device's
 * life: LOOP_CTL_REMOVE, LOOP_CLR_FD (detach) and LOOP_CHANGE_FD.  For the
 * guest tests 71-73; works on loopmq and on the stock loop driver.
 *
 * Usage: lmq-openrace MODE ARGS...
 *
 *   remove CTL PREFIX INDEX SECONDS [OPENERS]
 *	A remover thread loops LOOP_CTL_REMOVE(INDEX) on the control device
 *	CTL and, when the device went away, LOOP_CTL_ADD(INDEX) again; opener
 *	threads (OPENERS, default 1) loop open(PREFIX INDEX) +
 *	LOOP_GET_STATUS64 + BLKGETSIZE64 + BLKGETDISKSEQ + close.  The device
 *	is never bound.  The first opener runs in lock step with the remover,
 *	which times its remove against each open to hit the window between
 *	->open and the block layer counting the opener (see "lock step"
 *	below); further openers run freely, with pauses.  An open in that
 *	window ends up holding a device that was removed under it ("stale":
 *	its diskseq is no longer the one in /sys/dev/block/M:m): legal (the
 *	stock driver allows it), but such a descriptor must still answer
 *	LOOP_GET_STATUS64 with ENXIO and refuse LOOP_SET_FD, and its close
 *	must be harmless.  The opener checks this only after the remove and
 *	the re-add are over, so that whatever a raced remove frees is freed
 *	(and maybe reused by the next device) by then.  At the end INDEX is
 *	removed.  Environment: LMQ_OPENRACE_SAMECPU=0|1 overrides the
 *	placement of the remover (default: 1 when preemption is "full"),
 *	LMQ_OPENRACE_TUNE=UP,DOWN,JITTER the adaptation (microseconds),
 *	LMQ_OPENRACE_HITS=N ends the run after N stale opens (SECONDS is then
 *	the cap).
 *
 *   partopen PART SECONDS [THREADS]
 *	THREADS (default 2) threads open(PART, O_RDONLY) and close it as fast
 *	as possible (like udev's blkid on a change event) until SECONDS pass
 *	or SIGTERM/SIGINT.  ENOENT and ENXIO are expected (the partition is
 *	gone, or the device is being detached).
 *
 *   mkimg FILE MIB
 *	Write a MIB MiB image whose every 8-byte word is its own offset
 *	xor a constant, so that any read can be checked.
 *
 *   changefd DEV IMG_A IMG_B SECONDS
 *	LOOP_CHANGE_FD of the read-only DEV to IMG_A, IMG_B, IMG_A ... each
 *	opened afresh and closed right after the call (the device then holds
 *	the only reference to the file, which the next change drops), and
 *	after each change one checked O_DIRECT read of a random block.
 *
 *   aiodetach DEV IMG SECONDS [DEPTH]
 *	Cycles of: open DEV (O_DIRECT, the only opener), LOOP_CONFIGURE
 *	read-only with LO_FLAGS_DIRECT_IO to IMG, DEPTH (default 32) async
 *	4 KiB reads in flight (io_submit, checked on completion), LOOP_CLR_FD
 *	through the same descriptor 20-150 ms in, 30 ms more reads, drain,
 *	close, then wait (up to 5 s) until the device is unbound.  A read
 *	may complete with good data, 0 (device of size 0 after the detach)
 *	or EIO; nothing else.
 *
 * Every call's outcome is counted per errno; the counts are printed as
 * "lmq-openrace MODE: ..." lines.  Exit status: 0 when only expected
 * outcomes occurred, 1 otherwise, 2 on usage or setup errors, 3 when one
 * call hung for 60 s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <linux/futex.h>
#include <linux/loop.h>
#include "errnames.h"
#include "../../include/uapi/loopmq.h"

#ifndef BLKGETDISKSEQ
#define BLKGETDISKSEQ _IOR(0x12, 128, __u64)
#endif

#define MAXE 256
#define BS 4096
#define PATTERN 0x6c6d712d6f70656eULL	/* "lmq-open" */

/* ---- outcome counters ---- */

enum {
	C_ADD, C_REMOVE, C_OPEN, C_STATUS, C_SIZE, C_SEQ, C_STALE_STATUS,
	C_STALE_SETFD, C_CHANGEFD, C_VERIFY, C_CONFIGURE, C_CLRFD, C_SUBMIT,
	C_READ, C_UNBIND, C_NR
};

static struct cat {
	const char *name;
	unsigned long ok;
	unsigned long err[MAXE];
	int allow[MAXE];
	int used;
} cats[C_NR] = {
	[C_ADD] = { "LOOP_CTL_ADD" },
	[C_REMOVE] = { "LOOP_CTL_REMOVE" },
	[C_OPEN] = { "open" },
	[C_STATUS] = { "LOOP_GET_STATUS64" },
	[C_SIZE] = { "BLKGETSIZE64" },
	[C_SEQ] = { "BLKGETDISKSEQ" },
	[C_STALE_STATUS] = { "stale:LOOP_GET_STATUS64" },
	[C_STALE_SETFD] = { "stale:LOOP_SET_FD" },
	[C_CHANGEFD] = { "LOOP_CHANGE_FD" },
	[C_VERIFY] = { "verify-read" },
	[C_CONFIGURE] = { "LOOP_CONFIGURE" },
	[C_CLRFD] = { "LOOP_CLR_FD" },
	[C_SUBMIT] = { "io_submit" },
	[C_READ] = { "aio-read" },
	[C_UNBIND] = { "unbound-after-close" },
};

static unsigned long unexpected;
static volatile sig_atomic_t stop;
static const char *mode;

/* The errno names in @list (comma separated) are expected for @c. */
static void allow(int c, const char *list)
{
	char *dup = strdup(list), *tok, *save = NULL;

	cats[c].used = 1;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int e = errnum(tok);

		if (e < 0 || e >= MAXE) {
			fprintf(stderr, "lmq-openrace: unknown errno name %s\n", tok);
			exit(2);
		}
		cats[c].allow[e] = 1;
	}
	free(dup);
}

/* Count one outcome of @c: rc >= 0 is success, else @err.  Thread-safe. */
static void note(int c, long rc, int err)
{
	cats[c].used = 1;
	if (rc >= 0) {
		__atomic_add_fetch(&cats[c].ok, 1, __ATOMIC_RELAXED);
		return;
	}
	if (err <= 0 || err >= MAXE)
		err = MAXE - 1;
	__atomic_add_fetch(&cats[c].err[err], 1, __ATOMIC_RELAXED);
	if (!cats[c].allow[err] &&
	    __atomic_add_fetch(&unexpected, 1, __ATOMIC_RELAXED) <= 10)
		fprintf(stderr, "lmq-openrace %s: %s: unexpected %s\n", mode,
			cats[c].name, errname(err));
}

/* An outcome that is wrong whatever the errno (bad data, a success). */
static void __attribute__((format(printf, 1, 2))) bad(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_add_fetch(&unexpected, 1, __ATOMIC_RELAXED) <= 10) {
		fprintf(stderr, "lmq-openrace %s: ", mode);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
}

static void print_counts(void)
{
	int c, e;

	for (c = 0; c < C_NR; c++) {
		if (!cats[c].used)
			continue;
		printf("lmq-openrace %s: %s ok=%lu", mode, cats[c].name, cats[c].ok);
		for (e = 1; e < MAXE; e++)
			if (cats[c].err[e])
				printf(" %s=%lu%s", errname(e), cats[c].err[e],
				       cats[c].allow[e] ? "" : "(unexpected)");
		printf("\n");
	}
}

/* ---- helpers ---- */

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void on_alarm(int sig)
{
	static const char m[] = "lmq-openrace: HANG: one call took 60 s\n";

	(void)sig;
	if (write(2, m, sizeof(m) - 1) < 0)
		_exit(3);
	_exit(3);
}

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int xopen(const char *p, int flags)
{
	int fd = open(p, flags | O_CLOEXEC, 0644);

	if (fd < 0) {
		fprintf(stderr, "lmq-openrace: open %s: %s\n", p, strerror(errno));
		exit(2);
	}
	return fd;
}

/* Read a small sysfs file as a number; -1 when it cannot be read. */
static long long sysfs_num(const char *path)
{
	char buf[64];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtoll(buf, NULL, 10);
}

static void fill_pattern(uint64_t *p, uint64_t off, size_t len)
{
	size_t i;

	for (i = 0; i < len / 8; i++)
		p[i] = (off + 8 * i) ^ PATTERN;
}

/* Index of the first wrong word of a read at @off, or -1. */
static long check_pattern(const uint64_t *p, uint64_t off, size_t len)
{
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (p[i] != ((off + 8 * i) ^ PATTERN))
			return (long)i;
	return -1;
}

/* ---- remove: LOOP_CTL_REMOVE / ADD against opens ---- */

static int r_ctl, r_index, r_bfd;
static char r_path[256];
static double r_end;
/* Remover progress: iteration r_gen started; r_done finished (add included). */
static unsigned long r_gen, r_done;
static unsigned long r_stale, r_stale_bound;

/* Pin the calling thread to @cpu (when there is such a CPU). */
static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= sysconf(_SC_NPROCESSORS_ONLN))
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/*
 * The remover and the first opener work in lock step, one round per open:
 * the opener announces an open (r_ticket), the remover answers (r_go) with
 * a delay d for this round, and starts LOOP_CTL_REMOVE d after that (with
 * d < 0 the opener starts its open(2) -d later instead).  The remover
 * adapts d so that its check for openers falls where the open is: not
 * before ->open (the open fails or finds the next device: too early), not
 * after the opener was counted (EBUSY: too late), but in between, where
 * the open succeeds and the remove removes the device under it (a hit:
 * the opener holds a "stale" device).  The opener holds its descriptor
 * until the remover has finished the round (the remove and the re-add),
 * then checks whether its device was removed.  Further openers run
 * freely, with pauses, like blkid; rounds during which they held the
 * device do not count for the adaptation.
 *
 * Two placements.  By default the remover spins on another CPU than the
 * opener.  With r_samecpu (when the kernel preempts fully, see
 * /sys/kernel/debug/sched/preempt), the remover is a SCHED_FIFO thread on
 * the opener's CPU that sleeps until d after the announcement: the timer
 * interrupt preempts the opener wherever it is in the kernel, and the
 * remove runs right there.  Preempted while holding the device's mutex
 * in ->open, the opener wakes the remover when it drops it, and the remover
 * then preempts it again before it is counted.  That needs no luck with
 * two virtual CPUs running at the same time (under TCG on a loaded host,
 * they mostly take turns).
 */
static int r_ticket, r_go, r_finished, r_result[1024];	/* futex words */
static unsigned long r_o2;
static double r_delay = 0, r_round_delay, r_delay_min = 1, r_delay_max = -1;
static int r_quit, r_samecpu;
static unsigned long r_want;	/* LMQ_OPENRACE_HITS: stop after that many */
static unsigned long r_early, r_late, r_hits, r_rounds;
/* adaptation steps and jitter, in seconds */
static double r_up = 2e-6, r_down = 0.7e-6, r_jitter = 20e-6;

static void spin_until(double t)
{
	while (now() < t)
		;
}

static void fwait(int *addr, int val, long usec)
{
	struct timespec ts = { usec / 1000000, (usec % 1000000) * 1000 };

	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void fwake(int *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static void sleep_until(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void *remover(void *arg)
{
	uint64_t seed = 0x853c49e6748fea9bULL ^ (uint64_t)getpid();
	double step = 20e-6;
	int last = 0, t, dir = 0;

	(void)arg;
	if (r_samecpu) {
		struct sched_param sp = { .sched_priority = 1 };

		pin(0);
		prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			perror("lmq-openrace: SCHED_FIFO");
	} else {
		pin(1);
	}
	while (!stop && now() < r_end &&
	       !(r_want && __atomic_load_n(&r_stale, __ATOMIC_RELAXED) >= r_want)) {
		unsigned long o2a, o2b;
		double d, limit;
		long rc;
		int err, res;

		limit = now() + 0.5;
		while ((t = __atomic_load_n(&r_ticket, __ATOMIC_SEQ_CST)) <= last &&
		       now() < limit) {
			if (r_samecpu)
				fwait(&r_ticket, t, 50000);
			else
				sched_yield();
		}
		if (t <= last)
			t = 0;		/* no opener: remove anyway */
		d = r_delay + r_jitter * (((double)(rnd(&seed) % 2001) - 1000) / 1000);
		if (r_samecpu && d < 0)
			d = 0;
		o2a = __atomic_load_n(&r_o2, __ATOMIC_SEQ_CST);
		if (t) {
			last = t;
			r_round_delay = d;
			__atomic_store_n(&r_go, t, __ATOMIC_SEQ_CST);
			if (r_samecpu)
				sleep_until(now() + d);
			else if (d > 0)
				spin_until(now() + d);
		}
		__atomic_add_fetch(&r_gen, 1, __ATOMIC_SEQ_CST);
		alarm(60);
		rc = ioctl(r_ctl, LOOP_CTL_REMOVE, r_index);
		err = errno;
		o2b = __atomic_load_n(&r_o2, __ATOMIC_SEQ_CST);
		note(C_REMOVE, rc, err);
		if (rc == 0 || err == ENODEV) {
			rc = ioctl(r_ctl, LOOP_CTL_ADD, r_index);
			note(C_ADD, rc, errno);
			rc = 0;
		} else {
			rc = -1;
		}
		alarm(0);
		__atomic_add_fetch(&r_done, 1, __ATOMIC_SEQ_CST);
		if (!t)
			continue;
		__atomic_store_n(&r_finished, t, __ATOMIC_SEQ_CST);
		limit = now() + 2;
		while (!(res = __atomic_load_n(&r_result[t % 1024], __ATOMIC_SEQ_CST)) &&
		       now() < limit) {
			if (r_samecpu)
				fwait(&r_result[t % 1024], 0, 50000);
			else
				sched_yield();
		}
		r_rounds++;
		if (res == 3)
			r_hits++;
		/* another opener held the device: says nothing about d */
		if (!res || (o2a & 1) || o2a != o2b)
			continue;
		/*
		 * A step that grows while the answer stays the same and
		 * shrinks when it flips; later steps are smaller than earlier
		 * ones (r_down < r_up), so that most rounds end in a cheap
		 * EBUSY rather than a remove and an add.
		 */
		if (rc < 0) {
			r_late++;
			step = dir < 0 ? step * 1.5 : step / 2;
			dir = -1;
			r_delay -= step * r_down / r_up;
		} else if (res != 3) {
			r_early++;
			step = dir > 0 ? step * 1.5 : step / 2;
			dir = 1;
			r_delay += step;
		}
		if (step < r_up)
			step = r_up;
		if (step > 200e-6)
			step = 200e-6;
		if (r_delay < -0.002)
			r_delay = -0.002;
		if (r_delay > 0.005)
			r_delay = 0.005;
		if (r_delay < r_delay_min)
			r_delay_min = r_delay;
		if (r_delay > r_delay_max)
			r_delay_max = r_delay;
	}
	__atomic_store_n(&r_quit, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Was the disk behind @fd, whose diskseq was @seq, removed? */
static int removed_under_us(int fd, __u64 seq)
{
	char sys[128];
	struct stat st;

	if (fstat(fd, &st))
		return 0;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/diskseq",
		 major(st.st_rdev), minor(st.st_rdev));
	return sysfs_num(sys) != (long long)seq;
}

static void set_result(int my, int v)
{
	__atomic_store_n(&r_result[my % 1024], v, __ATOMIC_SEQ_CST);
	if (r_samecpu)
		fwake(&r_result[my % 1024]);
}

static void *opener(void *arg)
{
	int first = arg != NULL;
	uint64_t seed = 0x5851f42d4c957f2dULL ^ (uint64_t)(uintptr_t)&seed;

	pin(first || !r_samecpu ? 0 : 1);
	while (!stop && now() < r_end && !__atomic_load_n(&r_quit, __ATOMIC_SEQ_CST)) {
		struct loop_info64 li;
		unsigned long long size = 1;
		__u64 seq = 0;
		double limit;
		int fd, stale = 0, my = 0;
		long rc;

		if (first) {
			my = __atomic_load_n(&r_ticket, __ATOMIC_SEQ_CST) + 1;
			__atomic_store_n(&r_result[my % 1024], 0, __ATOMIC_SEQ_CST);
			__atomic_store_n(&r_ticket, my, __ATOMIC_SEQ_CST);
			if (r_samecpu) {
				/* the remover preempts us, arms its timer, sleeps */
				fwake(&r_ticket);
			} else {
				limit = now() + 1;
				while (__atomic_load_n(&r_go, __ATOMIC_SEQ_CST) < my &&
				       !__atomic_load_n(&r_quit, __ATOMIC_SEQ_CST) &&
				       now() < limit)
					sched_yield();
				if (__atomic_load_n(&r_go, __ATOMIC_SEQ_CST) == my &&
				    r_round_delay < 0)
					spin_until(now() - r_round_delay);
			}
		} else {
			/* like blkid: now and then, not all the time */
			usleep(rnd(&seed) % 2000);
		}
		fd = open(r_path, O_RDONLY | O_CLOEXEC);
		note(C_OPEN, fd, errno);
		if (fd < 0) {
			if (first)
				set_result(my, 1);
			continue;
		}
		if (!first)
			__atomic_add_fetch(&r_o2, 1, __ATOMIC_SEQ_CST);

		rc = ioctl(fd, LOOP_GET_STATUS64, &li);
		note(C_STATUS, rc, errno);
		if (rc == 0)
			bad("LOOP_GET_STATUS64 succeeded on a device nobody bound");
		rc = ioctl(fd, BLKGETSIZE64, &size);
		note(C_SIZE, rc, errno);
		if (rc == 0 && size)
			bad("BLKGETSIZE64: unbound device of size %llu", size);
		rc = ioctl(fd, BLKGETDISKSEQ, &seq);
		note(C_SEQ, rc, errno);

		/* until the round (remove, re-add) is over */
		limit = now() + 30;
		if (first) {
			while (__atomic_load_n(&r_finished, __ATOMIC_SEQ_CST) < my &&
			       !__atomic_load_n(&r_quit, __ATOMIC_SEQ_CST) && now() < limit)
				sched_yield();
		} else {
			unsigned long gen = __atomic_load_n(&r_gen, __ATOMIC_SEQ_CST);

			while (__atomic_load_n(&r_done, __ATOMIC_SEQ_CST) < gen &&
			       now() < limit)
				sched_yield();
		}
		if (rc == 0 && removed_under_us(fd, seq)) {
			/*
			 * Our device was removed while we held it open: it
			 * must refuse everything now, and close cleanly.
			 */
			stale = 1;
			__atomic_add_fetch(&r_stale, 1, __ATOMIC_RELAXED);
			rc = ioctl(fd, LOOP_GET_STATUS64, &li);
			note(C_STALE_STATUS, rc, errno);
			if (rc == 0)
				bad("LOOP_GET_STATUS64 succeeded on a removed device");
			rc = ioctl(fd, LOOP_SET_FD, r_bfd);
			note(C_STALE_SETFD, rc, errno);
			if (rc == 0) {
				__atomic_add_fetch(&r_stale_bound, 1, __ATOMIC_RELAXED);
				bad("LOOP_SET_FD bound a removed device (index %d)", r_index);
				ioctl(fd, LOOP_CLR_FD, 0);
			}
		}
		close(fd);
		if (first)
			set_result(my, stale ? 3 : 2);
		else
			__atomic_add_fetch(&r_o2, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

/* Does the kernel preempt fully (PREEMPT_DYNAMIC set to "full")? */
static int preempt_full(void)
{
	char buf[128] = "";
	ssize_t n;
	int fd = open("/sys/kernel/debug/sched/preempt", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 && strstr(buf, "(full)") != NULL;
}

static int run_remove(int argc, char **argv)
{
	int nopen = argc > 5 ? atoi(argv[5]) : 1, i;
	pthread_t th[17];
	double t0;
	long rc;

	if (argc < 5 || nopen < 1 || nopen > 16)
		return 2;
	r_ctl = xopen(argv[1], O_RDWR);
	r_index = atoi(argv[3]);
	r_samecpu = preempt_full();
	if (getenv("LMQ_OPENRACE_SAMECPU"))
		r_samecpu = atoi(getenv("LMQ_OPENRACE_SAMECPU"));
	if (getenv("LMQ_OPENRACE_HITS"))
		r_want = strtoul(getenv("LMQ_OPENRACE_HITS"), NULL, 0);
	if (getenv("LMQ_OPENRACE_TUNE")) {	/* UP,DOWN,JITTER in us */
		r_up *= 1e6;
		r_down *= 1e6;
		r_jitter *= 1e6;
		sscanf(getenv("LMQ_OPENRACE_TUNE"), "%lf,%lf,%lf", &r_up, &r_down, &r_jitter);
		r_up /= 1e6;
		r_down /= 1e6;
		r_jitter /= 1e6;
	}
	snprintf(r_path, sizeof(r_path), "%s%d", argv[2], r_index);
	/* a file to try binding a removed device to */
	r_bfd = memfd_create("lmq-openrace", MFD_CLOEXEC);
	if (r_bfd < 0 || ftruncate(r_bfd, 1 << 20)) {
		perror("lmq-openrace: memfd");
		return 2;
	}
	allow(C_ADD, "EEXIST");
	allow(C_REMOVE, "EBUSY,ENODEV");
	allow(C_OPEN, "ENOENT,ENXIO");
	allow(C_STATUS, "ENXIO");
	allow(C_SIZE, "");
	allow(C_SEQ, "");
	allow(C_STALE_STATUS, "ENXIO,ENODEV");
	allow(C_STALE_SETFD, "EBUSY,ENXIO,ENODEV");
	cats[C_STALE_STATUS].used = cats[C_STALE_SETFD].used = 1;

	rc = ioctl(r_ctl, LOOP_CTL_ADD, r_index);
	note(C_ADD, rc, errno);
	t0 = now();
	r_end = t0 + atof(argv[4]);
	pthread_create(&th[0], NULL, remover, NULL);
	for (i = 1; i <= nopen; i++)
		pthread_create(&th[i], NULL, opener, i == 1 ? &th[i] : NULL);
	for (i = 0; i <= nopen; i++)
		pthread_join(th[i], NULL);
	/* leave INDEX removed */
	for (i = 0; i < 100; i++) {
		rc = ioctl(r_ctl, LOOP_CTL_REMOVE, r_index);
		if (rc == 0 || errno == ENODEV)
			break;
		usleep(50000);
	}
	if (rc && errno != ENODEV)
		fprintf(stderr, "lmq-openrace remove: index %d not removed at the end: %s\n",
			r_index, errname(errno));
	print_counts();
	printf("lmq-openrace remove: remover %s; remove started %.0f us after the open (range %.0f..%.0f), rounds: %lu, %lu too early, %lu too late, %lu hit the window\n",
	       r_samecpu ? "on the opener's CPU (SCHED_FIFO, timer)" : "on another CPU",
	       r_delay * 1e6, r_delay_min * 1e6, r_delay_max * 1e6, r_rounds, r_early, r_late, r_hits);
	printf("lmq-openrace remove: %.1f s, stale=%lu (held a device removed under it), stale_bound=%lu, unexpected=%lu\n",
	       now() - t0, r_stale, r_stale_bound, unexpected);
	return unexpected ? 1 : 0;
}

/* ---- partopen: open/close a partition node ---- */

static const char *p_path;
static double p_end;

static void *partopener(void *arg)
{
	(void)arg;
	while (!stop && now() < p_end) {
		int fd = open(p_path, O_RDONLY | O_CLOEXEC);

		note(C_OPEN, fd, errno);
		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

static int run_partopen(int argc, char **argv)
{
	int n = argc > 3 ? atoi(argv[3]) : 2, i;
	pthread_t th[16];
	double t0;

	if (argc < 3 || n < 1 || n > 16)
		return 2;
	p_path = argv[1];
	allow(C_OPEN, "ENOENT,ENXIO");
	t0 = now();
	p_end = t0 + atof(argv[2]);
	for (i = 0; i < n; i++)
		pthread_create(&th[i], NULL, partopener, NULL);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	print_counts();
	printf("lmq-openrace partopen: %.1f s, unexpected=%lu\n", now() - t0, unexpected);
	return unexpected ? 1 : 0;
}

/* ---- mkimg ---- */

static int run_mkimg(int argc, char **argv)
{
	uint64_t *buf;
	uint64_t off, size;
	int fd;

	if (argc < 3)
		return 2;
	size = strtoull(argv[2], NULL, 0) << 20;
	fd = xopen(argv[1], O_WRONLY | O_CREAT | O_TRUNC);
	buf = malloc(1 << 20);
	if (!buf)
		return 2;
	for (off = 0; off < size; off += 1 << 20) {
		fill_pattern(buf, off, 1 << 20);
		if (pwrite(fd, buf, 1 << 20, off) != 1 << 20) {
			perror("lmq-openrace mkimg: write");
			return 2;
		}
	}
	if (fsync(fd) || close(fd)) {
		perror("lmq-openrace mkimg");
		return 2;
	}
	free(buf);
	return 0;
}

/* ---- changefd ---- */

static int run_changefd(int argc, char **argv)
{
	unsigned long long size = 0;
	uint64_t seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
	uint64_t *buf;
	double t0, end;
	int fd, vfd, i;

	if (argc < 5)
		return 2;
	allow(C_CHANGEFD, "");
	allow(C_VERIFY, "");
	fd = xopen(argv[1], O_RDONLY);
	vfd = xopen(argv[1], O_RDONLY | O_DIRECT);
	if (ioctl(fd, BLKGETSIZE64, &size) || size < BS) {
		fprintf(stderr, "lmq-openrace changefd: %s: no size\n", argv[1]);
		return 2;
	}
	if (posix_memalign((void **)&buf, BS, BS))
		return 2;
	signal(SIGALRM, on_alarm);
	t0 = now();
	end = t0 + atof(argv[4]);
	for (i = 0; !stop && now() < end; i++) {
		const char *img = argv[2 + ((i + 1) & 1)];
		int ifd = xopen(img, O_RDONLY);
		uint64_t off;
		ssize_t n;
		long rc;
		long w;

		alarm(60);
		rc = ioctl(fd, LOOP_CHANGE_FD, ifd);
		note(C_CHANGEFD, rc, errno);
		/* the device holds the only reference to the file now */
		close(ifd);
		off = (rnd(&seed) % (size / BS)) * BS;
		n = pread(vfd, buf, BS, off);
		alarm(0);
		note(C_VERIFY, n < 0 ? -1 : 0, errno);
		w = n == BS ? check_pattern(buf, off, BS) : -1;
		if (n >= 0 && n != BS)
			bad("verify-read: short read of %zd bytes", n);
		else if (w >= 0)
			bad("verify-read: wrong data at byte %llu",
			    (unsigned long long)(off + 8 * w));
	}
	print_counts();
	printf("lmq-openrace changefd: %.1f s, %d changes, unexpected=%lu\n",
	       now() - t0, i, unexpected);
	return unexpected ? 1 : 0;
}

/* ---- aiodetach ---- */

static long sys_io_setup(unsigned int nr, aio_context_t *ctx)
{
	return syscall(SYS_io_setup, nr, ctx);
}

static long sys_io_submit(aio_context_t ctx, long nr, struct iocb **iocbs)
{
	return syscall(SYS_io_submit, ctx, nr, iocbs);
}

static long sys_io_getevents(aio_context_t ctx, long min, long max,
			     struct io_event *ev, struct timespec *ts)
{
	return syscall(SYS_io_getevents, ctx, min, max, ev, ts);
}

static int run_aiodetach(int argc, char **argv)
{
	int depth = argc > 4 ? atoi(argv[4]) : 32;
	uint64_t seed = 0x2545f4914f6cdd1dULL ^ (uint64_t)getpid();
	unsigned long cycles = 0, eof = 0, good = 0, early = 0;
	struct iocb *cb, **cbp;
	struct io_event *ev;
	aio_context_t ctx = 0;
	char *bufs, bound[160];
	double t0, end;
	struct stat st;
	off_t isize;
	int i;

	if (argc < 4 || depth < 1 || depth > 256)
		return 2;
	allow(C_OPEN, "");
	allow(C_CONFIGURE, "");
	allow(C_CLRFD, "");
	allow(C_SUBMIT, "EAGAIN");
	allow(C_READ, "EIO");
	allow(C_UNBIND, "");
	if (stat(argv[1], &st) || !S_ISBLK(st.st_mode)) {
		fprintf(stderr, "lmq-openrace aiodetach: %s: not a block device\n", argv[1]);
		return 2;
	}
	snprintf(bound, sizeof(bound), "/sys/dev/block/%u:%u/loop/backing_file",
		 major(st.st_rdev), minor(st.st_rdev));
	if (stat(argv[2], &st) || st.st_size < BS)
		return 2;
	isize = st.st_size;
	if (sys_io_setup(depth, &ctx)) {
		perror("lmq-openrace aiodetach: io_setup");
		return 2;
	}
	cb = calloc(depth, sizeof(*cb));
	cbp = calloc(depth, sizeof(*cbp));
	ev = calloc(depth, sizeof(*ev));
	if (!cb || !cbp || !ev || posix_memalign((void **)&bufs, BS, (size_t)depth * BS))
		return 2;
	signal(SIGALRM, on_alarm);
	t0 = now();
	end = t0 + atof(argv[3]);
	while (!stop && now() < end) {
		struct loop_config cfg;
		double t_clr, t_stop, limit;
		unsigned long long size = 0;
		uint64_t nblk;
		int fd, ifd, inflight = 0, cleared = 0;
		long rc;

		alarm(60);
		fd = open(argv[1], O_RDONLY | O_DIRECT | O_CLOEXEC);
		note(C_OPEN, fd, errno);
		if (fd < 0) {
			alarm(0);
			usleep(100000);
			continue;
		}
		ifd = xopen(argv[2], O_RDONLY);
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = ifd;
		cfg.info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_DIRECT_IO;
		rc = ioctl(fd, LOOP_CONFIGURE, &cfg);
		note(C_CONFIGURE, rc, errno);
		close(ifd);
		alarm(0);
		if (rc) {
			close(fd);
			usleep(100000);
			continue;
		}
		if (ioctl(fd, BLKGETSIZE64, &size) || size != (unsigned long long)isize)
			bad("BLKGETSIZE64: device size %llu after LOOP_CONFIGURE", size);
		nblk = isize / BS;
		cycles++;
		t_clr = now() + 0.020 + (rnd(&seed) % 130) / 1000.0;
		t_stop = t_clr + 0.030;
		for (i = 0; i < depth; i++) {
			memset(&cb[i], 0, sizeof(cb[i]));
			cb[i].aio_data = i;
			cb[i].aio_lio_opcode = IOCB_CMD_PREAD;
			cb[i].aio_fildes = fd;
			cb[i].aio_buf = (uint64_t)(uintptr_t)(bufs + (size_t)i * BS);
			cb[i].aio_nbytes = BS;
			cb[i].aio_offset = (rnd(&seed) % nblk) * BS;
			cbp[i] = &cb[i];
		}
		rc = sys_io_submit(ctx, depth, cbp);
		note(C_SUBMIT, rc, errno);
		inflight = rc > 0 ? rc : 0;
		while (inflight > 0) {
			struct timespec ts = { 5, 0 };
			long n, k;

			n = sys_io_getevents(ctx, 1, depth, ev, &ts);
			if (n <= 0) {
				if (n < 0 && errno == EINTR)
					continue;
				fprintf(stderr, "lmq-openrace aiodetach: HANG: %d reads in flight for 5 s\n",
					inflight);
				return 3;
			}
			inflight -= n;
			if (!cleared && now() >= t_clr) {
				alarm(60);
				rc = ioctl(fd, LOOP_CLR_FD, 0);
				alarm(0);
				note(C_CLRFD, rc, errno);
				cleared = 1;
			}
			for (k = 0; k < n; k++) {
				int s = (int)ev[k].data;
				uint64_t off = cb[s].aio_offset;
				long long res = ev[k].res;
				long w;

				if (res == BS) {
					note(C_READ, 0, 0);
					w = check_pattern((uint64_t *)(bufs + (size_t)s * BS), off, BS);
					if (w >= 0)
						bad("aio-read: wrong data at byte %llu",
						    (unsigned long long)(off + 8 * w));
					else
						good++;
					if (!cleared)
						early++;
				} else if (res == 0) {
					eof++;
					note(C_READ, 0, 0);
					if (!cleared)
						bad("aio-read: EOF at %llu before the detach",
						    (unsigned long long)off);
				} else if (res < 0) {
					note(C_READ, -1, (int)-res);
				} else {
					bad("aio-read: short read of %lld bytes", res);
				}
				if (now() < t_stop) {
					struct iocb *one = &cb[s];

					one->aio_offset = (rnd(&seed) % nblk) * BS;
					rc = sys_io_submit(ctx, 1, &one);
					note(C_SUBMIT, rc, errno);
					if (rc == 1)
						inflight++;
				}
			}
		}
		if (!cleared) {
			rc = ioctl(fd, LOOP_CLR_FD, 0);
			note(C_CLRFD, rc, errno);
		}
		close(fd);
		/* detached at the latest at this last close */
		limit = now() + 5;
		while (access(bound, F_OK) == 0 && now() < limit)
			usleep(2000);
		rc = access(bound, F_OK) == 0 ? -1 : 0;
		note(C_UNBIND, rc, EBUSY);
		if (rc)
			break;
	}
	print_counts();
	printf("lmq-openrace aiodetach: %.1f s, %lu cycles, %lu reads checked good (%lu before LOOP_CLR_FD), %lu EOF, unexpected=%lu\n",
	       now() - t0, cycles, good, early, eof, unexpected);
	return unexpected ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa;

	if (argc < 2) {
		fprintf(stderr, "usage: lmq-openrace remove|partopen|mkimg|changefd|aiodetach ARGS... (see source)\n");
		return 2;
	}
	mode = argv[1];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGALRM, on_alarm);
	setvbuf(stdout, NULL, _IOLBF, 0);
	argv++;
	argc--;
	if (!strcmp(mode, "remove"))
		return run_remove(argc, argv);
	if (!strcmp(mode, "partopen"))
		return run_partopen(argc, argv);
	if (!strcmp(mode, "mkimg"))
		return run_mkimg(argc, argv);
	if (!strcmp(mode, "changefd"))
		return run_changefd(argc, argv);
	if (!strcmp(mode, "aiodetach"))
		return run_aiodetach(argc, argv);
	fprintf(stderr, "lmq-openrace: unknown mode %s\n", mode);
	return 2;
}

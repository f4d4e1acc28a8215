// SPDX-License-Identifier: GPL-2.0
/*
 * lmq-crashwriter: the guest half of the crash-consistency test
 * (tests/crash/run).  One program writes, the same program checks, so the
 * two can never disagree on the schedule.
 *
 *   lmq-crashwriter write [-b] [-x] [-n N] -s SEED -t TRIAL -l CHAN DEV
 *   lmq-crashwriter check [-b] LOG DEV
 *   lmq-crashwriter durable LOG
 *     -b        buffered I/O (default O_DIRECT)
 *     -n N      write: stop (without a flush) after N writes (default: never)
 *     -x        write: never sync, but log the sync points as if it did: the
 *               negative control, whose check must report losses
 *
 * The schedule is a pure function of SEED and the device size: batches of
 * 1-16 writes of 4 KiB to distinct random blocks, submitted together with
 * io_submit (queue depth = batch size) and all completed before the next
 * batch.  After a batch the schedule says "nothing", "fdatasync" (covers
 * every write so far: REQ_PREFLUSH) or the batch was written with RWF_DSYNC
 * (FUA on a block device; covers that batch's writes only).  After a sync
 * point completes, the writer appends "S <point> <last seq>" to CHAN (a
 * serial port the host keeps; tcdrain before it goes on), so a record on the
 * host proves the sync returned.
 *
 * Every 512-byte sector holds a header (magic, trial, seed, write sequence
 * number, block, sector index) and a payload derived from them, so a torn
 * write, stale data, another block's data or garbage is told apart per
 * sector.
 *
 * check: from LOG (the host's copy of CHAN: the last "TRIAL" line and the
 * "S" lines after it) it replays the schedule to the last logged sync point
 * P, then to sync point P+1 (the writer can not have gone further).  Each
 * sector of each block must hold a write of that block whose sequence is at
 * least the block's last durable write and at most the end of point P+1; a
 * block with no durable write may also be all zeroes.  Anything else is a
 * lost sector, reported with block, sector, expected and found.  Exit 0 when
 * nothing was lost, 1 on a loss, 2 on usage / I/O errors.
 *
 * durable: prints "block seq" for every block with a durable write (for the
 * checker's self-test).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>

#include "lmq-common.h"

#define BLK		4096
#define SECT		512
#define SPB		(BLK / SECT)
#define MAXBATCH	16
#define MAGIC		0x4c4d5143u	/* "LMQC" */

enum { SYNC_NONE, SYNC_FSYNC, SYNC_FUA };

struct sect_hdr {
	uint32_t magic;
	uint32_t trial;
	uint64_t seed;
	uint64_t seq;
	uint32_t block;
	uint32_t sector;
};

struct sched {
	uint64_t rng;
	uint64_t seq;		/* last sequence number handed out */
	uint32_t nblocks;
	uint32_t npoints;	/* sync points so far */
};

struct batch {
	uint64_t first;		/* sequence number of blk[0] */
	unsigned int n;
	uint32_t blk[MAXBATCH];
	int sync;		/* SYNC_* */
	uint32_t point;		/* sync point number, if sync */
};

static void next_batch(struct sched *s, struct batch *b)
{
	unsigned int i, j;

	b->n = 1 + splitmix(&s->rng) % MAXBATCH;
	if (b->n > s->nblocks)
		b->n = s->nblocks;
	for (i = 0; i < b->n; i++) {
again:
		b->blk[i] = splitmix(&s->rng) % s->nblocks;
		for (j = 0; j < i; j++)
			if (b->blk[j] == b->blk[i])
				goto again;
	}
	b->first = s->seq + 1;
	s->seq += b->n;
	switch (splitmix(&s->rng) % 8) {
	case 0:
		b->sync = SYNC_FUA;
		break;
	case 1: case 2:
		b->sync = SYNC_FSYNC;
		break;
	default:
		b->sync = SYNC_NONE;
	}
	b->point = b->sync ? ++s->npoints : 0;
}

static void fill_sector(unsigned char *p, uint32_t trial, uint64_t seed,
			uint64_t seq, uint32_t block, uint32_t sector)
{
	struct sect_hdr h = { MAGIC, trial, seed, seq, block, sector };
	uint64_t st = seed ^ (seq * 0x100000001b3ull) ^ ((uint64_t)sector << 56);
	size_t off;

	memcpy(p, &h, sizeof(h));
	for (off = sizeof(h); off + 8 <= SECT; off += 8) {
		uint64_t v = splitmix(&st);

		memcpy(p + off, &v, 8);
	}
}

static uint64_t dev_blocks(int fd)
{
	struct stat st;
	uint64_t size;

	if (fstat(fd, &st))
		die("fstat");
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size))
			die("BLKGETSIZE64");
	} else {
		size = st.st_size;
	}
	return size / BLK;
}

static int open_dev(const char *path, int flags, int buffered)
{
	int fd = open(path, flags | (buffered ? 0 : O_DIRECT));

	if (fd < 0)
		die(path);
	return fd;
}

/* one line on the host-kept channel; on the host before this returns */
static void chan_put(int fd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void chan_put(int fd, const char *fmt, ...)
{
	char line[128];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (write(fd, line, len) != len)
		die("write to channel");
	if (tcdrain(fd) && errno != ENOTTY && errno != EINVAL)
		die("tcdrain");
}

static long sys_io_setup(unsigned int nr, aio_context_t *ctx)
{
	return syscall(SYS_io_setup, nr, ctx);
}

static long sys_io_submit(aio_context_t ctx, long n, struct iocb **iocbs)
{
	return syscall(SYS_io_submit, ctx, n, iocbs);
}

static long sys_io_getevents(aio_context_t ctx, long min, long max,
			     struct io_event *ev)
{
	return syscall(SYS_io_getevents, ctx, min, max, ev, NULL);
}

static int do_write(const char *dev, const char *chan, uint64_t seed,
		    uint32_t trial, uint64_t maxw, int buffered, int nosync)
{
	struct iocb cbs[MAXBATCH], *cbp[MAXBATCH];
	struct io_event ev[MAXBATCH];
	struct sched s = { 0 };
	aio_context_t ctx = 0;
	unsigned char *buf;
	int fd, cfd;
	unsigned int i, k;
	struct batch b;
	long got;

	fd = open_dev(dev, O_RDWR, buffered);
	cfd = open(chan, O_WRONLY | O_APPEND | O_CREAT | O_NOCTTY, 0644);
	if (cfd < 0)
		die(chan);
	if (isatty(cfd)) {
		struct termios t;

		if (tcgetattr(cfd, &t) == 0) {
			cfmakeraw(&t);
			tcsetattr(cfd, TCSANOW, &t);
		}
	}
	s.rng = seed;
	s.nblocks = dev_blocks(fd);
	if (s.nblocks < MAXBATCH) {
		fprintf(stderr, "%s: too small\n", dev);
		return 2;
	}
	if (posix_memalign((void **)&buf, BLK, (size_t)BLK * MAXBATCH))
		die("posix_memalign");
	if (sys_io_setup(MAXBATCH, &ctx))
		die("io_setup");
	chan_put(cfd, "TRIAL %u %" PRIu64 " %u\n", trial, seed, s.nblocks);
	chan_put(cfd, "RUNNING\n");
	for (;;) {
		if (maxw && s.seq >= maxw)
			break;
		next_batch(&s, &b);
		for (i = 0; i < b.n; i++) {
			unsigned char *p = buf + (size_t)i * BLK;

			for (k = 0; k < SPB; k++)
				fill_sector(p + k * SECT, trial, seed,
					    b.first + i, b.blk[i], k);
			memset(&cbs[i], 0, sizeof(cbs[i]));
			cbs[i].aio_fildes = fd;
			cbs[i].aio_lio_opcode = IOCB_CMD_PWRITE;
			cbs[i].aio_buf = (uintptr_t)p;
			cbs[i].aio_nbytes = BLK;
			cbs[i].aio_offset = (int64_t)b.blk[i] * BLK;
			if (b.sync == SYNC_FUA && !nosync)
				cbs[i].aio_rw_flags = RWF_DSYNC;
			cbp[i] = &cbs[i];
		}
		for (i = 0; i < b.n; ) {
			got = sys_io_submit(ctx, b.n - i, cbp + i);
			if (got <= 0)
				die("io_submit");
			i += got;
		}
		for (i = 0; i < b.n; ) {
			got = sys_io_getevents(ctx, 1, b.n - i, ev);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
				die("io_getevents");
			for (k = 0; k < got; k++)
				if (ev[k].res != BLK) {
					fprintf(stderr, "write failed: %lld\n",
						(long long)ev[k].res);
					return 2;
				}
			i += got;
		}
		if (b.sync == SYNC_FSYNC && !nosync && fdatasync(fd))
			die("fdatasync");
		if (b.sync)
			chan_put(cfd, "S %u %" PRIu64 "\n", b.point,
				 b.first + b.n - 1);
	}
	printf("lmq-crashwriter: stopped after %" PRIu64 " writes, %u sync points\n",
	       s.seq, s.npoints);
	return 0;
}

/* ---- check ------------------------------------------------------------ */

struct replay {
	uint32_t trial, nblocks, lastpoint;
	uint64_t seed;
	uint64_t nwrites;	/* writes up to the end of point lastpoint + 1 */
	uint64_t durable;	/* writes up to the last logged sync point */
	uint32_t *blk_of;	/* [seq] -> block */
	uint64_t *last_durable;	/* [block] -> seq or 0 */
	uint64_t ndurable;	/* blocks with a durable write */
};

static void replay_log(const char *logpath, struct replay *r)
{
	uint64_t cap = 1 << 16, fsync_upto = 0, lastseq = 0, seq;
	struct sched s = { 0 };
	char line[256];
	int have_trial = 0;
	uint32_t p;
	struct batch b;
	unsigned int i;
	FILE *f;

	f = fopen(logpath, "r");
	if (!f)
		die(logpath);
	memset(r, 0, sizeof(*r));
	while (fgets(line, sizeof(line), f)) {
		if (!strchr(line, '\n'))
			continue;	/* a partial line: the host cut it off */
		if (sscanf(line, "TRIAL %u %" SCNu64 " %u", &r->trial, &r->seed,
			   &r->nblocks) == 3) {
			have_trial = 1;
			r->lastpoint = 0;
			lastseq = 0;
		} else if (have_trial &&
			   sscanf(line, "S %u %" SCNu64, &p, &seq) == 2) {
			if (p != r->lastpoint + 1) {
				fprintf(stderr, "log: sync point %u after %u\n",
					p, r->lastpoint);
				exit(2);
			}
			r->lastpoint = p;
			lastseq = seq;
		}
	}
	fclose(f);
	if (!have_trial) {
		fprintf(stderr, "%s: no TRIAL line\n", logpath);
		exit(2);
	}
	s.rng = r->seed;
	s.nblocks = r->nblocks;
	r->blk_of = malloc(cap * sizeof(*r->blk_of));
	r->last_durable = calloc(r->nblocks, sizeof(*r->last_durable));
	if (!r->blk_of || !r->last_durable)
		die("malloc");
	r->blk_of[0] = UINT32_MAX;
	/* replay to the end of the first sync point the log does not have */
	do {
		next_batch(&s, &b);
		while (s.seq >= cap) {
			cap *= 2;
			r->blk_of = realloc(r->blk_of, cap * sizeof(*r->blk_of));
			if (!r->blk_of)
				die("realloc");
		}
		for (i = 0; i < b.n; i++)
			r->blk_of[b.first + i] = b.blk[i];
		if (b.point && b.point <= r->lastpoint) {
			if (b.point == r->lastpoint &&
			    b.first + b.n - 1 != lastseq) {
				fprintf(stderr, "log: point %u ends at %" PRIu64
					", the schedule says %" PRIu64 "\n",
					b.point, lastseq, b.first + b.n - 1);
				exit(2);
			}
			if (b.sync == SYNC_FSYNC)
				fsync_upto = b.first + b.n - 1;
			else	/* FUA: this batch only */
				for (i = 0; i < b.n; i++)
					r->last_durable[b.blk[i]] = b.first + i;
		}
		if (r->lastpoint && b.point == r->lastpoint)
			r->durable = s.seq;
	} while (b.point != r->lastpoint + 1);
	r->nwrites = s.seq;
	for (seq = 1; seq <= fsync_upto; seq++)
		if (r->last_durable[r->blk_of[seq]] < seq)
			r->last_durable[r->blk_of[seq]] = seq;
	for (i = 0; i < r->nblocks; i++)
		if (r->last_durable[i])
			r->ndurable++;
}

static int is_zero(const unsigned char *p, size_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

/* why sector k of block blk (data p) is not acceptable, or NULL */
static const char *judge(const struct replay *r, uint32_t blk, unsigned int k,
			 const unsigned char *p, char *why, size_t wlen)
{
	uint64_t want = r->last_durable[blk];
	unsigned char exp[SECT];
	struct sect_hdr h;

	if (is_zero(p, SECT)) {
		if (!want)
			return NULL;
		snprintf(why, wlen, "zeroes");
		return why;
	}
	memcpy(&h, p, sizeof(h));
	if (h.magic != MAGIC) {
		snprintf(why, wlen, "garbage (first bytes %08x)", h.magic);
		return why;
	}
	if (h.trial != r->trial || h.seed != r->seed) {
		snprintf(why, wlen, "data of another trial (%u, seed %" PRIu64
			 ")", h.trial, h.seed);
		return why;
	}
	if (h.block != blk || h.sector != k) {
		snprintf(why, wlen, "data of block %u sector %u seq %" PRIu64,
			 h.block, h.sector, h.seq);
		return why;
	}
	if (h.seq == 0 || h.seq > r->nwrites || r->blk_of[h.seq] != blk) {
		snprintf(why, wlen, "seq %" PRIu64 ", not a write of this block"
			 " (schedule ends at %" PRIu64 ")", h.seq, r->nwrites);
		return why;
	}
	fill_sector(exp, r->trial, r->seed, h.seq, blk, k);
	if (memcmp(exp, p, SECT)) {
		snprintf(why, wlen, "seq %" PRIu64 " with a corrupt payload",
			 h.seq);
		return why;
	}
	if (h.seq < want) {
		snprintf(why, wlen, "stale seq %" PRIu64, h.seq);
		return why;
	}
	return NULL;
}

static int do_check(const char *logpath, const char *dev, int buffered)
{
	uint64_t lost = 0, lostblk = 0, written = 0;
	unsigned char *buf;
	struct replay r;
	uint32_t blk;
	unsigned int k;
	char why[160];
	int fd, bad;

	replay_log(logpath, &r);
	fd = open_dev(dev, O_RDONLY, buffered);
	if (dev_blocks(fd) < r.nblocks) {
		fprintf(stderr, "%s: %" PRIu64 " blocks, the log says %u\n",
			dev, dev_blocks(fd), r.nblocks);
		return 2;
	}
	if (posix_memalign((void **)&buf, BLK, BLK))
		die("posix_memalign");
	for (blk = 0; blk < r.nblocks; blk++) {
		if (pread(fd, buf, BLK, (off_t)blk * BLK) != BLK)
			die("pread");
		if (!is_zero(buf, BLK))
			written++;
		bad = 0;
		for (k = 0; k < SPB; k++) {
			if (!judge(&r, blk, k, buf + k * SECT, why, sizeof(why)))
				continue;
			bad = 1;
			if (++lost <= 40)
				printf("LOST block %u sector %u: want seq >= %"
				       PRIu64 " (durable), found %s\n", blk, k,
				       r.last_durable[blk], why);
		}
		lostblk += bad;
	}
	if (lost > 40)
		printf("LOST ... %" PRIu64 " lost sectors in all\n", lost);
	printf("checked %u blocks (%" PRIu64 " non-zero): trial %u seed %" PRIu64
	       ", %u sync points logged, %" PRIu64 " durable writes to %"
	       PRIu64 " blocks, schedule to %" PRIu64 ", %" PRIu64
	       " lost sectors in %" PRIu64 " blocks\n", r.nblocks, written,
	       r.trial, r.seed, r.lastpoint, r.durable, r.ndurable, r.nwrites,
	       lost, lostblk);
	return lost ? 1 : 0;
}

static int do_durable(const char *logpath)
{
	struct replay r;
	uint32_t blk;

	replay_log(logpath, &r);
	for (blk = 0; blk < r.nblocks; blk++)
		if (r.last_durable[blk])
			printf("%u %" PRIu64 "\n", blk, r.last_durable[blk]);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: lmq-crashwriter write [-b] [-x] [-n N] -s SEED -t TRIAL -l CHAN DEV\n"
		"       lmq-crashwriter check [-b] LOG DEV\n"
		"       lmq-crashwriter durable LOG\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *cmd, *chan = NULL;
	uint64_t seed = 0, maxw = 0;
	uint32_t trial = 0;
	int c, buffered = 0, nosync = 0;

	if (argc < 2)
		usage();
	cmd = argv[1];
	argv++;
	argc--;
	while ((c = getopt(argc, argv, "bxn:s:t:l:")) != -1) {
		switch (c) {
		case 'b':
			buffered = 1;
			break;
		case 'x':
			nosync = 1;
			break;
		case 'n':
			maxw = strtoull(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 't':
			trial = strtoul(optarg, NULL, 0);
			break;
		case 'l':
			chan = optarg;
			break;
		default:
			usage();
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "write") && optind == argc - 1 && chan)
		return do_write(argv[optind], chan, seed, trial, maxw, buffered,
				nosync);
	if (!strcmp(cmd, "check") && optind == argc - 2)
		return do_check(argv[optind], argv[optind + 1], buffered);
	if (!strcmp(cmd, "durable") && optind == argc - 1)
		return do_durable(argv[optind]);
	usage();
	return 2;
}

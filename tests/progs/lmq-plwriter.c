// SPDX-License-Identifier: GPL-2.0
/*
 * lmq-plwriter: the workload and the checker of the power-loss trials
 * (tests/guest/80-power-loss.sh).  It writes files on a file system (the
 * upper one, on /dev/loopmqN), and after every fsync, fdatasync or batch of
 * RWF_DSYNC writes that returned it places a dm-log-writes mark on the
 * device under the backing file system, so that a replay of that log to
 * the mark shows what had been acknowledged (see tests/progs/lmq-logreplay.c
 * for why).  The same program checks a replayed state against its log.
 *
 *   lmq-plwriter write [-D] [-x] [-n OPS] [-L DMNAME] -s SEED -d DIR -l LOG
 *     -D         O_DIRECT (default: through the page cache)
 *     -x         never sync (no fsync, fdatasync or RWF_DSYNC) but log and
 *                mark as if it did: an emulated negative control, whose
 *                check must report losses
 *     -n OPS     operations (default 200)
 *     -L DMNAME  the dm-log-writes device to mark (DM_TARGET_MSG "mark
 *                pl-N"); without it, no marks
 *   lmq-plwriter check (-M MARK | -F) -d DIR -l LOG
 *     -M MARK    the state of a replay whose last mark is MARK ("-": no
 *                mark of this writer yet): everything acknowledged before
 *                MARK was sent must be there
 *     -F         the state after a clean shutdown: every write, exactly
 *
 * Files DIR/f0..f3, created, fsynced with DIR, then mark pl-0.  Each
 * operation: 1-8 writes of 4 KiB to distinct random blocks (0..191) of one
 * file, then (seeded) nothing, fsync, fdatasync, or the batch was written
 * with RWF_DSYNC.  LOG (on a file system that does not crash: /tmp) gets a
 * line per event, written after the event returned:
 *   T seed nfiles nblocks direct nosync   C f   W f block seq [d]
 *   S f fsync|fdatasync   M mark   E
 * Every 512-byte sector carries magic, file, block, sector index, write
 * sequence number, seed and a payload derived from them.
 *
 * check: per block, the durable sequence at MARK is the last W of that
 * block before an S of its file, or a W with d, all before "M MARK".  Each
 * sector must hold a write of its own block with a sequence no older than
 * that (any write of the block in the whole log: later ones may have
 * reached the disk too), or zeroes / lie past end of file when the block
 * has no durable write.  A file whose creation was acknowledged must
 * exist; no file may be longer than its writes made it.  Prints
 * "LOST ..." lines and a summary; exit 0 nothing lost, 1 losses, 2 usage,
 * log or I/O errors.
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
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <linux/dm-ioctl.h>

#include "lmq-common.h"

#define BLK		4096
#define SECT		512
#define SPB		(BLK / SECT)
#define NFILES		4
#define NBLOCKS		192
#define MAXBATCH	8
#define MAGIC		0x504d514cu	/* "LQMP" */

struct sect_hdr {
	uint32_t magic;
	uint32_t file;
	uint32_t block;
	uint32_t sector;
	uint64_t seq;
	uint64_t seed;
};

static void fill_sector(unsigned char *p, uint64_t seed, uint32_t file,
			uint32_t block, uint32_t sector, uint64_t seq)
{
	struct sect_hdr h = { MAGIC, file, block, sector, seq, seed };
	uint64_t st = seed ^ (seq * 0x100000001b3ull) ^ ((uint64_t)sector << 56) ^
		      ((uint64_t)file << 48);
	size_t off;

	memcpy(p, &h, sizeof(h));
	for (off = sizeof(h); off + 8 <= SECT; off += 8) {
		uint64_t v = splitmix(&st);

		memcpy(p + off, &v, 8);
	}
}

/* "mark NAME" to the dm device DMNAME: what dmsetup message does */
static void dm_mark(const char *dmname, const char *name)
{
	static int ctl = -1;
	union {
		struct dm_ioctl io;
		char buf[sizeof(struct dm_ioctl) + sizeof(struct dm_target_msg) + 256];
	} u;
	struct dm_target_msg *msg;

	if (ctl < 0) {
		ctl = open("/dev/mapper/control", O_RDWR);
		if (ctl < 0)
			die("/dev/mapper/control");
	}
	memset(&u, 0, sizeof(u));
	u.io.version[0] = DM_VERSION_MAJOR;
	u.io.data_size = sizeof(u);
	u.io.data_start = sizeof(struct dm_ioctl);
	snprintf(u.io.name, sizeof(u.io.name), "%s", dmname);
	msg = (struct dm_target_msg *)(u.buf + u.io.data_start);
	msg->sector = 0;
	snprintf(msg->message, 200, "mark %s", name);
	if (ioctl(ctl, DM_TARGET_MSG, &u.io)) {
		fprintf(stderr, "dm message %s 0 mark %s: %s\n", dmname, name,
			strerror(errno));
		exit(2);
	}
}

static FILE *logf;

static void logline(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logline(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(logf, fmt, ap);
	va_end(ap);
	if (fflush(logf))
		die("write to the log");
}

static int do_write(const char *dir, const char *logpath, const char *dmname,
		    uint64_t seed, unsigned int nops, int direct, int nosync)
{
	int fds[NFILES], dfd, nmark = 0, kind;
	unsigned int op, i, j, n, f;
	uint32_t blk[MAXBATCH];
	uint64_t rng = seed, seq = 0;
	unsigned char *buf;
	char path[4096], name[32];

	logf = fopen(logpath, "w");
	if (!logf)
		die(logpath);
	if (posix_memalign((void **)&buf, BLK, BLK))
		die("posix_memalign");
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		die(dir);
	logline("T %" PRIu64 " %d %d %d %d\n", seed, NFILES, NBLOCKS, direct,
		nosync);
	for (f = 0; f < NFILES; f++) {
		snprintf(path, sizeof(path), "%s/f%u", dir, f);
		fds[f] = open(path, O_RDWR | O_CREAT | O_EXCL |
			      (direct ? O_DIRECT : 0), 0644);
		if (fds[f] < 0)
			die(path);
		if (!nosync && fsync(fds[f]))
			die("fsync");
	}
	if (!nosync && fsync(dfd))
		die("fsync of the directory");
	for (f = 0; f < NFILES; f++)
		logline("C %u\n", f);
	snprintf(name, sizeof(name), "pl-%d", nmark++);
	if (dmname)
		dm_mark(dmname, name);
	logline("M %s\n", name);
	for (op = 0; op < nops; op++) {
		f = splitmix(&rng) % NFILES;
		n = 1 + splitmix(&rng) % MAXBATCH;
		for (i = 0; i < n; i++) {
again:
			blk[i] = splitmix(&rng) % NBLOCKS;
			for (j = 0; j < i; j++)
				if (blk[j] == blk[i])
					goto again;
		}
		kind = splitmix(&rng) % 20;	/* 0-3 fsync, 4-5 fdatasync, 6-8 dsync */
		for (i = 0; i < n; i++) {
			struct iovec iov = { buf, BLK };
			int dsync = kind >= 6 && kind <= 8;
			ssize_t r;

			seq++;
			for (j = 0; j < SPB; j++)
				fill_sector(buf + j * SECT, seed, f, blk[i], j, seq);
			r = pwritev2(fds[f], &iov, 1, (off_t)blk[i] * BLK,
				     dsync && !nosync ? RWF_DSYNC : 0);
			if (r != BLK) {
				fprintf(stderr, "write f%u block %u: %s\n", f, blk[i],
					r < 0 ? strerror(errno) : "short write");
				return 2;
			}
			logline("W %u %u %" PRIu64 "%s\n", f, blk[i], seq,
				dsync ? " d" : "");
		}
		if (kind <= 5) {
			if (!nosync && (kind <= 3 ? fsync(fds[f]) : fdatasync(fds[f])))
				die("fsync");
			logline("S %u %s\n", f, kind <= 3 ? "fsync" : "fdatasync");
		}
		if (kind <= 8) {
			snprintf(name, sizeof(name), "pl-%d", nmark++);
			if (dmname)
				dm_mark(dmname, name);
			logline("M %s\n", name);
		}
	}
	for (f = 0; f < NFILES; f++)
		close(fds[f]);
	logline("E\n");
	printf("lmq-plwriter: %u operations, %" PRIu64 " writes, %d marks\n",
	       nops, seq, nmark);
	return 0;
}

/* ---- check ------------------------------------------------------------ */

struct state {
	uint64_t seed;
	int created[NFILES];		/* creation acknowledged */
	uint64_t last[NFILES][NBLOCKS];	/* last write so far */
	uint64_t durable[NFILES][NBLOCKS];
	uint64_t nseq;			/* writes in the whole log */
	uint32_t *file_of, *blk_of;	/* [seq] */
	int maxblk[NFILES];		/* highest block ever written, -1 */
	int mark_found;
	int ended;			/* the writer finished */
	unsigned int lines_used;
};

static void read_log(const char *logpath, const char *mark, int final,
		     struct state *s)
{
	char line[256], m[200], d[8];
	unsigned int f, b, lineno = 0, created_pending[NFILES] = { 0 };
	uint64_t seq, cap = 4096;
	int stop = 0, dir_synced_marks = 0, have_t = 0, nf, nb;
	FILE *lf = fopen(logpath, "r");

	if (!lf)
		die(logpath);
	memset(s, 0, sizeof(*s));
	s->file_of = malloc(cap * sizeof(uint32_t));
	s->blk_of = malloc(cap * sizeof(uint32_t));
	if (!s->file_of || !s->blk_of)
		die("malloc");
	for (f = 0; f < NFILES; f++)
		s->maxblk[f] = -1;
	if (!final && !strcmp(mark, "-")) {
		s->mark_found = 1;	/* nothing acknowledged */
		stop = 1;
	}
	while (fgets(line, sizeof(line), lf)) {
		lineno++;
		d[0] = 0;
		if (line[0] == 'T') {
			int dir_, nos;

			if (sscanf(line, "T %" SCNu64 " %d %d %d %d", &s->seed, &nf,
				   &nb, &dir_, &nos) != 5 || nf != NFILES ||
			    nb != NBLOCKS) {
				fprintf(stderr, "%s:%u: bad T line\n", logpath, lineno);
				exit(2);
			}
			have_t = 1;
		} else if (!have_t) {
			fprintf(stderr, "%s:%u: no T line first\n", logpath, lineno);
			exit(2);
		} else if (sscanf(line, "C %u", &f) == 1 && f < NFILES) {
			created_pending[f] = 1;
		} else if (sscanf(line, "W %u %u %" SCNu64 " %7s", &f, &b, &seq, d) >= 3 &&
			   f < NFILES && b < NBLOCKS) {
			if (seq != s->nseq + 1) {
				fprintf(stderr, "%s:%u: write seq %" PRIu64 " after %"
					PRIu64 "\n", logpath, lineno, seq, s->nseq);
				exit(2);
			}
			s->nseq = seq;
			while (seq >= cap) {
				cap *= 2;
				s->file_of = realloc(s->file_of, cap * sizeof(uint32_t));
				s->blk_of = realloc(s->blk_of, cap * sizeof(uint32_t));
				if (!s->file_of || !s->blk_of)
					die("realloc");
			}
			s->file_of[seq] = f;
			s->blk_of[seq] = b;
			if ((int)b > s->maxblk[f])
				s->maxblk[f] = b;
			if (stop)
				continue;
			s->last[f][b] = seq;
			if (!strcmp(d, "d") || final)
				s->durable[f][b] = seq;
		} else if (sscanf(line, "S %u", &f) == 1 && f < NFILES) {
			if (stop)
				continue;
			for (b = 0; b < NBLOCKS; b++)
				s->durable[f][b] = s->last[f][b];
		} else if (sscanf(line, "M %199s", m) == 1) {
			if (stop)
				continue;
			/* the files and the directory were fsynced before pl-0 */
			if (!dir_synced_marks++)
				for (f = 0; f < NFILES; f++)
					s->created[f] = created_pending[f];
			if (!final && !strcmp(m, mark)) {
				s->mark_found = 1;
				s->lines_used = lineno;
				stop = 1;
			}
		} else if (line[0] == 'E') {
			s->ended = 1;
			if (!stop)
				s->lines_used = lineno;
		} else {
			fprintf(stderr, "%s:%u: bad line: %s", logpath, lineno, line);
			exit(2);
		}
	}
	fclose(lf);
	if (!have_t) {
		fprintf(stderr, "%s: empty log\n", logpath);
		exit(2);
	}
	if (final && !s->ended) {
		fprintf(stderr, "%s: the writer did not finish (no E line)\n", logpath);
		exit(2);
	}
	if (final)
		s->mark_found = 1;
	if (!s->mark_found) {
		fprintf(stderr, "%s: no mark %s in the log\n", logpath, mark);
		exit(2);
	}
}

static int is_zero(const unsigned char *p, size_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

/* why sector k of block b of file f (data p) is not acceptable, or NULL */
static const char *judge(const struct state *s, unsigned int f, unsigned int b,
			 unsigned int k, const unsigned char *p, int final,
			 char *why, size_t wlen)
{
	uint64_t want = s->durable[f][b];
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
	if (h.seed != s->seed) {
		snprintf(why, wlen, "data of another run (seed %" PRIu64 ")", h.seed);
		return why;
	}
	if (h.file != f || h.block != b || h.sector != k) {
		snprintf(why, wlen, "data of file f%u block %u sector %u seq %" PRIu64,
			 h.file, h.block, h.sector, h.seq);
		return why;
	}
	if (h.seq == 0 || h.seq > s->nseq || s->file_of[h.seq] != f ||
	    s->blk_of[h.seq] != b) {
		snprintf(why, wlen, "seq %" PRIu64 ", not a write of this block",
			 h.seq);
		return why;
	}
	fill_sector(exp, s->seed, f, b, k, h.seq);
	if (memcmp(exp, p, SECT)) {
		snprintf(why, wlen, "seq %" PRIu64 " with a corrupt payload", h.seq);
		return why;
	}
	if (h.seq < want || (final && h.seq != want)) {
		snprintf(why, wlen, "stale seq %" PRIu64, h.seq);
		return why;
	}
	return NULL;
}

static int do_check(const char *dir, const char *logpath, const char *mark,
		    int final)
{
	uint64_t lost = 0, lostblk = 0, ndurable = 0, blocks = 0, maxsize;
	unsigned char buf[BLK], zero[BLK];
	unsigned int f, b, k;
	struct state *s = malloc(sizeof(*s));
	char path[4096], why[160];
	struct stat st;
	int fd, bad;
	ssize_t r;

	if (!s)
		die("malloc");
	read_log(logpath, mark, final, s);
	memset(zero, 0, sizeof(zero));
	for (f = 0; f < NFILES; f++) {
		snprintf(path, sizeof(path), "%s/f%u", dir, f);
		for (b = 0; b < NBLOCKS; b++)
			ndurable += !!s->durable[f][b];
		fd = open(path, O_RDONLY);
		if (fd < 0) {
			if (errno != ENOENT)
				die(path);
			if (s->created[f]) {
				printf("LOST file f%u: missing (its creation was fsynced)\n", f);
				lost++;
				lostblk++;
			}
			/* no file: every block reads as absent */
			for (b = 0; b < NBLOCKS; b++)
				if (s->durable[f][b]) {
					lost += SPB;
					lostblk++;
				}
			continue;
		}
		if (fstat(fd, &st))
			die(path);
		maxsize = (uint64_t)(s->maxblk[f] + 1) * BLK;
		if ((uint64_t)st.st_size > maxsize ||
		    (final && (uint64_t)st.st_size != maxsize)) {
			printf("LOST file f%u: size %lld, its writes make it %" PRIu64 "\n",
			       f, (long long)st.st_size, maxsize);
			lost++;
		}
		for (b = 0; b < NBLOCKS; b++) {
			uint64_t pos = (uint64_t)b * BLK;

			memset(buf, 0, sizeof(buf));
			r = 0;
			if (pos < (uint64_t)st.st_size) {
				r = pread(fd, buf, BLK, pos);
				if (r < 0)
					die(path);
			}
			blocks++;
			bad = 0;
			for (k = 0; k < SPB; k++) {
				const char *w;

				if ((ssize_t)(k * SECT) >= r) {
					/* past end of file */
					if (!s->durable[f][b])
						continue;
					snprintf(why, sizeof(why), "past end of file (size %lld)",
						 (long long)st.st_size);
					w = why;
				} else {
					w = judge(s, f, b, k, buf + k * SECT, final,
						  why, sizeof(why));
					if (!w)
						continue;
				}
				bad = 1;
				if (++lost <= 40)
					printf("LOST file f%u block %u sector %u: want seq >= %"
					       PRIu64 " (durable), found %s\n", f, b, k,
					       s->durable[f][b], w);
			}
			lostblk += bad;
		}
		close(fd);
	}
	if (lost > 40)
		printf("LOST ... %" PRIu64 " in all\n", lost);
	printf("checked %d files, %" PRIu64 " blocks at %s%s (log line %u): %" PRIu64
	       " writes in the log, %" PRIu64 " blocks with a durable write, %"
	       PRIu64 " lost sectors in %" PRIu64 " blocks\n", NFILES, blocks,
	       final ? "the final state" : "mark ", final ? "" : mark,
	       s->lines_used, s->nseq, ndurable, lost, lostblk);
	return lost ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: lmq-plwriter write [-D] [-x] [-n OPS] [-L DMNAME] -s SEED -d DIR -l LOG\n"
		"       lmq-plwriter check (-M MARK | -F) -d DIR -l LOG\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *cmd, *dir = NULL, *logpath = NULL, *dmname = NULL, *mark = NULL;
	int c, direct = 0, nosync = 0, final = 0;
	unsigned int nops = 200;
	uint64_t seed = 1;

	if (argc < 2)
		usage();
	cmd = argv[1];
	argv++;
	argc--;
	while ((c = getopt(argc, argv, "Dxn:L:s:d:l:M:F")) != -1) {
		switch (c) {
		case 'D':
			direct = 1;
			break;
		case 'x':
			nosync = 1;
			break;
		case 'n':
			nops = strtoul(optarg, NULL, 0);
			break;
		case 'L':
			dmname = optarg;
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'l':
			logpath = optarg;
			break;
		case 'M':
			mark = optarg;
			break;
		case 'F':
			final = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !dir || !logpath)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "write"))
		return do_write(dir, logpath, dmname, seed, nops, direct, nosync);
	if (!strcmp(cmd, "check") && (!!mark + final) == 1)
		return do_check(dir, logpath, mark ? mark : "", final);
	usage();
	return 2;
}

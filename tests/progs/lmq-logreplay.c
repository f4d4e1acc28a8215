// SPDX-License-Identifier: GPL-2.0
/*
 * lmq-logreplay: list a dm-log-writes log and replay a prefix of it onto a
 * block device (or file), for the power-loss trials
 * (tests/guest/80-power-loss.sh).  Written from the format description in
 * the kernel's Documentation/admin-guide/device-mapper/log-writes.rst and
 * drivers/md/dm-log-writes.c.
 *
 *   lmq-logreplay list [-s] LOG
 *       one line per entry: "INDEX SECTOR COUNT FLAGS [MARK]" (SECTOR and
 *       COUNT in the log's sector size, "-" for a mark's sector); FLAGS is
 *       WRITE or a |-joined subset of FLUSH FUA DISCARD MARK META.  -s: only
 *       the entries that are replay points (FLUSH, FUA, MARK).  A "#" header
 *       line first.
 *   lmq-logreplay replay [-S START] (-e N | -m NAME | -f N | -a) LOG TARGET
 *       -e N     entries START..N
 *       -m NAME  entries START..the first mark NAME (the mark included)
 *       -f N     entries START..the last FLUSH entry at or before N (every
 *                entry after it dropped: the unflushed writes, and FUA
 *                writes and marks too, which is the state of an earlier
 *                crash, see below)
 *       -a       every entry
 *       -S START the target already holds entries 0..START-1 (an earlier
 *                replay of this log): apply START.. only (default 0).  A
 *                point before START-1 is an error: replay cannot go back.
 *       Writes each entry's data at its sector, zeroes for a DISCARD, then
 *       fsync(TARGET).  Prints one line:
 *       "replayed first=A last=B writes=W discards=D bytes=N end=FLAGS
 *        lastmark=NAME lastmark_entry=I" (lastmark: the last mark at or
 *       before B in the whole log, "-" and -1 if none).  A first=0 last=-1
 *       line means nothing to replay (-f before any FLUSH: the state before
 *       the first flush, the device as it was when logging began).
 *   lmq-logreplay find LOG NAME
 *       prints the index of the first mark NAME
 *
 * Exit status: 0 done; 1 the log is invalid (bad magic, version, sector
 * size, an impossible entry, a log shorter than its entries); 2 usage;
 * 3 an I/O error, or a target too small for an entry; 4 the requested point
 * does not exist (no such mark, N past the last entry, no FLUSH at or after
 * START-1 at or before N).  Every error message names the object (the
 * log, entry N at byte B, the target) and the cause.
 *
 * ---- The on-disk format (all fields little-endian, fixed width) ----
 *
 * The log device starts with a super block occupying one "sector" of the
 * log's sector size (the logical block size of the logged device):
 *   u64 magic (0x6a736677736872), u64 version (1), u64 nr_entries,
 *   u32 sectorsize.
 * Entries follow back to back from byte `sectorsize`, nr_entries of them.
 * Each starts with a header sector:
 *   u64 sector, u64 nr_sectors (both in units of sectorsize), u64 flags
 *   (FLUSH 1, FUA 2, DISCARD 4, MARK 8, METADATA 16), u64 data_len;
 * a MARK carries its name (data_len bytes, no NUL) in the rest of the
 * header sector and nothing after it; a DISCARD has no data; any other entry
 * is followed by nr_sectors * sectorsize bytes of the data written.  The
 * super's nr_entries is rewritten after each FUA and MARK entry and when
 * the target is removed (which logs a last mark, "dm-log-writes-end"); a
 * log that ran out of space stops early, without that mark.
 *
 * ---- What the order of the log guarantees, and what a replay point is ----
 *
 * dm-log-writes logs a write not when it is submitted but when it is known
 * to be on stable storage: a plain write, once it completes, waits on a list
 * of unflushed writes; an empty REQ_PREFLUSH bio takes that list when it is
 * submitted (map time) and, when it completes, logs the list (in completion
 * order) and then itself.  A REQ_FUA write is logged when it completes.  A
 * DISCARD is treated as a plain write.  A mark is appended to the logging
 * queue when the message arrives.  (A flush carrying data never reaches the
 * target: device-mapper splits it into an empty flush and the write.)
 * Hence:
 *   - a plain write appears only in the group logged just before the first
 *     FLUSH that was submitted after the write completed: exactly the
 *     guarantee a volatile write cache gives;
 *   - every entry before a FLUSH or FUA entry X was guaranteed stable by the
 *     time X completed, and nothing after X was (a later plain write waits
 *     for its flush, a later FUA had not completed);
 *   - a mark M is logged after every entry that was stable when the mark
 *     message was sent, and before the plain writes that had completed but
 *     were not yet flushed then.
 * So the state after replaying entries 0..X, X a FLUSH or FUA, is the disk
 * as it is when power fails right after X completed and the write cache
 * loses everything it holds: a legal post-power-loss state, and the worst
 * one at that moment.  "Points between them with the unflushed writes
 * dropped" are the same states: a crash at entry N whose cache loses every
 * write not yet flushed leaves entries 0..F, F the last FLUSH at or before N
 * (-f N; a FUA entry between F and N is dropped too, which is the state at
 * a crash just before that FUA completed, also legal).  More generally
 * every prefix 0..N is legal: one that ends inside the group of writes
 * before a flush holds the stable state plus some of the completed,
 * unflushed writes, which a cache may have written back in any order.
 * For a checker: if a program sends mark M after fsync/O_DSYNC returned,
 * everything that fsync made durable is logged before M, so any replay
 * ending at or after M must show it (and a replay that ends before M
 * promises nothing about it).
 *
 * Replay assumes TARGET starts as the logged device was when the log
 * began (for example both all zeroes).  A DISCARD is replayed as zeroes
 * (what a discarded range reads back as is otherwise undefined).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/fs.h>

#define LW_MAGIC	0x6a736677736872ull
#define LW_VERSION	1ull
#define LW_FLUSH	(1ull << 0)
#define LW_FUA		(1ull << 1)
#define LW_DISCARD	(1ull << 2)
#define LW_MARK		(1ull << 3)
#define LW_META		(1ull << 4)
#define LW_KNOWN	(LW_FLUSH | LW_FUA | LW_DISCARD | LW_MARK | LW_META)
#define HDR_LEN		32	/* four u64: sector, nr_sectors, flags, data_len */
#define SUPER_LEN	28	/* three u64 and a u32 */
#define MAX_SECTSZ	65536
#define CHUNK		(1u << 20)

enum { EX_OK, EX_LOG, EX_USAGE, EX_IO, EX_NOPOINT };

struct entry {
	uint64_t off;		/* byte offset of the header in the log */
	uint64_t sector, count, flags, data_len;
	char mark[MAX_SECTSZ];	/* only marks; filled by read_entry */
};

struct log {
	const char *path;
	int fd;
	uint64_t size;		/* bytes */
	uint64_t nr;		/* entries */
	uint32_t sectsz;
	uint64_t *offs;		/* [i]: byte offset of entry i's header */
	unsigned char *hdr;	/* one sector */
};

static uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: lmq-logreplay list [-s] LOG\n"
		"       lmq-logreplay replay [-S START] (-e N | -m NAME | -f N | -a) LOG TARGET\n"
		"       lmq-logreplay find LOG NAME\n");
	exit(EX_USAGE);
}

/*
 * The size of a file or block device.  A block device's page cache is
 * dropped first: dm-log-writes writes the log with bios, under any cache
 * of the log device, and a replay target may have been rewritten
 * underneath (zeroed for the next trial) since a previous replay cached it.
 */
static uint64_t dev_size(int fd, const char *path)
{
	struct stat st;
	uint64_t size;

	if (fstat(fd, &st)) {
		fprintf(stderr, "%s: fstat: %s\n", path, strerror(errno));
		exit(EX_IO);
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size)) {
			fprintf(stderr, "%s: BLKGETSIZE64: %s\n", path,
				strerror(errno));
			exit(EX_IO);
		}
		if (ioctl(fd, BLKFLSBUF, 0))
			fprintf(stderr, "%s: warning: BLKFLSBUF: %s (cached data may be stale)\n",
				path, strerror(errno));
		return size;
	}
	return st.st_size;
}

/* read exactly len bytes at off, or say why not (what: for the message) */
static void log_read(struct log *lg, void *buf, size_t len, uint64_t off,
		     const char *what)
{
	size_t done = 0;
	ssize_t r;

	if (off > lg->size || len > lg->size - off) {
		fprintf(stderr, "%s: %s: needs bytes %" PRIu64 "..%" PRIu64
			" but the log is %" PRIu64 " bytes (truncated log?)\n",
			lg->path, what, off, off + len - 1, lg->size);
		exit(EX_LOG);
	}
	while (done < len) {
		r = pread(lg->fd, (char *)buf + done, len - done, off + done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "%s: %s: read at byte %" PRIu64 ": %s\n",
				lg->path, what, off + done, strerror(errno));
			exit(EX_IO);
		}
		if (r == 0) {
			fprintf(stderr, "%s: %s: unexpected end of file at byte %"
				PRIu64 "\n", lg->path, what, off + done);
			exit(EX_LOG);
		}
		done += r;
	}
}

/* parse the header of the entry at lg->offs[i] into e; validate it */
static void read_entry(struct log *lg, uint64_t i, struct entry *e)
{
	char what[96];
	uint64_t space;

	e->off = lg->offs[i];
	snprintf(what, sizeof(what), "entry %" PRIu64 " at byte %" PRIu64, i,
		 e->off);
	log_read(lg, lg->hdr, lg->sectsz, e->off, what);
	e->sector = get_le64(lg->hdr);
	e->count = get_le64(lg->hdr + 8);
	e->flags = get_le64(lg->hdr + 16);
	e->data_len = get_le64(lg->hdr + 24);
	e->mark[0] = 0;
	if (e->flags & ~LW_KNOWN) {
		fprintf(stderr, "%s: %s: unknown flags %#" PRIx64 " (known: %#llx)\n",
			lg->path, what, e->flags, (unsigned long long)LW_KNOWN);
		exit(EX_LOG);
	}
	if (e->flags & LW_MARK) {
		if (e->flags != LW_MARK || e->count) {
			fprintf(stderr, "%s: %s: a mark with flags %#" PRIx64
				" and %" PRIu64 " sectors (a mark has only the MARK flag and no sectors)\n",
				lg->path, what, e->flags, e->count);
			exit(EX_LOG);
		}
		if (e->data_len > lg->sectsz - HDR_LEN) {
			fprintf(stderr, "%s: %s: mark name of %" PRIu64
				" bytes does not fit the %u-byte header sector\n",
				lg->path, what, e->data_len, lg->sectsz);
			exit(EX_LOG);
		}
		memcpy(e->mark, lg->hdr + HDR_LEN, e->data_len);
		e->mark[e->data_len] = 0;
		if (strlen(e->mark) != e->data_len) {
			fprintf(stderr, "%s: %s: mark name has a NUL byte inside its %"
				PRIu64 " bytes\n", lg->path, what, e->data_len);
			exit(EX_LOG);
		}
		return;
	}
	if (e->data_len) {
		fprintf(stderr, "%s: %s: %" PRIu64 " bytes of inline data on a non-mark entry (flags %#"
			PRIx64 "): not a format this tool knows\n",
			lg->path, what, e->data_len, e->flags);
		exit(EX_LOG);
	}
	if ((e->flags & LW_DISCARD) && (e->flags & (LW_FLUSH | LW_FUA))) {
		fprintf(stderr, "%s: %s: DISCARD combined with FLUSH/FUA (flags %#"
			PRIx64 ")\n", lg->path, what, e->flags);
		exit(EX_LOG);
	}
	if (!e->count && !(e->flags & LW_FLUSH)) {
		fprintf(stderr, "%s: %s: an empty entry that is not a FLUSH (flags %#"
			PRIx64 ")\n", lg->path, what, e->flags);
		exit(EX_LOG);
	}
	/* sector + count must not wrap, in bytes */
	if (e->sector > UINT64_MAX / lg->sectsz - e->count) {
		fprintf(stderr, "%s: %s: sector %" PRIu64 " + %" PRIu64
			" sectors overflows\n", lg->path, what, e->sector,
			e->count);
		exit(EX_LOG);
	}
	if (!(e->flags & LW_DISCARD)) {
		space = lg->size - e->off - lg->sectsz;
		if (e->count > space / lg->sectsz) {
			fprintf(stderr, "%s: %s: %" PRIu64 " sectors of data, only %"
				PRIu64 " bytes of log left (truncated log or corrupt entry)\n",
				lg->path, what, e->count, space);
			exit(EX_LOG);
		}
	}
}

static uint64_t entry_len(const struct log *lg, const struct entry *e)
{
	uint64_t len = lg->sectsz;

	if (!(e->flags & (LW_MARK | LW_DISCARD)))
		len += e->count * lg->sectsz;
	return len;
}

/* open LOG, validate the super block, find every entry's offset */
static void log_open(struct log *lg, const char *path)
{
	unsigned char sup[512];
	uint64_t magic, version, i;
	struct entry *e;

	memset(lg, 0, sizeof(*lg));
	lg->path = path;
	lg->fd = open(path, O_RDONLY);
	if (lg->fd < 0) {
		fprintf(stderr, "%s: cannot open the log: %s\n", path,
			strerror(errno));
		exit(EX_IO);
	}
	lg->size = dev_size(lg->fd, path);
	lg->sectsz = 512;
	log_read(lg, sup, sizeof(sup), 0, "super block");
	magic = get_le64(sup);
	version = get_le64(sup + 8);
	lg->nr = get_le64(sup + 16);
	lg->sectsz = get_le32(sup + 24);
	if (magic != LW_MAGIC) {
		fprintf(stderr, "%s: super block: bad magic %#" PRIx64
			" (want %#llx): not a dm-log-writes log\n", path, magic,
			(unsigned long long)LW_MAGIC);
		exit(EX_LOG);
	}
	if (version != LW_VERSION) {
		fprintf(stderr, "%s: super block: version %" PRIu64
			", this tool knows version %llu only\n", path, version,
			(unsigned long long)LW_VERSION);
		exit(EX_LOG);
	}
	if (lg->sectsz < 512 || lg->sectsz > MAX_SECTSZ ||
	    (lg->sectsz & (lg->sectsz - 1))) {
		fprintf(stderr, "%s: super block: sector size %u is not a power of two in 512..%d\n",
			path, lg->sectsz, MAX_SECTSZ);
		exit(EX_LOG);
	}
	/* each entry takes at least one sector after the super */
	if (lg->nr > lg->size / lg->sectsz) {
		fprintf(stderr, "%s: super block: %" PRIu64
			" entries cannot fit in %" PRIu64 " bytes\n", path,
			lg->nr, lg->size);
		exit(EX_LOG);
	}
	lg->offs = malloc((lg->nr + 1) * sizeof(*lg->offs));
	lg->hdr = malloc(lg->sectsz);
	e = malloc(sizeof(*e));
	if (!lg->offs || !lg->hdr || !e) {
		fprintf(stderr, "%s: out of memory for %" PRIu64 " entries\n",
			path, lg->nr);
		exit(EX_IO);
	}
	lg->offs[0] = lg->sectsz;
	for (i = 0; i < lg->nr; i++) {
		read_entry(lg, i, e);
		lg->offs[i + 1] = lg->offs[i] + entry_len(lg, e);
	}
	free(e);
}

static void flag_str(uint64_t f, char *buf, size_t len)
{
	static const struct { uint64_t bit; const char *name; } names[] = {
		{ LW_FLUSH, "FLUSH" }, { LW_FUA, "FUA" },
		{ LW_DISCARD, "DISCARD" }, { LW_MARK, "MARK" },
		{ LW_META, "META" },
	};
	size_t i;

	buf[0] = 0;
	if (!(f & (LW_FLUSH | LW_FUA | LW_DISCARD | LW_MARK)))
		snprintf(buf, len, "WRITE");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(f & names[i].bit))
			continue;
		if (buf[0])
			strncat(buf, "|", len - strlen(buf) - 1);
		strncat(buf, names[i].name, len - strlen(buf) - 1);
	}
}

/* a mark name, printable: anything outside 0x21..0x7e as \xNN */
static void print_mark(const char *m)
{
	for (; *m; m++) {
		unsigned char c = *m;

		if (c > 0x20 && c < 0x7f && c != '\\')
			putchar(c);
		else
			printf("\\x%02x", c);
	}
}

static int do_list(const char *path, int sync_only)
{
	struct entry *e = malloc(sizeof(*e));
	struct log lg;
	char fl[64];
	uint64_t i;

	if (!e)
		exit(EX_IO);
	log_open(&lg, path);
	printf("# %s: dm-log-writes version %llu, sector size %u, %" PRIu64
	       " entries, %" PRIu64 " bytes used\n", path,
	       (unsigned long long)LW_VERSION, lg.sectsz, lg.nr, lg.offs[lg.nr]);
	printf("# index sector count flags [mark]\n");
	for (i = 0; i < lg.nr; i++) {
		read_entry(&lg, i, e);
		if (sync_only && !(e->flags & (LW_FLUSH | LW_FUA | LW_MARK)))
			continue;
		flag_str(e->flags, fl, sizeof(fl));
		if (e->flags & LW_MARK) {
			printf("%" PRIu64 " - 0 %s ", i, fl);
			print_mark(e->mark);
			putchar('\n');
		} else {
			printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", i,
			       e->sector, e->count, fl);
		}
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "stdout: %s\n", strerror(errno));
		return EX_IO;
	}
	return EX_OK;
}

/* index of the first mark NAME, or -1 */
static int64_t find_mark(struct log *lg, const char *name)
{
	struct entry *e = malloc(sizeof(*e));
	int64_t found = -1;
	uint64_t i;

	if (!e)
		exit(EX_IO);
	for (i = 0; i < lg->nr && found < 0; i++) {
		read_entry(lg, i, e);
		if ((e->flags & LW_MARK) && !strcmp(e->mark, name))
			found = i;
	}
	free(e);
	return found;
}

static int do_find(const char *path, const char *name)
{
	struct log lg;
	int64_t i;

	log_open(&lg, path);
	i = find_mark(&lg, name);
	if (i < 0) {
		fprintf(stderr, "%s: no mark \"%s\" in %" PRIu64 " entries\n",
			path, name, lg.nr);
		return EX_NOPOINT;
	}
	printf("%" PRId64 "\n", i);
	return EX_OK;
}

static void target_write(int fd, const char *path, const void *buf,
			 size_t len, uint64_t off, uint64_t idx)
{
	size_t done = 0;
	ssize_t r;

	while (done < len) {
		r = pwrite(fd, (const char *)buf + done, len - done, off + done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "%s: replaying entry %" PRIu64
				": write of %zu bytes at byte %" PRIu64 ": %s\n",
				path, idx, len - done, off + done,
				r < 0 ? strerror(errno) : "wrote nothing");
			exit(EX_IO);
		}
		done += r;
	}
}

enum { TO_ENTRY, TO_MARK, TO_FLUSH, TO_ALL };

static int do_replay(const char *path, const char *tpath, int how,
		     uint64_t n, const char *mark, uint64_t start)
{
	uint64_t i, last, tsize, writes = 0, discards = 0, bytes = 0;
	uint64_t len, off, done, chunk;
	int64_t lastmark_i = -1, found;
	struct entry *e = malloc(sizeof(*e));
	char lastmark[MAX_SECTSZ] = "-", fl[64] = "-";
	unsigned char *buf = malloc(CHUNK);
	struct log lg;
	int tfd;

	if (!e || !buf)
		exit(EX_IO);
	log_open(&lg, path);
	if (start > lg.nr) {
		fprintf(stderr, "%s: start entry %" PRIu64 " is past the end (%"
			PRIu64 " entries)\n", path, start, lg.nr);
		return EX_NOPOINT;
	}
	switch (how) {
	case TO_ALL:
		if (!lg.nr) {
			printf("replayed first=%" PRIu64 " last=-1 writes=0 discards=0 bytes=0 end=- lastmark=- lastmark_entry=-1\n",
			       start);
			return EX_OK;
		}
		last = lg.nr - 1;
		break;
	case TO_ENTRY:
		if (n >= lg.nr) {
			fprintf(stderr, "%s: no entry %" PRIu64 " (the log has %"
				PRIu64 " entries)\n", path, n, lg.nr);
			return EX_NOPOINT;
		}
		last = n;
		break;
	case TO_MARK:
		found = find_mark(&lg, mark);
		if (found < 0) {
			fprintf(stderr, "%s: no mark \"%s\" in %" PRIu64
				" entries\n", path, mark, lg.nr);
			return EX_NOPOINT;
		}
		last = found;
		break;
	default:	/* TO_FLUSH */
		if (n >= lg.nr) {
			fprintf(stderr, "%s: no entry %" PRIu64 " (the log has %"
				PRIu64 " entries)\n", path, n, lg.nr);
			return EX_NOPOINT;
		}
		found = -1;
		for (i = 0; i <= n; i++) {
			read_entry(&lg, i, e);
			if (e->flags & LW_FLUSH)
				found = i;
		}
		if (found < 0 && start == 0) {
			printf("replayed first=0 last=-1 writes=0 discards=0 bytes=0 end=- lastmark=- lastmark_entry=-1\n");
			return EX_OK;
		}
		if (found < 0 || (uint64_t)found + 1 < start) {
			fprintf(stderr, "%s: the last FLUSH at or before entry %"
				PRIu64 " is %s, but the target already holds entries up to %"
				PRIu64 "\n", path, n,
				found < 0 ? "none" : "earlier", start - 1);
			return EX_NOPOINT;
		}
		last = found;
		break;
	}
	if (last + 1 < start) {
		fprintf(stderr, "%s: entry %" PRIu64 " is before the start %" PRIu64
			": the target already holds entries up to %" PRIu64
			" and a replay cannot go back\n", path, last, start,
			start - 1);
		return EX_NOPOINT;
	}
	tfd = open(tpath, O_WRONLY);
	if (tfd < 0) {
		fprintf(stderr, "%s: cannot open the replay target: %s\n", tpath,
			strerror(errno));
		return EX_IO;
	}
	tsize = dev_size(tfd, tpath);
	for (i = 0; i <= last; i++) {
		read_entry(&lg, i, e);
		if (e->flags & LW_MARK) {
			lastmark_i = i;
			snprintf(lastmark, sizeof(lastmark), "%s", e->mark);
		}
		if (i < start || !e->count || (e->flags & LW_MARK))
			continue;
		off = e->sector * lg.sectsz;
		len = e->count * lg.sectsz;
		if (off > tsize || len > tsize - off) {
			fprintf(stderr, "%s: entry %" PRIu64 " at byte %" PRIu64
				" writes bytes %" PRIu64 "..%" PRIu64
				" but the replay target %s is %" PRIu64 " bytes\n",
				path, i, e->off, off, off + len - 1, tpath, tsize);
			return EX_IO;
		}
		for (done = 0; done < len; done += chunk) {
			chunk = len - done < CHUNK ? len - done : CHUNK;
			if (e->flags & LW_DISCARD) {
				memset(buf, 0, chunk);
			} else {
				char what[96];

				snprintf(what, sizeof(what), "data of entry %"
					 PRIu64 " at byte %" PRIu64, i, e->off);
				log_read(&lg, buf, chunk,
					 e->off + lg.sectsz + done, what);
			}
			target_write(tfd, tpath, buf, chunk, off + done, i);
		}
		bytes += len;
		if (e->flags & LW_DISCARD)
			discards++;
		else
			writes++;
	}
	if (fsync(tfd)) {
		fprintf(stderr, "%s: fsync of the replay target: %s\n", tpath,
			strerror(errno));
		return EX_IO;
	}
	close(tfd);
	read_entry(&lg, last, e);
	flag_str(e->flags, fl, sizeof(fl));
	printf("replayed first=%" PRIu64 " last=%" PRIu64 " writes=%" PRIu64
	       " discards=%" PRIu64 " bytes=%" PRIu64 " end=%s lastmark=",
	       start, last, writes, discards, bytes, fl);
	print_mark(lastmark);
	printf(" lastmark_entry=%" PRId64 "\n", lastmark_i);
	return EX_OK;
}

static uint64_t num_arg(const char *s, const char *opt)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-') {
		fprintf(stderr, "lmq-logreplay: %s: '%s' is not an entry index\n",
			opt, s);
		exit(EX_USAGE);
	}
	return v;
}

int main(int argc, char **argv)
{
	const char *cmd, *mark = NULL;
	int c, how = -1, sync_only = 0;
	uint64_t n = 0, start = 0;

	if (argc < 2)
		usage();
	cmd = argv[1];
	argv++;
	argc--;
	while ((c = getopt(argc, argv, "se:m:f:aS:")) != -1) {
		switch (c) {
		case 's':
			sync_only = 1;
			break;
		case 'e':
			if (how >= 0)
				usage();
			how = TO_ENTRY;
			n = num_arg(optarg, "-e");
			break;
		case 'm':
			if (how >= 0)
				usage();
			how = TO_MARK;
			mark = optarg;
			break;
		case 'f':
			if (how >= 0)
				usage();
			how = TO_FLUSH;
			n = num_arg(optarg, "-f");
			break;
		case 'a':
			if (how >= 0)
				usage();
			how = TO_ALL;
			break;
		case 'S':
			start = num_arg(optarg, "-S");
			break;
		default:
			usage();
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "list") && optind == argc - 1 && how < 0)
		return do_list(argv[optind], sync_only);
	if (!strcmp(cmd, "find") && optind == argc - 2 && how < 0)
		return do_find(argv[optind], argv[optind + 1]);
	if (!strcmp(cmd, "replay") && optind == argc - 2 && how >= 0 &&
	    !sync_only)
		return do_replay(argv[optind], argv[optind + 1], how, n, mark,
				 start);
	usage();
	return EX_USAGE;
}

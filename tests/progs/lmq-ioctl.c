// SPDX-License-Identifier: GPL-2.0
/*
 * lmq-ioctl: issue one loop / loopmq ioctl (or one raw I/O) with exactly the
 * arguments given and print the outcome as one word: "OK" or the errno name
 * ("EBUSY", "ENXIO", ...).  Guest tests compare these words between the
 * stock loop driver and loopmq, and against the documented errno.
 *
 * Usage: lmq-ioctl [-r] [-w PATH] CMD DEV [ARGS...]
 *   -r                 open DEV read-only (default: read-write)
 *   -w PATH            open DEV, then wait until PATH exists before the
 *                      call (an opener that calls later: a race's window)
 *   set-fd DEV FILE             LOOP_SET_FD
 *   clr-fd DEV                  LOOP_CLR_FD
 *   clr-fd-reopen DEV           LOOP_CLR_FD, then, the descriptor still
 *                               open, open(2) DEV again: prints the
 *                               ioctl's word and the open's ("OK ENXIO")
 *   get-status DEV              LOOP_GET_STATUS64; on success also prints
 *                               "offset=N sizelimit=N flags=N number=N file=S"
 *   set-status DEV OFF LIMIT FLAGS    LOOP_SET_STATUS64 (after GET_STATUS64)
 *   set-status-raw DEV OFF LIMIT FLAGS LOOP_SET_STATUS64 of a zeroed struct
 *   get-status-old DEV          LOOP_GET_STATUS (legacy struct loop_info); on
 *                               success "offset=N flags=N number=N file=S"
 *   set-status-old DEV OFF FLAGS      LOOP_SET_STATUS (after GET_STATUS)
 *   configure DEV FILE FLAGS BS [OFF [LIMIT]]  LOOP_CONFIGURE
 *   change-fd DEV FILE          LOOP_CHANGE_FD
 *   set-capacity DEV            LOOP_SET_CAPACITY
 *   set-dio DEV 0|1             LOOP_SET_DIRECT_IO
 *   set-dio-setting DEV N|NAME  LOOPMQ_SET_DIO (off, on, auto or a number)
 *   set-block-size DEV N        LOOP_SET_BLOCK_SIZE
 *   ctl-add CTL N | ctl-remove CTL N | ctl-get-free CTL   (prints N on success)
 *   set-mode DEV MODE           LOOPMQ_SET_MODE (MODE: number or name)
 *   set-mode-flags DEV MODE FLAGS   LOOPMQ_SET_MODE with nonzero flags
 *   get-mode DEV                LOOPMQ_GET_MODE (prints the mode name)
 *   discard DEV OFF LEN | zeroout DEV OFF LEN    BLKDISCARD / BLKZEROOUT
 *   pwrite DEV OFF LEN [direct] write LEN bytes of 0xa5 at OFF
 *   pread DEV OFF LEN [direct]  read; prints "OK n=BYTES" on success
 *   fsync DEV                   fsync(2)
 *   cached DEV OFF LEN          pages of the range in the page cache
 *                               (mmap and mincore); prints "OK n=PAGES"
 *   open DEV                    just open(2)
 *   set-remap DEV 0|1           LOOPMQ_SET_REMAP (LOOPMQ_REMAP_FILE / _PINNED)
 *   move-ext FILE DONOR         EXT4_IOC_MOVE_EXT of FILE's first block with
 *                               DONOR's (e4defrag's ioctl)
 *   swap-boot FILE              EXT4_IOC_SWAP_BOOT (FILE's blocks for the
 *                               boot loader inode's)
 *   pwrite-mapped FILE OFF SRC SRCOFF   write 4 KiB at OFF of FILE from a
 *                               read-only shared mapping of SRC at SRCOFF
 *                               (the write faults it in: a SRC that cannot
 *                               be read keeps the write waiting there)
 *   mmap-write FILE LEN BYTE    map LEN bytes of FILE shared and writable and
 *                               write BYTE to them over and over, forever
 *                               (until a signal such as SIGBUS ends it)
 * FILE may be a path (opened O_RDWR, or O_RDONLY with a "ro:" prefix,
 * O_RDONLY|O_DIRECTORY with "dir:"), "pipe" (read end of a pipe),
 * "socket" (one end of a socketpair) or "badfd" (fd 999, not open).
 * Exit status: 0 when the call succeeded, 1 when it failed, 2 on usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include "errnames.h"

/* EXT4_IOC_MOVE_EXT, as fs/ext4/ext4.h defines it (not in uapi headers) */
struct lmq_move_extent {
	__u32 reserved;
	__u32 donor_fd;
	__u64 orig_start;
	__u64 donor_start;
	__u64 len;
	__u64 moved_len;
};
#define LMQ_EXT4_IOC_MOVE_EXT	_IOWR('f', 15, struct lmq_move_extent)
#include "../../include/uapi/loopmq.h"

#define NAME(id, name, help)	name,
static const char *const mode_names[LOOPMQ_MODE_NR] = { LOOPMQ_MODES(NAME) };
static const char *const dio_names[LOOPMQ_DIO_NR] = { LOOPMQ_DIO_SETTINGS(NAME) };

static int result(int rc)
{
	if (rc < 0) {
		printf("%s\n", errname(errno));
		return 1;
	}
	printf("OK\n");
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: lmq-ioctl [-r] CMD DEV [ARGS...] (see source)\n");
	exit(2);
}

static unsigned long long num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s) {
		fprintf(stderr, "lmq-ioctl: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static int open_backing(const char *spec)
{
	int p[2];

	if (!strcmp(spec, "pipe")) {
		if (pipe(p))
			goto fail;
		return p[0];
	}
	if (!strcmp(spec, "socket")) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, p))
			goto fail;
		return p[0];
	}
	if (!strcmp(spec, "badfd"))
		return 999;
	if (!strncmp(spec, "ro:", 3))
		p[0] = open(spec + 3, O_RDONLY | O_CLOEXEC);
	else if (!strncmp(spec, "dir:", 4))
		p[0] = open(spec + 4, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else
		p[0] = open(spec, O_RDWR | O_CLOEXEC);
	if (p[0] >= 0)
		return p[0];
fail:
	fprintf(stderr, "lmq-ioctl: cannot open backing '%s': %s\n", spec,
		strerror(errno));
	exit(2);
}

static int parse_mode(const char *s)
{
	int i;

	for (i = 0; i < LOOPMQ_MODE_NR; i++)
		if (!strcmp(s, mode_names[i]))
			return i;
	return (int)num(s);
}

static int do_io(int fd, int write, const char *off_s, const char *len_s)
{
	unsigned long long off = num(off_s), len = num(len_s);
	void *buf;
	ssize_t n;

	if (posix_memalign(&buf, 4096, len ? len : 4096))
		exit(2);
	memset(buf, 0xa5, len);
	if (write)
		n = pwrite(fd, buf, len, off);
	else
		n = pread(fd, buf, len, off);
	if (n < 0)
		return result(-1);
	if (write && (unsigned long long)n != len) {
		printf("SHORT n=%zd\n", n);
		return 1;
	}
	printf("OK n=%zd\n", n);
	return 0;
}

static int do_cached(int fd, const char *off_s, const char *len_s)
{
	long psz = sysconf(_SC_PAGESIZE);
	unsigned long long off = num(off_s), len = num(len_s), i, n = 0;
	unsigned char *vec;
	void *map;

	if (!len || off % psz)
		usage();
	vec = calloc((len + psz - 1) / psz, 1);
	if (!vec)
		exit(2);
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);
	if (map == MAP_FAILED)
		return result(-1);
	if (mincore(map, len, vec) < 0)
		return result(-1);
	for (i = 0; i < (len + psz - 1) / psz; i++)
		n += vec[i] & 1;
	printf("OK n=%llu\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	int oflags = O_RDWR | O_CLOEXEC, fd, bfd, rc;
	const char *cmd, *dev, *wait_for = NULL;
	struct loop_info64 info;
	struct loop_info old;
	struct loop_config cfg;
	struct loopmq_mode_info mi;
	unsigned long long range[2];

	if (argc > 1 && !strcmp(argv[1], "-r")) {
		oflags = O_RDONLY | O_CLOEXEC;
		argv++;
		argc--;
	}
	if (argc > 2 && !strcmp(argv[1], "-w")) {
		wait_for = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc < 3)
		usage();
	cmd = argv[1];
	dev = argv[2];
	if ((!strcmp(cmd, "pwrite") || !strcmp(cmd, "pread")) && argc > 5 &&
	    !strcmp(argv[5], "direct"))
		oflags |= O_DIRECT;
	fd = open(dev, oflags);
	if (fd < 0) {
		printf("%s\n", errname(errno));
		fprintf(stderr, "lmq-ioctl: open %s: %s\n", dev, strerror(errno));
		return 1;
	}
	while (wait_for && access(wait_for, F_OK))
		usleep(10000);
	if (!strcmp(cmd, "open"))
		return result(0);
	if (!strcmp(cmd, "set-fd") && argc == 4) {
		bfd = open_backing(argv[3]);
		return result(ioctl(fd, LOOP_SET_FD, bfd));
	}
	if (!strcmp(cmd, "change-fd") && argc == 4) {
		bfd = open_backing(argv[3]);
		return result(ioctl(fd, LOOP_CHANGE_FD, bfd));
	}
	if (!strcmp(cmd, "clr-fd") && argc == 3)
		return result(ioctl(fd, LOOP_CLR_FD, 0));
	if (!strcmp(cmd, "clr-fd-reopen") && argc == 3) {
		int fd2;

		rc = ioctl(fd, LOOP_CLR_FD, 0);
		printf("%s ", rc < 0 ? errname(errno) : "OK");
		fd2 = open(dev, oflags);
		printf("%s\n", fd2 < 0 ? errname(errno) : "OK");
		if (fd2 >= 0)
			close(fd2);
		return 0;
	}
	if (!strcmp(cmd, "get-status") && argc == 3) {
		memset(&info, 0, sizeof(info));
		rc = ioctl(fd, LOOP_GET_STATUS64, &info);
		if (rc < 0)
			return result(rc);
		printf("OK offset=%llu sizelimit=%llu flags=%u number=%u file=%s\n",
		       (unsigned long long)info.lo_offset,
		       (unsigned long long)info.lo_sizelimit, info.lo_flags,
		       info.lo_number, (char *)info.lo_file_name);
		return 0;
	}
	if ((!strcmp(cmd, "set-status") || !strcmp(cmd, "set-status-raw")) &&
	    argc == 6) {
		memset(&info, 0, sizeof(info));
		if (!strcmp(cmd, "set-status") &&
		    ioctl(fd, LOOP_GET_STATUS64, &info) < 0)
			return result(-1);
		info.lo_offset = num(argv[3]);
		info.lo_sizelimit = num(argv[4]);
		info.lo_flags = num(argv[5]);
		return result(ioctl(fd, LOOP_SET_STATUS64, &info));
	}
	if (!strcmp(cmd, "get-status-old") && argc == 3) {
		memset(&old, 0, sizeof(old));
		rc = ioctl(fd, LOOP_GET_STATUS, &old);
		if (rc < 0)
			return result(rc);
		printf("OK offset=%d flags=%d number=%d file=%s\n",
		       old.lo_offset, old.lo_flags, old.lo_number, old.lo_name);
		return 0;
	}
	if (!strcmp(cmd, "set-status-old") && argc == 5) {
		memset(&old, 0, sizeof(old));
		if (ioctl(fd, LOOP_GET_STATUS, &old) < 0)
			return result(-1);
		old.lo_offset = (int)num(argv[3]);
		old.lo_flags = (int)num(argv[4]);
		return result(ioctl(fd, LOOP_SET_STATUS, &old));
	}
	if (!strcmp(cmd, "configure") && argc >= 6 && argc <= 8) {
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = open_backing(argv[3]);
		cfg.info.lo_flags = num(argv[4]);
		cfg.block_size = num(argv[5]);
		if (argc > 6)
			cfg.info.lo_offset = num(argv[6]);
		if (argc > 7)
			cfg.info.lo_sizelimit = num(argv[7]);
		return result(ioctl(fd, LOOP_CONFIGURE, &cfg));
	}
	if (!strcmp(cmd, "set-capacity") && argc == 3)
		return result(ioctl(fd, LOOP_SET_CAPACITY, 0));
	if (!strcmp(cmd, "set-dio") && argc == 4)
		return result(ioctl(fd, LOOP_SET_DIRECT_IO, num(argv[3])));
	if (!strcmp(cmd, "set-dio-setting") && argc == 4) {
		unsigned long v = ~0UL;
		unsigned int i;

		for (i = 0; i < LOOPMQ_DIO_NR; i++)
			if (!strcmp(argv[3], dio_names[i]))
				v = i;
		if (v == ~0UL)
			v = num(argv[3]);
		return result(ioctl(fd, LOOPMQ_SET_DIO, v));
	}
	if (!strcmp(cmd, "set-block-size") && argc == 4)
		return result(ioctl(fd, LOOP_SET_BLOCK_SIZE, num(argv[3])));
	if (!strcmp(cmd, "ctl-add") && argc == 4) {
		rc = ioctl(fd, LOOP_CTL_ADD, (long)num(argv[3]));
		return result(rc);
	}
	if (!strcmp(cmd, "ctl-remove") && argc == 4)
		return result(ioctl(fd, LOOP_CTL_REMOVE, (long)num(argv[3])));
	if (!strcmp(cmd, "ctl-get-free") && argc == 3) {
		rc = ioctl(fd, LOOP_CTL_GET_FREE);
		if (rc < 0)
			return result(rc);
		printf("OK %d\n", rc);
		return 0;
	}
	if ((!strcmp(cmd, "set-mode") && argc == 4) ||
	    (!strcmp(cmd, "set-mode-flags") && argc == 5)) {
		memset(&mi, 0, sizeof(mi));
		mi.mode = parse_mode(argv[3]);
		if (argc == 5)
			mi.flags = num(argv[4]);
		return result(ioctl(fd, LOOPMQ_SET_MODE, &mi));
	}
	if (!strcmp(cmd, "get-mode") && argc == 3) {
		memset(&mi, 0xff, sizeof(mi));
		rc = ioctl(fd, LOOPMQ_GET_MODE, &mi);
		if (rc < 0)
			return result(rc);
		if (mi.flags || mi.reserved[0] || mi.reserved[1] ||
		    mi.reserved[2]) {
			printf("DIRTY flags/reserved not zeroed\n");
			return 1;
		}
		printf("OK %s\n", mi.mode < LOOPMQ_MODE_NR ? mode_names[mi.mode] : "invalid");
		return 0;
	}
	if ((!strcmp(cmd, "discard") || !strcmp(cmd, "zeroout")) && argc == 5) {
		range[0] = num(argv[3]);
		range[1] = num(argv[4]);
		return result(ioctl(fd, !strcmp(cmd, "discard") ? BLKDISCARD :
				    BLKZEROOUT, range));
	}
	if (!strcmp(cmd, "pwrite") && (argc == 5 || argc == 6))
		return do_io(fd, 1, argv[3], argv[4]);
	if (!strcmp(cmd, "pread") && (argc == 5 || argc == 6))
		return do_io(fd, 0, argv[3], argv[4]);
	if (!strcmp(cmd, "fsync") && argc == 3)
		return result(fsync(fd));
	if (!strcmp(cmd, "cached") && argc == 5)
		return do_cached(fd, argv[3], argv[4]);
	if (!strcmp(cmd, "set-remap") && argc == 4)
		return result(ioctl(fd, LOOPMQ_SET_REMAP, num(argv[3])));
	if (!strcmp(cmd, "pwrite-mapped") && argc == 6) {
		ssize_t n;
		void *p;

		bfd = open(argv[4], O_RDONLY);
		if (bfd < 0)
			return result(-1);
		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, bfd, num(argv[5]));
		if (p == MAP_FAILED)
			return result(-1);
		n = pwrite(fd, p, 4096, num(argv[3]));
		if (n >= 0 && n != 4096)
			errno = EIO;
		return result(n == 4096 ? 0 : -1);
	}
	if (!strcmp(cmd, "mmap-write") && argc == 5) {
		size_t len = num(argv[3]);
		volatile unsigned char *p;

		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			return result(-1);
		for (;;) {
			size_t i;

			for (i = 0; i < len; i += 512)
				p[i] = (unsigned char)num(argv[4]);
		}
	}
	if (!strcmp(cmd, "swap-boot") && argc == 3)
		return result(ioctl(fd, _IO('f', 17)));
	if (!strcmp(cmd, "move-ext") && argc == 4) {
		struct lmq_move_extent me = { .len = 1 };

		bfd = open_backing(argv[3]);
		me.donor_fd = (__u32)bfd;
		return result(ioctl(fd, LMQ_EXT4_IOC_MOVE_EXT, &me));
	}
	usage();
	return 2;
}

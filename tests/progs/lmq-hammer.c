// SPDX-License-Identifier: GPL-2.0
/*
 * lmq-hammer: repeat one loop / loopmq operation as fast as possible, for
 * races against I/O and against other hammers.  Counts results per errno;
 * any errno outside the op's allowed set fails the run.
 *
 * Usage: lmq-hammer [-n N] [-t SECS] [-a ERR,ERR..] [-s SEED] OP ARGS...
 *   -n N      stop after N iterations (default: unlimited, needs -t)
 *   -t SECS   stop after SECS seconds
 *   -a LIST   allowed errno names, replacing the op's default set
 *   -s SEED   seed for ops that choose randomly (ctl)
 * Ops (default allowed errnos in brackets):
 *   attach DEV FILE       open DEV, LOOP_SET_FD FILE, LOOP_CLR_FD, close
 *                                                                [EBUSY ENXIO]
 *   status DEV            LOOP_GET_STATUS64 + SET_STATUS64 with the same
 *                         offset/sizelimit/flags                [ENXIO EAGAIN]
 *   capacity DEV          LOOP_SET_CAPACITY                      [ENXIO]
 *   blocksize DEV N,N..   LOOP_SET_BLOCK_SIZE cycling the sizes  [ENXIO EAGAIN]
 *   dio DEV               LOOP_SET_DIRECT_IO 1, 0, 1 ...         [ENXIO EINVAL]
 *   changefd DEV A B      LOOP_CHANGE_FD to A, B, A ... (DEV opened read-only)
 *                                                                [ENXIO]
 *   openclose DEV         open O_RDWR / O_RDONLY, close          []
 *   rescan DEV            BLKRRPART                              [EBUSY EINVAL ENXIO]
 *   sysfs PATH W,W..      write the words cyclically             [EBUSY EAGAIN]
 *   ctl CTL LO HI         random LOOP_CTL_ADD / REMOVE in LO..HI, GET_FREE
 *                                                   [EEXIST ENODEV EBUSY]
 *   rmmod MODULE          delete_module(O_NONBLOCK) every 2 ms; any success fails
 *                                                   [EBUSY EAGAIN EWOULDBLOCK]
 * Prints "lmq-hammer OP: N iterations, N ok, ERRNO=count ..." and exits 0
 * when every failure was allowed (and for rmmod: nothing was unloaded),
 * 1 otherwise, 2 on usage errors, 3 when one call hung for 60 s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include "errnames.h"

#define MAXE 4096
static unsigned long counts[MAXE];
static int allowed[MAXE];
static unsigned long iters, oks, unloads;
static const char *op;
static char cur[128];

static void set_allowed(const char *list)
{
	char *dup = strdup(list), *tok, *save = NULL;

	memset(allowed, 0, sizeof(allowed));
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (*tok) {
			int e = errnum(tok);

			if (e < 0 || e >= MAXE) {
				fprintf(stderr, "lmq-hammer: unknown errno name %s\n", tok);
				exit(2);
			}
			allowed[e] = 1;
		}
	free(dup);
}

static void on_alarm(int sig)
{
	char m[200];
	int n;

	(void)sig;
	n = snprintf(m, sizeof(m), "lmq-hammer %s: HANG in %s\n", op, cur);
	if (write(2, m, n) < 0)
		_exit(3);
	_exit(3);
}

/* Record one result: rc < 0 means failure with errno. */
static void note(long rc, int err)
{
	iters++;
	if (rc >= 0) {
		oks++;
		return;
	}
	if (err <= 0 || err >= MAXE)
		err = MAXE - 1;
	counts[err]++;
}

static long call(int fd, unsigned long cmd, unsigned long arg, const char *what)
{
	long rc;

	snprintf(cur, sizeof(cur), "%s", what);
	alarm(60);
	rc = ioctl(fd, cmd, arg);
	alarm(0);
	return rc;
}

static int xopen(const char *p, int flags)
{
	int fd = open(p, flags | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "lmq-hammer: open %s: %s\n", p, strerror(errno));
		exit(2);
	}
	return fd;
}

static uint64_t rs = 88172645463325252ULL;

static uint64_t rnd64(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

int main(int argc, char **argv)
{
	long maxn = -1, secs = -1, rc;
	const char *allow = NULL;
	struct timespec t0, now;
	int c, fd = -1, fa = -1, fb = -1, i, bad = 0, nsz = 0, nwords = 0;
	unsigned long sizes[16];
	char *words[16];
	int lo = 0, hi = 0;

	while ((c = getopt(argc, argv, "+n:t:a:s:")) != -1) {
		switch (c) {
		case 'n': maxn = atol(optarg); break;
		case 't': secs = atol(optarg); break;
		case 'a': allow = optarg; break;
		case 's': rs = strtoull(optarg, NULL, 0) * 2654435761ULL + 1; break;
		default: return 2;
		}
	}
	if (optind + 2 > argc || (maxn < 0 && secs < 0)) {
		fprintf(stderr, "usage: lmq-hammer [-n N] [-t SECS] [-a ERRS] [-s SEED] OP ARGS...\n");
		return 2;
	}
	op = argv[optind];
	argv += optind + 1;
	argc -= optind + 1;
	signal(SIGALRM, on_alarm);

	if (!strcmp(op, "attach")) {
		set_allowed("EBUSY,ENXIO");
		if (argc < 2)
			return 2;
		fa = xopen(argv[1], O_RDWR);
	} else if (!strcmp(op, "status")) {
		set_allowed("ENXIO,EAGAIN");
		fd = xopen(argv[0], O_RDWR);
	} else if (!strcmp(op, "capacity")) {
		set_allowed("ENXIO");
		fd = xopen(argv[0], O_RDWR);
	} else if (!strcmp(op, "blocksize")) {
		char *s, *save = NULL;

		set_allowed("ENXIO,EAGAIN");
		if (argc < 2)
			return 2;
		fd = xopen(argv[0], O_RDWR);
		for (s = strtok_r(argv[1], ",", &save); s && nsz < 16; s = strtok_r(NULL, ",", &save))
			sizes[nsz++] = strtoul(s, NULL, 0);
		if (!nsz)
			return 2;
	} else if (!strcmp(op, "dio")) {
		set_allowed("ENXIO,EINVAL");
		fd = xopen(argv[0], O_RDWR);
	} else if (!strcmp(op, "changefd")) {
		set_allowed("ENXIO");
		if (argc < 3)
			return 2;
		fd = xopen(argv[0], O_RDONLY);
		fa = xopen(argv[1], O_RDONLY);
		fb = xopen(argv[2], O_RDONLY);
	} else if (!strcmp(op, "openclose")) {
		set_allowed("");
	} else if (!strcmp(op, "rescan")) {
		set_allowed("EBUSY,EINVAL,ENXIO");
		fd = xopen(argv[0], O_RDONLY);
	} else if (!strcmp(op, "sysfs")) {
		char *s, *save = NULL;

		set_allowed("EBUSY,EAGAIN");
		if (argc < 2)
			return 2;
		for (s = strtok_r(argv[1], ",", &save); s && nwords < 16; s = strtok_r(NULL, ",", &save))
			words[nwords++] = s;
		if (!nwords)
			return 2;
	} else if (!strcmp(op, "ctl")) {
		set_allowed("EEXIST,ENODEV,EBUSY");
		if (argc < 3)
			return 2;
		fd = xopen(argv[0], O_RDWR);
		lo = atoi(argv[1]);
		hi = atoi(argv[2]);
		if (hi < lo)
			return 2;
	} else if (!strcmp(op, "rmmod")) {
		set_allowed("EBUSY,EAGAIN");
	} else {
		fprintf(stderr, "lmq-hammer: unknown op %s\n", op);
		return 2;
	}
	if (allow)
		set_allowed(allow);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0;; i++) {
		if (maxn >= 0 && i >= maxn)
			break;
		if (secs >= 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - t0.tv_sec >= secs)
				break;
		}
		errno = 0;
		if (!strcmp(op, "attach")) {
			/* open per cycle: a detach while another process has
			 * the device open is only done at its last close */
			fd = open(argv[0], O_RDWR | O_CLOEXEC);
			if (fd < 0) {	/* ENXIO while it is being detached */
				note(-1, errno);
				continue;
			}
			rc = call(fd, LOOP_SET_FD, fa, "LOOP_SET_FD");
			note(rc, errno);
			if (rc == 0) {
				rc = call(fd, LOOP_CLR_FD, 0, "LOOP_CLR_FD");
				note(rc, errno);
			}
			close(fd);
		} else if (!strcmp(op, "status")) {
			struct loop_info64 li;

			rc = call(fd, LOOP_GET_STATUS64, (unsigned long)&li, "LOOP_GET_STATUS64");
			if (rc < 0) {
				note(rc, errno);
				continue;
			}
			li.lo_flags &= LO_FLAGS_AUTOCLEAR | LO_FLAGS_PARTSCAN;
			rc = call(fd, LOOP_SET_STATUS64, (unsigned long)&li, "LOOP_SET_STATUS64");
			note(rc, errno);
		} else if (!strcmp(op, "capacity")) {
			rc = call(fd, LOOP_SET_CAPACITY, 0, "LOOP_SET_CAPACITY");
			note(rc, errno);
		} else if (!strcmp(op, "blocksize")) {
			rc = call(fd, LOOP_SET_BLOCK_SIZE, sizes[i % nsz], "LOOP_SET_BLOCK_SIZE");
			note(rc, errno);
		} else if (!strcmp(op, "dio")) {
			rc = call(fd, LOOP_SET_DIRECT_IO, !(i & 1), "LOOP_SET_DIRECT_IO");
			note(rc, errno);
		} else if (!strcmp(op, "changefd")) {
			rc = call(fd, LOOP_CHANGE_FD, (i & 1) ? fb : fa, "LOOP_CHANGE_FD");
			note(rc, errno);
		} else if (!strcmp(op, "openclose")) {
			snprintf(cur, sizeof(cur), "open/close");
			alarm(60);
			fd = open(argv[0], ((i & 1) ? O_RDONLY : O_RDWR) | O_CLOEXEC);
			note(fd, errno);
			if (fd >= 0)
				close(fd);
			alarm(0);
		} else if (!strcmp(op, "rescan")) {
			rc = call(fd, BLKRRPART, 0, "BLKRRPART");
			note(rc, errno);
		} else if (!strcmp(op, "sysfs")) {
			const char *w = words[i % nwords];
			int sfd;

			snprintf(cur, sizeof(cur), "write %s to %s", w, argv[0]);
			alarm(60);
			sfd = open(argv[0], O_WRONLY | O_CLOEXEC);
			if (sfd < 0) {
				note(-1, errno);
			} else {
				rc = write(sfd, w, strlen(w));
				note(rc, errno);
				close(sfd);
			}
			alarm(0);
		} else if (!strcmp(op, "ctl")) {
			int idx = lo + (int)(rnd64() % (uint64_t)(hi - lo + 1));

			switch (rnd64() % 3) {
			case 0:
				rc = call(fd, LOOP_CTL_ADD, idx, "LOOP_CTL_ADD");
				break;
			case 1:
				rc = call(fd, LOOP_CTL_REMOVE, idx, "LOOP_CTL_REMOVE");
				break;
			default:
				rc = call(fd, LOOP_CTL_GET_FREE, 0, "LOOP_CTL_GET_FREE");
				break;
			}
			note(rc, errno);
		} else if (!strcmp(op, "rmmod")) {
			snprintf(cur, sizeof(cur), "delete_module %s", argv[0]);
			alarm(60);
			rc = syscall(SYS_delete_module, argv[0], O_NONBLOCK);
			alarm(0);
			note(rc, errno);
			usleep(2000);	/* leave the CPU to the others */
			if (rc == 0) {
				unloads++;
				fprintf(stderr, "lmq-hammer: module %s unloaded while in use\n", argv[0]);
			}
		}
	}

	printf("lmq-hammer %s: %lu iterations, %lu ok", op, iters, oks);
	for (i = 1; i < MAXE; i++) {
		if (!counts[i])
			continue;
		printf(", %s=%lu%s", errname(i), counts[i], allowed[i] ? "" : "(unexpected)");
		if (!allowed[i])
			bad = 1;
	}
	printf("\n");
	if (unloads)
		bad = 1;
	return bad;
}

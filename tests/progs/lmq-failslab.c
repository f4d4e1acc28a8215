// SPDX-License-Identifier: GPL-2.0
/*
 * lmq-failslab: run one kernel operation with fault injection enabled for
 * this task only (/proc/self/make-it-fail), around the system calls of the
 * operation and nothing else, so failslab / fail_page_alloc hit the module
 * loader, the driver's ioctls or its I/O path rather than exec and libc.
 * Configure /sys/kernel/debug/failslab (task-filter=Y, probability, ...)
 * first.  Prints "OK" or the errno number and name of the first failure.
 *
 * Usage: lmq-failslab OP ARGS...
 *   load KO [PARAMS]        finit_module(KO, PARAMS)
 *   configure DEV FILE      open both, LOOP_CONFIGURE (flags 0)
 *   setfd DEV FILE          LOOP_SET_FD
 *   clr DEV                 LOOP_CLR_FD
 *   add CTL N | remove CTL N | getfree CTL
 *   io DEV                  64 KiB O_DIRECT write then read at offset 0,
 *                           then fsync
 * Exit status: 0 on success, 1 when the operation failed, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <linux/loop.h>

static int mif = -1;

static void inject(int on)
{
	if (pwrite(mif, on ? "1" : "0", 1, 0) != 1) {
		perror("lmq-failslab: /proc/self/make-it-fail");
		exit(2);
	}
}

static int fail(int err)
{
	printf("%d %s\n", err, strerror(err));
	return 1;
}

static int xopen(const char *p, int flags)
{
	int fd = open(p, flags | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "lmq-failslab: open %s: %s\n", p, strerror(errno));
		exit(2);
	}
	return fd;
}

int main(int argc, char **argv)
{
	const char *op;
	long rc = 0;
	int err = 0, fd, fd2;
	void *buf;

	if (argc < 3)
		goto usage;
	op = argv[1];
	mif = open("/proc/self/make-it-fail", O_WRONLY | O_CLOEXEC);
	if (mif < 0) {
		perror("lmq-failslab: /proc/self/make-it-fail");
		return 2;
	}
	if (!strcmp(op, "load")) {
		fd = xopen(argv[2], O_RDONLY);
		inject(1);
		rc = syscall(SYS_finit_module, fd, argc > 3 ? argv[3] : "", 0);
		err = errno;
		inject(0);
	} else if (!strcmp(op, "configure") || !strcmp(op, "setfd")) {
		struct loop_config cfg;

		if (argc < 4)
			goto usage;
		fd = xopen(argv[2], O_RDWR);
		fd2 = xopen(argv[3], O_RDWR);
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = fd2;
		inject(1);
		if (!strcmp(op, "configure"))
			rc = ioctl(fd, LOOP_CONFIGURE, &cfg);
		else
			rc = ioctl(fd, LOOP_SET_FD, fd2);
		err = errno;
		inject(0);
	} else if (!strcmp(op, "clr")) {
		fd = xopen(argv[2], O_RDONLY);
		inject(1);
		rc = ioctl(fd, LOOP_CLR_FD, 0);
		err = errno;
		inject(0);
	} else if (!strcmp(op, "add") || !strcmp(op, "remove") || !strcmp(op, "getfree")) {
		unsigned long cmd = !strcmp(op, "add") ? LOOP_CTL_ADD :
			!strcmp(op, "remove") ? LOOP_CTL_REMOVE : LOOP_CTL_GET_FREE;

		if (cmd != LOOP_CTL_GET_FREE && argc < 4)
			goto usage;
		fd = xopen(argv[2], O_RDWR);
		inject(1);
		rc = ioctl(fd, cmd, cmd == LOOP_CTL_GET_FREE ? 0L : atol(argv[3]));
		err = errno;
		inject(0);
	} else if (!strcmp(op, "io")) {
		fd = xopen(argv[2], O_RDWR | O_DIRECT);
		if (posix_memalign(&buf, 4096, 65536))
			return 2;
		memset(buf, 0x5a, 65536);
		inject(1);
		rc = pwrite(fd, buf, 65536, 0);
		if (rc == 65536)
			rc = pread(fd, buf, 65536, 0);
		if (rc == 65536)
			rc = fsync(fd);
		else if (rc >= 0)
			rc = -1, errno = EIO;	/* short I/O */
		err = errno;
		inject(0);
	} else {
		goto usage;
	}
	if (rc < 0)
		return fail(err);
	printf("OK\n");
	return 0;
usage:
	fprintf(stderr, "usage: lmq-failslab load KO [PARAMS] | configure DEV FILE | setfd DEV FILE |"
		" clr DEV | add CTL N | remove CTL N | getfree CTL | io DEV\n");
	return 2;
}

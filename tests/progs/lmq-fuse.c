// SPDX-License-Identifier: GPL-2.0
/*
 * lmq-fuse: a FUSE file system of one file whose lookups can be stalled,
 * to stand for an NFS or FUSE server that stops answering.  It speaks the
 * kernel's protocol on /dev/fuse itself (no libfuse), single-threaded.
 *
 * Usage: lmq-fuse MOUNTPOINT BACKING STALLFLAG
 *   Mounts a file system on MOUNTPOINT holding one regular file, "img",
 *   whose reads and writes go to BACKING.  Every lookup is answered with
 *   no caching (entry and attribute timeouts 0), so each path walk through
 *   MOUNTPOINT asks again; while the file STALLFLAG exists a lookup is not
 *   answered (nor anything after it) until STALLFLAG is removed.  Runs in
 *   the foreground until the file system is unmounted.
 * Exit status: 0 after the unmount, 1 on errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <linux/fuse.h>

#define ROOT_ID		1
#define IMG_ID		2
#define MAX_WRITE	(128 * 1024)
#define BUF_SIZE	(MAX_WRITE + 4096)

static int dev_fd, back_fd;
static const char *stall_flag;
static char buf[BUF_SIZE];
static char data[MAX_WRITE];

static void reply(uint64_t unique, int err, const void *arg, size_t len)
{
	struct fuse_out_header h = {
		.len = sizeof(h) + (err ? 0 : len),
		.error = err,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{ &h, sizeof(h) },
		{ (void *)arg, err ? 0 : len },
	};

	/* ENOENT: the request was interrupted; nothing to do then. */
	if (writev(dev_fd, iov, 2) < 0 && errno != ENOENT)
		perror("lmq-fuse: reply");
}

static void fill_attr(uint64_t id, struct fuse_attr *a)
{
	struct stat st;

	memset(a, 0, sizeof(*a));
	a->ino = id;
	if (id == ROOT_ID) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
		return;
	}
	if (fstat(back_fd, &st) == 0) {
		a->size = st.st_size;
		a->blocks = st.st_blocks;
	}
	a->mode = S_IFREG | 0644;
	a->nlink = 1;
	a->blksize = 4096;
}

static void stall(void)
{
	while (access(stall_flag, F_OK) == 0)
		usleep(50000);
}

static void handle(struct fuse_in_header *in, void *arg)
{
	switch (in->opcode) {
	case FUSE_INIT: {
		struct fuse_init_in *ii = arg;
		struct fuse_init_out io = {
			.major = FUSE_KERNEL_VERSION,
			.minor = ii->minor,
			.max_readahead = ii->max_readahead,
			.flags = FUSE_BIG_WRITES & ii->flags,
			.max_write = MAX_WRITE,
			.time_gran = 1,
		};

		reply(in->unique, 0, &io, sizeof(io));
		break;
	}
	case FUSE_LOOKUP: {
		struct fuse_entry_out e = { .nodeid = IMG_ID, .generation = 1 };

		stall();
		if (in->nodeid != ROOT_ID || strcmp(arg, "img")) {
			reply(in->unique, -ENOENT, NULL, 0);
			break;
		}
		fill_attr(IMG_ID, &e.attr);
		reply(in->unique, 0, &e, sizeof(e));
		break;
	}
	case FUSE_GETATTR:
	case FUSE_SETATTR: {
		struct fuse_attr_out ao = { 0 };

		fill_attr(in->nodeid, &ao.attr);
		reply(in->unique, 0, &ao, sizeof(ao));
		break;
	}
	case FUSE_OPEN:
	case FUSE_OPENDIR: {
		struct fuse_open_out oo = { 0 };

		reply(in->unique, 0, &oo, sizeof(oo));
		break;
	}
	case FUSE_READ: {
		struct fuse_read_in *ri = arg;
		ssize_t n = 0;

		if (in->nodeid == IMG_ID)
			n = pread(back_fd, data, ri->size > MAX_WRITE ? MAX_WRITE : ri->size,
				  ri->offset);
		if (n < 0)
			reply(in->unique, -errno, NULL, 0);
		else
			reply(in->unique, 0, data, n);
		break;
	}
	case FUSE_WRITE: {
		struct fuse_write_in *wi = arg;
		struct fuse_write_out wo = { 0 };
		ssize_t n = pwrite(back_fd, wi + 1, wi->size, wi->offset);

		if (n < 0) {
			reply(in->unique, -errno, NULL, 0);
			break;
		}
		wo.size = n;
		reply(in->unique, 0, &wo, sizeof(wo));
		break;
	}
	case FUSE_FSYNC:
		fdatasync(back_fd);
		reply(in->unique, 0, NULL, 0);
		break;
	case FUSE_READDIR:
		reply(in->unique, 0, NULL, 0);	/* nothing listed */
		break;
	case FUSE_FLUSH:
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
		reply(in->unique, 0, NULL, 0);
		break;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		break;			/* no reply */
	case FUSE_DESTROY:
		reply(in->unique, 0, NULL, 0);
		exit(0);
	default:
		reply(in->unique, -ENOSYS, NULL, 0);
		break;
	}
}

int main(int argc, char **argv)
{
	char opts[128];
	ssize_t n;

	if (argc != 4) {
		fprintf(stderr, "usage: lmq-fuse MOUNTPOINT BACKING STALLFLAG\n");
		return 2;
	}
	stall_flag = argv[3];
	back_fd = open(argv[2], O_RDWR);
	dev_fd = open("/dev/fuse", O_RDWR);
	if (back_fd < 0 || dev_fd < 0) {
		perror("lmq-fuse: open");
		return 1;
	}
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", dev_fd);
	if (mount("lmq-fuse", argv[1], "fuse", MS_NOSUID | MS_NODEV, opts)) {
		perror("lmq-fuse: mount");
		return 1;
	}
	for (;;) {
		n = read(dev_fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR || errno == ENOENT || errno == EAGAIN)
				continue;
			if (errno == ENODEV)	/* unmounted */
				return 0;
			perror("lmq-fuse: read");
			return 1;
		}
		if ((size_t)n < sizeof(struct fuse_in_header))
			continue;
		handle((struct fuse_in_header *)buf,
		       buf + sizeof(struct fuse_in_header));
	}
}

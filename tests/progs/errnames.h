/* SPDX-License-Identifier: GPL-2.0 */
/*
 * errno <-> name for the test programs (lmq-ioctl prints names, lmq-hammer
 * reads lists of allowed ones).  A header, not a library: tests/vm/run
 * builds every tests/progs/ *.c on its own.
 */
#ifndef LMQ_TEST_ERRNAMES_H
#define LMQ_TEST_ERRNAMES_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct {
	int err;
	const char *name;
} errnames[] = {
	{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { EIO, "EIO" },
	{ ENXIO, "ENXIO" }, { EBADF, "EBADF" }, { EAGAIN, "EAGAIN" },
	{ ENOMEM, "ENOMEM" }, { EACCES, "EACCES" }, { EFAULT, "EFAULT" },
	{ EBUSY, "EBUSY" }, { EEXIST, "EEXIST" }, { ENODEV, "ENODEV" },
	{ ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" }, { EINVAL, "EINVAL" },
	{ ENOTTY, "ENOTTY" }, { EFBIG, "EFBIG" }, { ENOSPC, "ENOSPC" },
	{ EROFS, "EROFS" }, { ERANGE, "ERANGE" }, { ENOSYS, "ENOSYS" },
	{ EOVERFLOW, "EOVERFLOW" }, { EOPNOTSUPP, "EOPNOTSUPP" },
	{ ENOTBLK, "ENOTBLK" }, { EINTR, "EINTR" }, { ETXTBSY, "ETXTBSY" },
};

#define NR_ERRNAMES ((int)(sizeof(errnames) / sizeof(errnames[0])))

/* The symbolic name of @e, or "E<number>" for one not in the table. */
static inline const char *errname(int e)
{
	static char buf[16];
	int i;

	for (i = 0; i < NR_ERRNAMES; i++)
		if (errnames[i].err == e)
			return errnames[i].name;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

/* The errno called @s (a name from the table, or EWOULDBLOCK); -1 if none. */
static inline int errnum(const char *s)
{
	int i;

	if (!strcmp(s, "EWOULDBLOCK"))
		return EWOULDBLOCK;
	for (i = 0; i < NR_ERRNAMES; i++)
		if (!strcmp(errnames[i].name, s))
			return errnames[i].err;
	return -1;
}

#endif

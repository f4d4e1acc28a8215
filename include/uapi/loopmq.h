/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * loopmq user ABI: the extensions beyond include/uapi/linux/loop.h.
 *
 * loopmq devices (/dev/loopmqN) and the control device (/dev/loopmq-control)
 * answer the stock loop ioctls (LOOP_*, LOOP_CTL_*) with the stock numbers
 * and structures.  The ioctls below are loopmq's own.  All structures have
 * fixed-width fields, explicit padding and reserved space that must be zero
 * on input and is zeroed on output.
 */
#ifndef _UAPI_LOOPMQ_H
#define _UAPI_LOOPMQ_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define LOOPMQ_CONTROL_NAME	"loopmq-control"
#define LOOPMQ_DISK_PREFIX	"loopmq"

/*
 * The names of the dispatch modes, the paths a request can take and the
 * reasons it falls back to the kthread: one list each, expanded by the
 * module, lmqdev and the test programs with their own X(ID, name, help):
 *
 *   ID    the enumerator: LOOPMQ_MODE_ID, LOOPMQ_PATH_ID, LOOPMQ_FB_ID
 *   name  as sysfs and loopmqctl show it: loopmq/mode; loopmq/stats and
 *         "loopmqctl --stats" lines, where a fallback reason has "fb_" in
 *         front; the keys of "loopmqctl --stats -J".  loopmqctl's column
 *         is the name in capitals with '-' for '_' ("FB-" in front of a
 *         fallback reason).
 *   help  a line of description; loopmqctl --help shows those of the
 *         paths and fallback reasons with their columns.
 *
 * An entry's position is its value in the ABI (struct loopmq_mode_info,
 * the indexes of struct loopmq_stats): add at the end, never reorder.
 * A new entry is one line; the code that uses it and the documents that
 * list the names (loopmq(4), loopmqctl(8), docs/INTERFACES.md, which
 * make -C tools check compares) are the rest.
 */
#define LOOPMQ_MODES(X)							\
	X(DIRECT,	"direct",	"run the request inside queue_rq")	\
	X(KTHREAD,	"kthread",	"hand every request to the kthread") \
	X(AIO,		"aio",		"IOCB_NOWAIT aio from queue_rq")	\
	X(AUTO,		"auto",		"choose per request")			\
	/* new entries above this line */

#define LOOPMQ_PATHS(X)							\
	X(INLINE,	"inline",	"requests run inline in queue_rq")	\
	X(AIO_INLINE,	"aio_inline",	"aio requests done on submission") \
	X(AIO_ASYNC,	"aio_async",	"aio requests completed later")	\
	X(KTHREAD,	"kthread",	"requests run by the kthread")		\
	X(REMAP,	"remap",	"requests sent to the backing device as bios") \
	/* new entries above this line */

/*
 * Why a request that the mode would have run from queue_rq went to the
 * kthread instead (loopmq_io.c says when each applies).
 */
#define LOOPMQ_FALLBACKS(X)						\
	X(STACK,	"stack",	"too little stack")			\
	X(JOURNAL,	"journal",	"inside a journal transaction")		\
	X(RECLAIM,	"reclaim",	"submitter in memory reclaim")		\
	X(NESTED,	"nested",	"nested loopmq or NOIO scope")		\
	X(OP,		"op",		"flush, discard, write-zeroes")		\
	X(EAGAIN,	"eagain",	"NOWAIT would have blocked")		\
	X(ADAPTIVE,	"adaptive",	"recent NOWAIT writes blocked")		\
	X(NONOWAIT,	"nonowait",	"backing file cannot do NOWAIT")	\
	X(LOCKDEP,	"lockdep",	"lockdep kernel, submitter holds a lock") \
	X(SIGNAL,	"signal",	"submitter has a signal pending")	\
	X(WORKER,	"worker",	"blocking call from a workqueue worker") \
	X(REQNOWAIT,	"reqnowait",	"blocking call for a REQ_NOWAIT request") \
	X(FSIZE,	"fsize",	"write by a submitter with a file size limit") \
	X(INTERRUPTED,	"interrupted",	"call interrupted by the submitter's signal") \
	/* new entries above this line */

/*
 * The direct-I/O settings of a device (sysfs loopmq/direct_io,
 * LOOPMQ_SET_DIO's argument) and, for "auto", why it chose what it did
 * (loopmq/dio_auto "reason"; loopmq(4), "Direct I/O").
 */
#define LOOPMQ_DIO_SETTINGS(X)						\
	X(OFF,		"off",		"buffered I/O through the page cache") \
	X(ON,		"on",		"direct I/O where the backing allows it") \
	X(AUTO,		"auto",		"chosen from the backing's layout")	\
	/* new entries above this line */

#define LOOPMQ_DIO_REASONS(X)						\
	X(SET,		"set",		"not auto: the setting itself")		\
	X(WRITTEN,	"written",	"the range is allocated and written")	\
	X(SPARSE,	"sparse",	"holes or unwritten extents")		\
	X(SHARED,	"shared",	"extents shared with other files (reflink)") \
	X(NOBDEV,	"nobdev",	"no block device under the file system") \
	X(ALIGN,	"align",	"direct I/O impossible at this offset and block size") \
	X(UNKNOWN,	"unknown",	"layout unknown (no FIEMAP): as dio_default=Y") \
	X(BLOCKDEV,	"blockdev",	"a block device: direct I/O (remap)")	\
	X(PINNED,	"pinned",	"a pinned file: remapped")		\
	X(REWRITES,	"rewrites",	"costly blocks, but writes land on written ones") \
	/* new entries above this line */

#define __LOOPMQ_MODE_ENUM(id, name, help)	LOOPMQ_MODE_##id,
#define __LOOPMQ_PATH_ENUM(id, name, help)	LOOPMQ_PATH_##id,
#define __LOOPMQ_FB_ENUM(id, name, help)	LOOPMQ_FB_##id,

/* struct loopmq_mode_info.mode, sysfs loopmq/mode */
enum loopmq_mode {
	LOOPMQ_MODES(__LOOPMQ_MODE_ENUM)
	LOOPMQ_MODE_NR,
};

/* indexes of loopmq_stats.path[] */
enum loopmq_path {
	LOOPMQ_PATHS(__LOOPMQ_PATH_ENUM)
	LOOPMQ_PATH_NR,
};

/* indexes of loopmq_stats.fallback[] */
enum loopmq_fallback {
	LOOPMQ_FALLBACKS(__LOOPMQ_FB_ENUM)
	LOOPMQ_FB_NR,
};

#define __LOOPMQ_DIO_ENUM(id, name, help)	LOOPMQ_DIO_##id,
#define __LOOPMQ_DIO_WHY_ENUM(id, name, help)	LOOPMQ_DIO_WHY_##id,

/* LOOPMQ_SET_DIO's argument, sysfs loopmq/direct_io */
enum loopmq_dio_setting {
	LOOPMQ_DIO_SETTINGS(__LOOPMQ_DIO_ENUM)
	LOOPMQ_DIO_NR,
};

/* sysfs loopmq/dio_auto "reason" */
enum loopmq_dio_reason {
	LOOPMQ_DIO_REASONS(__LOOPMQ_DIO_WHY_ENUM)
	LOOPMQ_DIO_WHY_NR,
};

#undef __LOOPMQ_DIO_ENUM
#undef __LOOPMQ_DIO_WHY_ENUM
#undef __LOOPMQ_MODE_ENUM
#undef __LOOPMQ_PATH_ENUM
#undef __LOOPMQ_FB_ENUM

#define LOOPMQ_STATS_PATHS	8	/* room in loopmq_stats.path[] */
#define LOOPMQ_STATS_FALLBACKS	16	/* room in loopmq_stats.fallback[] */

struct loopmq_mode_info {
	__u32	mode;		/* enum loopmq_mode; LOOPMQ_SET_MODE: in */
	__u32	flags;		/* must be 0 */
	__u64	reserved[3];	/* must be 0 */
};

struct loopmq_stats {
	__u32	mode;		/* out: current enum loopmq_mode */
	__u32	nr_paths;	/* out: LOOPMQ_PATH_NR */
	__u32	nr_fallbacks;	/* out: LOOPMQ_FB_NR */
	__u32	pad;
	__u64	path[LOOPMQ_STATS_PATHS];	/* out: requests per path */
	__u64	fallback[LOOPMQ_STATS_FALLBACKS]; /* out: per reason */
	__u64	kthread_wakeups;	/* out: times the kthread was woken */
	__u64	peak_inflight;		/* out: most requests in flight */
	__u64	errors;			/* out: requests completed with error */
	__u64	reserved[5];		/* out: zero */
};

#define LOOPMQ_IOC_MAGIC	0x4C	/* 'L', as loop; numbers from 0xA0 */

/* Set / get the dispatch mode of a device (bound or not). */
#define LOOPMQ_SET_MODE		_IOW(LOOPMQ_IOC_MAGIC, 0xA0, struct loopmq_mode_info)
#define LOOPMQ_GET_MODE		_IOR(LOOPMQ_IOC_MAGIC, 0xA1, struct loopmq_mode_info)
/* Read the per-device statistics. */
#define LOOPMQ_GET_STATS	_IOR(LOOPMQ_IOC_MAGIC, 0xA2, struct loopmq_stats)
/* Zero the per-device statistics. */
#define LOOPMQ_RESET_STATS	_IO(LOOPMQ_IOC_MAGIC, 0xA3)
/*
 * How a bound device reaches a regular backing file (the argument, by
 * value, as LOOP_SET_DIRECT_IO's): through the file, or by remapping to
 * its file system's device with the file pinned, so that its blocks
 * cannot move (loopmq(4), "Pinned files").  Pinning needs CAP_SYS_ADMIN.
 * sysfs loopmq/pinned reads 1 while pinned.
 */
#define LOOPMQ_SET_REMAP	_IO(LOOPMQ_IOC_MAGIC, 0xA4)
#define LOOPMQ_REMAP_FILE	0
#define LOOPMQ_REMAP_PINNED	1

/*
 * The direct-I/O setting of a bound device (the argument, by value, an
 * enum loopmq_dio_setting): LOOPMQ_DIO_OFF and LOOPMQ_DIO_ON do what
 * LOOP_SET_DIRECT_IO does; LOOPMQ_DIO_AUTO measures the backing's layout
 * now (in the caller's context) and chooses, and chooses again as the
 * device's writes and discards change it.  sysfs loopmq/direct_io reads
 * the setting, loopmq/dio_auto what was chosen and why.
 */
#define LOOPMQ_SET_DIO		_IO(LOOPMQ_IOC_MAGIC, 0xA5)

#endif /* _UAPI_LOOPMQ_H */

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

/* Dispatch modes (struct loopmq_mode_info.mode, sysfs loopmq/mode). */
enum loopmq_mode {
	LOOPMQ_MODE_DIRECT	= 0,	/* run the request inside queue_rq */
	LOOPMQ_MODE_KTHREAD	= 1,	/* hand every request to the kthread */
	LOOPMQ_MODE_AIO		= 2,	/* IOCB_NOWAIT aio from queue_rq */
	LOOPMQ_MODE_AUTO	= 3,	/* choose per request */
	LOOPMQ_MODE_NR,
};

/* Paths a request can take; indexes of loopmq_stats.path[]. */
enum loopmq_path {
	LOOPMQ_PATH_INLINE	= 0,	/* executed synchronously in queue_rq */
	LOOPMQ_PATH_AIO_INLINE	= 1,	/* aio from queue_rq, done on return */
	LOOPMQ_PATH_AIO_ASYNC	= 2,	/* aio from queue_rq, completed later */
	LOOPMQ_PATH_KTHREAD	= 3,	/* executed or submitted by the kthread */
	LOOPMQ_PATH_NR,
};

/*
 * Why a request that the mode would have run from queue_rq went to the
 * kthread instead; indexes of loopmq_stats.fallback[].
 */
enum loopmq_fallback {
	LOOPMQ_FB_STACK		= 0,	/* too little stack left */
	LOOPMQ_FB_JOURNAL	= 1,	/* current->journal_info set */
	LOOPMQ_FB_RECLAIM	= 2,	/* submitter is in memory reclaim */
	LOOPMQ_FB_NESTED	= 3,	/* inside loopmq or another NOIO scope */
	LOOPMQ_FB_OP		= 4,	/* flush/discard/write-zeroes */
	LOOPMQ_FB_EAGAIN	= 5,	/* IOCB_NOWAIT answered "would block" */
	LOOPMQ_FB_ADAPTIVE	= 6,	/* recent NOWAIT writes kept blocking */
	LOOPMQ_FB_NONOWAIT	= 7,	/* backing file cannot do IOCB_NOWAIT */
	LOOPMQ_FB_LOCKDEP	= 8,	/* lockdep kernel: submitter holds a lock */
	LOOPMQ_FB_SIGNAL	= 9,	/* submitter has a signal pending */
	LOOPMQ_FB_WORKER	= 10,	/* blocking call from a workqueue worker */
	LOOPMQ_FB_REQNOWAIT	= 11,	/* blocking call for a REQ_NOWAIT request */
	LOOPMQ_FB_NR,
};

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

#endif /* _UAPI_LOOPMQ_H */

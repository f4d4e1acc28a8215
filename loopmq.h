/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loopmq: shared structures and cross-file prototypes.
 */
#ifndef LOOPMQ_H
#define LOOPMQ_H

#include <linux/bio.h>
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/llist.h>
#include <linux/loop.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <uapi/loopmq.h>

/* blk_mode_t, in the prototypes below, on 6.1 too */
#include "loopmq_compat.h"

enum loopmq_state {
	LOOPMQ_UNBOUND,
	LOOPMQ_BOUND,
	LOOPMQ_RUNDOWN,		/* being detached */
	LOOPMQ_DELETING,	/* being removed through the control device */
};

/* Per-cpu counters, summed when read: cheap enough to stay on. */
struct loopmq_pcpu_stats {
	u64	path[LOOPMQ_PATH_NR];
	u64	fallback[LOOPMQ_FB_NR];
	u64	kthread_wakeups;
	u64	errors;
};

/*
 * The backing file as the I/O path sees it.  Written only with the queue
 * frozen (or before the device is bound), so the I/O path reads it without
 * locks.
 */
struct loopmq_backing {
	struct file	*file;
	loff_t		offset;		/* added to every request's position */
	bool		use_dio;	/* IOCB_DIRECT on every read/write */
	bool		nowait_read;	/* IOCB_NOWAIT honoured for reads */
	bool		nowait_write;	/* ... and for writes */
	bool		is_reg;		/* regular file: freeze protection */
	bool		read_only;	/* LO_FLAGS_READ_ONLY */
	bool		never_blocks;	/* tmpfs: buffered I/O is a memcpy */
	bool		remap;		/* block device, dio: loopmq_remap.c */
	bool		remap_nowait;	/* ... whose queue takes REQ_NOWAIT */
	struct loopmq_pin *pin;		/* a pinned file: loopmq_pin.c */
};

/* A run of a pinned file's blocks that are consecutive on its device. */
struct loopmq_pin_ext {
	loff_t		pos;		/* in the file, bytes */
	sector_t	sector;		/* on the device */
	loff_t		len;		/* bytes */
};

/* The block map of a pinned file (DOC: pin in loopmq_pin.c). */
struct loopmq_pin {
	struct inode		*inode;		/* S_SWAPFILE set */
	struct block_device	*bdev;		/* its file system's device */
	loff_t			start;		/* file range mapped: the */
	loff_t			end;		/* device's, in bytes */
	unsigned int		nr;		/* extents in @ext */
	struct loopmq_pin_ext	*ext;		/* sorted by pos */
};

/*
 * Direct I/O "auto": which blocks of the device's range would make direct
 * I/O costly (DOC: dio auto in loopmq_dio.c).
 */
struct loopmq_dio_map {
	unsigned long	*map;		/* per block: costly for dio */
	unsigned long	nbits;		/* blocks in the device's range */
	unsigned int	shift;		/* a block is 1 << @shift bytes */
	atomic_long_t	costly;		/* bits set now */
	/*
	 * The blocks that writes touched, and of those the costly ones,
	 * since the window began; @window blocks make a window, whose costly
	 * share (per mille) goes to @write_permille: -1 for none since the
	 * mapping or the last discard or write-zeroes.
	 */
	atomic_long_t	win_blocks;
	atomic_long_t	win_costly;
	unsigned long	window;
	int		write_permille;
	u64		bytes;		/* measured: the range, */
	u64		holes;		/* ... its holes, */
	u64		unwritten;	/* ... unwritten extents */
	u64		shared;		/* ... and shared extents */
};

struct loopmq_device {
	int			index;
	struct gendisk		*disk;
	struct blk_mq_tag_set	tag_set;

	/*
	 * @mutex protects @state and the configuration below it.  Binding and
	 * unbinding also hold loopmq_bind_mutex (taken first), so that the
	 * backing chain of every device can be walked safely.
	 */
	struct mutex		mutex;
	enum loopmq_state	state;		/* protected by @mutex */
	int			lo_flags;	/* protected by @mutex */
	loff_t			sizelimit;	/* protected by @mutex */
	char			file_name[LO_NAME_SIZE]; /* protected by @mutex */
	bool			want_dio;	/* @mutex; read by queue_rq (auto) */
	u8			dio_setting;	/* enum loopmq_dio_setting; @mutex */
	u8			dio_reason;	/* enum loopmq_dio_reason; @mutex */
	unsigned int		dio_switches;	/* auto's switches; @mutex */
	struct loopmq_dio_map	*dio_map;	/* auto's map: set frozen */
	unsigned long		dio_pending;	/* bit 0: @dio_work queued */
	struct work_struct	dio_work;	/* auto: switch */
	gfp_t			old_gfp_mask;	/* protected by @mutex */
	bool			discard_off;	/* backing can't punch holes */
	bool			zeroes_off;	/* ... or zero ranges */
	bool			sysfs_loop;	/* loop/ group exists; @mutex */
	bool			idr_visible;	/* protected by loopmq_ctl_mutex */

	struct loopmq_backing	b;		/* see struct loopmq_backing */
	spinlock_t		file_lock;	/* b.file vs. sysfs readers */

	int			mode;		/* enum loopmq_mode, READ_ONCE */

	/* The kthread and its lock-free queue of loopmq_cmd.node. */
	struct task_struct	*thread;
	struct llist_head	kq;

	/* Request accounting for the adaptive choices. */
	atomic_t		inflight;
	unsigned int		peak_inflight;	/* racy max, stats only */
	unsigned int		recent_peak;	/* decaying max, see io.c */
	unsigned int		nowait_fail;	/* decaying write EAGAIN rate */
	unsigned int		sample;		/* racy counter for probes */
	unsigned int		stack_used_max;	/* stack probe: deepest call */
	unsigned int		stack_entry_max; /* stack probe: depth at entry */

	struct bio_set		bio_set;	/* remap: clones after the first */
	struct work_struct	discard_work;	/* stop advertising discard */
	struct loopmq_pcpu_stats __percpu *stats;
};

/*
 * A remapped request the kthread only finishes (loopmq_remap_finish()):
 * its last clone ended in a context that may not do the rest (sleep to
 * drop cached pages, or take this queue's flush lock).
 */
enum loopmq_remap_finish {
	LOOPMQ_REMAP_FINISH_NONE,	/* the kthread executes it as usual */
	LOOPMQ_REMAP_FINISH_END,	/* end it with cmd->status */
	LOOPMQ_REMAP_FINISH_INVAL,	/* drop cached pages, then end it */
};

/* Per-request state, in the request PDU. */
struct loopmq_cmd {
	struct kiocb		iocb;
	struct llist_node	node;		/* on loopmq_device.kq */
	struct bio_vec		*bvec;		/* allocated for multi-bio rqs */
	unsigned int		nr_bvec;
	unsigned int		done;		/* bytes already transferred */
	bool			nowait;		/* submitted with IOCB_NOWAIT */
	bool			from_kthread;	/* executed by the kthread */
	bool			finish_sync;	/* was short: sync loop only */
	blk_status_t		status;		/* final status */
	atomic_t		ref;		/* kiocb or clones in flight */
	long			res;		/* ->ki_complete's result */
	/* The remap path (loopmq_remap.c) */
	bool			remap_nowait;	/* clones carry REQ_NOWAIT */
	bool			remap_off;	/* the backing refused: file */
	u8			remap_finish;	/* enum loopmq_remap_finish */
	bool			remap_frozen;	/* holds the pinned fs's freeze */
	blk_status_t		remap_status;	/* a clone's error */
	struct bio		clone;		/* the first bio's clone */
};

/*
 * May @rq be executed synchronously, blocking, in this task?  Not for a
 * REQ_NOWAIT request (io_uring asked not to be blocked), and not from a
 * workqueue worker: kblockd runs queues of every block device and is a
 * reclaim workqueue, so a request dispatched from there (a plug flushed
 * from schedule(), a requeue, an async queue run) must not block it on
 * the backing file.  Returns the fallback reason, or -1.
 */
static inline int loopmq_sync_guard(struct request *rq)
{
	if (rq->cmd_flags & REQ_NOWAIT)
		return LOOPMQ_FB_REQNOWAIT;
	if (current->flags & PF_WQ_WORKER)
		return LOOPMQ_FB_WORKER;
	return -1;
}

/*
 * Writes to the backing file must be durable on completion: it was opened
 * with O_SYNC or O_DSYNC, or is marked synchronous (chattr +S, -o sync).
 */
static inline bool loopmq_file_dsync(struct file *file)
{
	return (file->f_flags & O_DSYNC) || IS_SYNC(file_inode(file));
}

static inline void loopmq_count_path(struct loopmq_device *lo, int path)
{
	this_cpu_inc(lo->stats->path[path]);
}

static inline void loopmq_count_fb(struct loopmq_device *lo, int reason)
{
	this_cpu_inc(lo->stats->fallback[reason]);
}

/* Expands the lists of include/uapi/loopmq.h into names, in enum order. */
#define LOOPMQ_NAME(id, name, help)	name,

/* loopmq_main.c */
extern int loopmq_default_mode;
extern unsigned int loopmq_stack_reserve;
extern bool loopmq_stack_probe;
extern bool loopmq_nowait_adaptive;
extern bool loopmq_fault_drop_flush;
extern bool loopmq_lockdep_guard;
extern bool loopmq_remap;
extern const char * const loopmq_mode_names[LOOPMQ_MODE_NR];
const char *loopmq_disk_prefix(void);	/* "loopmq", or "loop" when replacing */
unsigned int loopmq_dio_align(struct file *file); /* 0: no O_DIRECT */

/*
 * loopmq_main.c: what the loop ioctls do to a device, for loopmq_ioctl.c.
 * Each takes the device's mutex itself, and loopmq_bind_mutex before it
 * where a backing file is bound or switched.
 */
int loopmq_configure(struct loopmq_device *lo, blk_mode_t mode,
		     struct block_device *bdev,
		     const struct loop_config *config);
int loopmq_clr_fd(struct loopmq_device *lo);
int loopmq_change_fd(struct loopmq_device *lo,
		     struct block_device *bdev, unsigned int fd);
int loopmq_set_status(struct loopmq_device *lo,
		      const struct loop_info64 *info);
int loopmq_get_status(struct loopmq_device *lo,
		      struct loop_info64 *info);
int loopmq_set_dio(struct loopmq_device *lo, unsigned long arg);
int loopmq_set_dio_setting(struct loopmq_device *lo, unsigned long setting);
int loopmq_set_block_size(struct loopmq_device *lo,
			  blk_mode_t mode,
			  struct block_device *bdev, unsigned long arg);
int loopmq_set_capacity(struct loopmq_device *lo);
int loopmq_set_remap(struct loopmq_device *lo, unsigned long arg);

/*
 * loopmq_main.c: the lifecycle the control device drives, for loopmq_ctl.c.
 * Each takes loopmq_ctl_mutex, which guards the device index, itself, and
 * returns a device number, 0 for a removal, or a negative errno.
 */
int loopmq_add(int index);		/* index < 0: the first free number */
int loopmq_control_remove(int index);	/* -EBUSY while bound or open */
int loopmq_control_get_free(void);	/* an unbound device, added if none */

/* loopmq_ctl.c: the control device, /dev/loopmq-control */
int loopmq_ctl_register(bool replace);
void loopmq_ctl_unregister(void);

/* loopmq_ioctl.c: the block device's ->ioctl and ->compat_ioctl */
int loopmq_ioctl(struct block_device *bdev, blk_mode_t mode,
		 unsigned int cmd, unsigned long arg);
#ifdef CONFIG_COMPAT
int loopmq_compat_ioctl(struct block_device *bdev,
			blk_mode_t mode, unsigned int cmd,
			unsigned long arg);
#endif

/* loopmq_sysfs.c */
extern const struct attribute_group loopmq_loop_group;
extern const struct attribute_group *loopmq_disk_groups[];
void loopmq_sum_stats(struct loopmq_device *lo, struct loopmq_stats *s);
void loopmq_reset_stats(struct loopmq_device *lo);

/* loopmq_io.c */
blk_status_t loopmq_queue_rq(struct blk_mq_hw_ctx *hctx,
			     const struct blk_mq_queue_data *bd);
void loopmq_commit_rqs(struct blk_mq_hw_ctx *hctx);
void loopmq_complete_rq(struct request *rq);
int loopmq_init_request(struct blk_mq_tag_set *set, struct request *rq,
			unsigned int hctx_idx, unsigned int numa_node);
int loopmq_thread_start(struct loopmq_device *lo);
void loopmq_thread_stop(struct loopmq_device *lo);
void loopmq_kthread_queue(struct loopmq_device *lo, struct loopmq_cmd *cmd,
			  bool wake);
void loopmq_kiocb_done(struct loopmq_device *lo, struct request *rq, long ret,
		       bool async);

/* loopmq_aio.c */
int loopmq_aio_submit(struct loopmq_device *lo, struct request *rq,
		      bool nowait);
int loopmq_sync_rw(struct loopmq_device *lo, struct request *rq);

/* loopmq_dio.c */
extern const char * const loopmq_dio_names[LOOPMQ_DIO_NR];
extern const char * const loopmq_dio_reason_names[LOOPMQ_DIO_WHY_NR];
struct loopmq_dio_map *loopmq_dio_layout(struct file *file, loff_t start,
					 loff_t len, int *why);
void loopmq_dio_free(struct loopmq_dio_map *m);
bool loopmq_dio_map_wants(struct loopmq_dio_map *m, bool dio);
int loopmq_dio_map_reason(struct loopmq_dio_map *m, bool dio);
void loopmq_dio_note(struct loopmq_device *lo, struct loopmq_dio_map *m,
		     struct request *rq);

/* loopmq_remap.c */
bool loopmq_remap_ok(struct loopmq_device *lo, struct request *rq);
int loopmq_remap_submit(struct loopmq_device *lo, struct request *rq,
			bool nowait);
void loopmq_remap_finish(struct loopmq_device *lo, struct request *rq);

/* loopmq_pin.c */
int loopmq_pin_file(struct file *file, unsigned int lbs, loff_t offset,
		    loff_t len, struct loopmq_pin **out);
void loopmq_pin_free(struct loopmq_pin *pin);
sector_t loopmq_pin_lookup(const struct loopmq_pin *pin, loff_t pos,
			   loff_t *room);

#endif /* LOOPMQ_H */

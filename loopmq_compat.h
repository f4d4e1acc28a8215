/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the kernels loopmq builds for
 * (Linux 6.1 and 6.12) lives here, and only here.  The .c files use the
 * named capabilities and wrappers below, never LINUX_VERSION_CODE.  Written
 * to be deleted: when 6.1 support goes, the wrappers collapse into calls.
 */
#ifndef LOOPMQ_COMPAT_H
#define LOOPMQ_COMPAT_H

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/fs.h>

/*
 * The capabilities, each defined to 1 by a feature probe in Kbuild when the
 * target kernel has it:
 *
 * LOOPMQ_HAVE_ATOMIC_LIMITS	queue limits are set through queue_limits (6.9)
 * LOOPMQ_HAVE_BLK_MODE		->open() takes the gendisk and a blk_mode_t (6.5)
 * LOOPMQ_HAVE_HOLDER_OPS	bd_prepare_to_claim() takes holder ops (6.5)
 * LOOPMQ_HAVE_MEDIA_CHANGE_1ARG disk_force_media_change() has no events (6.6)
 * LOOPMQ_HAVE_FOP_FLAGS	buffered NOWAIT is a file_operations flag (6.11)
 * LOOPMQ_HAVE_PLUG_KTIME	a plug caches a timestamp (6.9)
 */

/*
 * Where an interface changed, the .c files use the newer kernel's names and
 * signatures; on the older kernel this header provides them, so that
 * dropping 6.1 deletes a block here rather than touching every caller.
 */
#ifndef LOOPMQ_HAVE_BLK_MODE
#define blk_mode_t		fmode_t
#define BLK_OPEN_WRITE		FMODE_WRITE
#define BLK_OPEN_EXCL		FMODE_EXCL
#endif

#ifndef LOOPMQ_HAVE_HOLDER_OPS
/* The holder ops argument came with 6.5; 6.1 has no use for them. */
#define bd_prepare_to_claim(bdev, holder, hops) \
	bd_prepare_to_claim(bdev, holder)
#endif

#ifndef LOOPMQ_HAVE_MEDIA_CHANGE_1ARG
/* 6.6 dropped the events argument: it was always DISK_EVENT_MEDIA_CHANGE. */
#define disk_force_media_change(disk) \
	disk_force_media_change(disk, DISK_EVENT_MEDIA_CHANGE)
#endif

/*
 * ->open() took the block device and ->release() the open mode before
 * 6.5: the driver implements loopmq_open_disk() and loopmq_release_disk(),
 * and these adapt them to the kernel's block_device_operations.
 */
int loopmq_open_disk(struct gendisk *disk);
void loopmq_release_disk(struct gendisk *disk);

#ifdef LOOPMQ_HAVE_BLK_MODE
static inline int loopmq_open(struct gendisk *disk, blk_mode_t mode)
{
	return loopmq_open_disk(disk);
}

static inline void loopmq_release(struct gendisk *disk)
{
	loopmq_release_disk(disk);
}
#else
static inline int loopmq_open(struct block_device *bdev, fmode_t mode)
{
	return loopmq_open_disk(bdev->bd_disk);
}

static inline void loopmq_release(struct gendisk *disk, fmode_t mode)
{
	loopmq_release_disk(disk);
}
#endif

/* What loopmq asks of its queue; applied by loopmq_queue_set_limits(). */
struct loopmq_limits {
	unsigned int	logical_block_size;
	unsigned int	max_discard_sectors;	/* 0: no discard */
	unsigned int	discard_granularity;
	unsigned int	max_write_zeroes_sectors;
	bool		write_cache;
	bool		fua;
	bool		rotational;	/* as the backing's device */
	unsigned int	dma_alignment;	/* 0: 511, the default */
};

/*
 * The largest request, as loop allows (BLK_DEF_MAX_SECTORS, renamed with
 * _CAP in 6.7).  Left unset, blk-mq's default is 255 sectors, and every
 * I/O over 127.5 KiB is split into several requests.
 */
#ifdef BLK_DEF_MAX_SECTORS_CAP
#define LOOPMQ_MAX_HW_SECTORS	BLK_DEF_MAX_SECTORS_CAP
#else
#define LOOPMQ_MAX_HW_SECTORS	BLK_DEF_MAX_SECTORS
#endif

#ifdef LOOPMQ_HAVE_ATOMIC_LIMITS
static inline void loopmq_to_queue_limits(struct queue_limits *lim,
					  const struct loopmq_limits *l)
{
	lim->logical_block_size = l->logical_block_size;
	lim->physical_block_size = l->logical_block_size;
	lim->io_min = l->logical_block_size;
	lim->max_hw_sectors = LOOPMQ_MAX_HW_SECTORS;
	lim->dma_alignment = l->dma_alignment ?: SECTOR_SIZE - 1;
	lim->max_hw_discard_sectors = l->max_discard_sectors;
	lim->discard_granularity = l->discard_granularity;
	lim->max_write_zeroes_sectors = l->max_write_zeroes_sectors;
	lim->features &= ~(BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA |
			   BLK_FEAT_ROTATIONAL);
	if (l->write_cache)
		lim->features |= BLK_FEAT_WRITE_CACHE;
	if (l->fua)
		lim->features |= BLK_FEAT_FUA;
	if (l->rotational)
		lim->features |= BLK_FEAT_ROTATIONAL;
}

static inline struct gendisk *loopmq_alloc_disk(struct blk_mq_tag_set *set,
						void *data,
						const struct loopmq_limits *l)
{
	struct queue_limits lim = { };

	loopmq_to_queue_limits(&lim, l);
	return blk_mq_alloc_disk(set, &lim, data);
}

static inline int loopmq_queue_set_limits(struct request_queue *q,
					  const struct loopmq_limits *l)
{
	struct queue_limits lim = queue_limits_start_update(q);

	loopmq_to_queue_limits(&lim, l);
	return queue_limits_commit_update(q, &lim);
}
#else
static inline int loopmq_queue_set_limits(struct request_queue *q,
					  const struct loopmq_limits *l)
{
	blk_queue_logical_block_size(q, l->logical_block_size);
	blk_queue_physical_block_size(q, l->logical_block_size);
	blk_queue_io_min(q, l->logical_block_size);
	blk_queue_max_hw_sectors(q, LOOPMQ_MAX_HW_SECTORS);
	blk_queue_dma_alignment(q, l->dma_alignment ?: SECTOR_SIZE - 1);
	q->limits.discard_granularity = l->discard_granularity;
	blk_queue_max_discard_sectors(q, l->max_discard_sectors);
	blk_queue_max_write_zeroes_sectors(q, l->max_write_zeroes_sectors);
	blk_queue_write_cache(q, l->write_cache, l->fua);
	if (l->rotational)
		blk_queue_flag_clear(QUEUE_FLAG_NONROT, q);
	else
		blk_queue_flag_set(QUEUE_FLAG_NONROT, q);
	return 0;
}

static inline struct gendisk *loopmq_alloc_disk(struct blk_mq_tag_set *set,
						void *data,
						const struct loopmq_limits *l)
{
	struct gendisk *disk = blk_mq_alloc_disk(set, data);

	if (!IS_ERR(disk))
		loopmq_queue_set_limits(disk->queue, l);
	return disk;
}
#endif

/* May IOCB_NOWAIT be set on a buffered write to @file? */
static inline bool loopmq_file_buffered_nowait_write(struct file *file)
{
#ifdef LOOPMQ_HAVE_FOP_FLAGS
	return file->f_op->fop_flags & FOP_BUFFER_WASYNC;
#else
	return file->f_mode & FMODE_BUF_WASYNC;
#endif
}

/*
 * A plug's cached timestamp is only invalidated by schedule() while the
 * task is flagged; an inline call that slept may have dropped the flag.
 */
static inline void loopmq_plug_forget_time(struct blk_plug *plug)
{
#ifdef LOOPMQ_HAVE_PLUG_KTIME
	plug->cur_ktime = 0;
#endif
}

#endif /* LOOPMQ_COMPAT_H */

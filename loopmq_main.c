// SPDX-License-Identifier: GPL-2.0
/*
 * loopmq: a loop block device on blk-mq that chooses, per request, whether
 * to run it in queue_rq, hand it to a kthread, or submit it as NOWAIT aio.
 *
 * This file: module parameters, device lifecycle, and what the control
 * device and the loop-compatible ioctls do to devices.  The control device
 * is in loopmq_ctl.c, the ioctls' interface in loopmq_ioctl.c, sysfs in
 * loopmq_sysfs.c, the I/O path in loopmq_io.c and loopmq_aio.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/file.h>
#include <linux/idr.h>
#include <linux/kthread.h>
#include <linux/major.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/namei.h>
#include <linux/pagemap.h>
#include <linux/sched/task_stack.h>
#include <linux/stat.h>
#include <linux/statfs.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <uapi/linux/magic.h>

#include "loopmq.h"
#include "loopmq_compat.h"

/* " direct kthread aio auto", for messages */
#define LOOPMQ_MODE_WORD(id, name, help) " " name

const char * const loopmq_mode_names[LOOPMQ_MODE_NR] = {
	LOOPMQ_MODES(LOOPMQ_NAME)
};

/* ---- module parameters: defaults for new devices ---- */

int loopmq_default_mode = LOOPMQ_MODE_AUTO;

static int loopmq_param_set_mode(const char *val, const struct kernel_param *kp)
{
	int mode = sysfs_match_string(loopmq_mode_names, val);

	if (mode < 0) {
		pr_err("mode=%s: expected one of:" LOOPMQ_MODES(LOOPMQ_MODE_WORD)
		       "\n", val);
		return -EINVAL;
	}
	*(int *)kp->arg = mode;
	return 0;
}

static int loopmq_param_get_mode(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", loopmq_mode_names[*(int *)kp->arg]);
}

static const struct kernel_param_ops loopmq_mode_ops = {
	.set	= loopmq_param_set_mode,
	.get	= loopmq_param_get_mode,
};

module_param_cb(mode, &loopmq_mode_ops, &loopmq_default_mode, 0644);
MODULE_PARM_DESC(mode, "Dispatch mode of new devices, one of:"
		 LOOPMQ_MODES(LOOPMQ_MODE_WORD) ". Default: auto");

/* A bounded unsigned parameter; the bounds live in the kernel_param. */
struct loopmq_uint_param {
	unsigned int	*var;
	unsigned int	min, max;
	bool		given;	/* set at load (max_loop's "specified") */
};

static int loopmq_param_set_uint(const char *val, const struct kernel_param *kp)
{
	struct loopmq_uint_param *p = kp->arg;
	unsigned int v;
	int ret;

	ret = kstrtouint(val, 0, &v);
	if (ret || v < p->min || v > p->max) {
		pr_err("%s=%s: expected an integer from %u to %u\n",
		       kp->name, val, p->min, p->max);
		return -EINVAL;
	}
	*p->var = v;
	p->given = true;
	return 0;
}

static int loopmq_param_get_uint(char *buf, const struct kernel_param *kp)
{
	const struct loopmq_uint_param *p = kp->arg;

	return sysfs_emit(buf, "%u\n", *p->var);
}

static const struct kernel_param_ops loopmq_uint_ops = {
	.set	= loopmq_param_set_uint,
	.get	= loopmq_param_get_uint,
};

static unsigned int loopmq_nr_devices = 1;
static struct loopmq_uint_param loopmq_p_nr_devices = {
	.var = &loopmq_nr_devices, .min = 0, .max = 1024,
};

module_param_cb(nr_devices, &loopmq_uint_ops, &loopmq_p_nr_devices, 0444);
MODULE_PARM_DESC(nr_devices, "Devices created at load time (0-1024). Default: 1");

static unsigned int loopmq_max_part;
static struct loopmq_uint_param loopmq_p_max_part = {
	.var = &loopmq_max_part, .min = 0, .max = 255,
};

module_param_cb(max_part, &loopmq_uint_ops, &loopmq_p_max_part, 0444);
MODULE_PARM_DESC(max_part, "Maximum partitions per device (0-255). Default: 0");

/*
 * replace_loop=1: loopmq takes the stock loop driver's place: block major
 * 7, disks named loop%d, /dev/loop-control at its fixed minor, a device
 * made when a /dev/loopN that does not exist yet is opened, and max_loop
 * with the stock meaning.  Refused (-EBUSY) while loop holds major 7.
 */
static bool loopmq_replace_loop;
module_param_named(replace_loop, loopmq_replace_loop, bool, 0444);
MODULE_PARM_DESC(replace_loop,
		 "Take the loop driver's place: block major 7, loop%d, /dev/loop-control. Default: N");

#ifdef CONFIG_BLK_DEV_LOOP_MIN_COUNT
#define LOOPMQ_LOOP_MIN_COUNT	CONFIG_BLK_DEV_LOOP_MIN_COUNT
#else
#define LOOPMQ_LOOP_MIN_COUNT	8
#endif

static unsigned int loopmq_max_loop = LOOPMQ_LOOP_MIN_COUNT;
static struct loopmq_uint_param loopmq_p_max_loop = {
	.var = &loopmq_max_loop, .min = 0, .max = 1U << MINORBITS,
};

module_param_cb(max_loop, &loopmq_uint_ops, &loopmq_p_max_loop, 0444);
MODULE_PARM_DESC(max_loop,
		 "replace_loop=1 only: devices made at load; when given and not 0, also the highest number a /dev/loopN open creates. Default: CONFIG_BLK_DEV_LOOP_MIN_COUNT");

static unsigned int loopmq_hw_queue_depth = 128;
static struct loopmq_uint_param loopmq_p_hw_queue_depth = {
	.var = &loopmq_hw_queue_depth, .min = 1, .max = 4096,
};

module_param_cb(hw_queue_depth, &loopmq_uint_ops, &loopmq_p_hw_queue_depth, 0444);
MODULE_PARM_DESC(hw_queue_depth, "Queue depth of each hardware queue (1-4096). Default: 128");

static unsigned int loopmq_nr_hw_queues;
static struct loopmq_uint_param loopmq_p_nr_hw_queues = {
	.var = &loopmq_nr_hw_queues, .min = 0, .max = 1024,
};

module_param_cb(nr_hw_queues, &loopmq_uint_ops, &loopmq_p_nr_hw_queues, 0444);
MODULE_PARM_DESC(nr_hw_queues, "Hardware queues per device, 0 for one per CPU (0-1024). Default: 0");

/*
 * The deepest inline call measured (bench/experiments/stack-depth.sh,
 * docs/BENCHMARKS.md "Inline stack depth") used 3288 bytes; 8192 keeps a
 * margin of 1.5 times that for paths the experiment did not reach.
 */
unsigned int loopmq_stack_reserve = 8192;
static struct loopmq_uint_param loopmq_p_stack_reserve = {
	.var = &loopmq_stack_reserve, .min = 1024, .max = THREAD_SIZE,
};

module_param_cb(stack_reserve, &loopmq_uint_ops, &loopmq_p_stack_reserve, 0644);
MODULE_PARM_DESC(stack_reserve,
		 "Bytes of stack that must be free to run a request inline; less sends it to the kthread (1024-THREAD_SIZE). Default: 8192");

bool loopmq_stack_probe;
module_param_named(stack_probe, loopmq_stack_probe, bool, 0644);
MODULE_PARM_DESC(stack_probe,
		 "Measure the stack used by inline calls (slow; ignored on KASAN kernels), see loopmq/stack. Default: 0");

bool loopmq_nowait_adaptive = true;
module_param_named(nowait_adaptive, loopmq_nowait_adaptive, bool, 0644);
MODULE_PARM_DESC(nowait_adaptive,
		 "While most recent IOCB_NOWAIT writes answered EAGAIN, do not try: send writes to the kthread (auto: run them blocking when allowed). Default: Y");

/* enum loopmq_dio_setting; shown as a bool is (N, Y), or "auto" */
static int loopmq_dio_default = LOOPMQ_DIO_OFF;

static int loopmq_param_set_dio(const char *val, const struct kernel_param *kp)
{
	int setting;
	bool on;

	/* a bare dio_default, as for a bool parameter: Y */
	if (!val)
		val = "Y";
	setting = sysfs_match_string(loopmq_dio_names, val);

	if (setting < 0) {
		if (kstrtobool(val, &on)) {
			pr_err("dio_default=%s: expected N, Y or auto\n", val);
			return -EINVAL;
		}
		setting = on ? LOOPMQ_DIO_ON : LOOPMQ_DIO_OFF;
	}
	WRITE_ONCE(*(int *)kp->arg, setting);
	return 0;
}

static int loopmq_param_get_dio(char *buf, const struct kernel_param *kp)
{
	int setting = READ_ONCE(*(int *)kp->arg);

	return sysfs_emit(buf, "%s\n", setting == LOOPMQ_DIO_AUTO ? "auto" :
			  setting == LOOPMQ_DIO_ON ? "Y" : "N");
}

static const struct kernel_param_ops loopmq_dio_ops = {
	.flags	= KERNEL_PARAM_OPS_FL_NOARG,
	.set	= loopmq_param_set_dio,
	.get	= loopmq_param_get_dio,
};

module_param_cb(dio_default, &loopmq_dio_ops, &loopmq_dio_default, 0644);
MODULE_PARM_DESC(dio_default,
		 "Direct I/O of an attach that does not ask for it: N (buffered, as the stock driver), Y (direct I/O wherever the backing's alignment allows it at the device's block size and offset, as if LO_FLAGS_DIRECT_IO were asked for; never changes the block size) or auto (chosen from the backing file's layout, see loopmq(4)). Default: N");

bool loopmq_fault_drop_flush;
module_param_named(fault_drop_flush, loopmq_fault_drop_flush, bool, 0444);
MODULE_PARM_DESC(fault_drop_flush,
		 "Testing only, loses data on power loss: acknowledge FLUSH without syncing the backing file and FUA writes without O_DSYNC (the power-loss trials' negative control). Default: N");

bool loopmq_remap = true;
module_param_named(remap, loopmq_remap, bool, 0644);
MODULE_PARM_DESC(remap,
		 "On a block-device backing with direct I/O, send requests to the backing device as bios, skipping its file layer (loopmq(4), REMAP). Default: Y");

bool loopmq_lockdep_guard = true;
module_param_named(lockdep_guard, loopmq_lockdep_guard, bool, 0644);
MODULE_PARM_DESC(lockdep_guard,
		 "Lockdep kernels only: send a request whose submitter holds a mutex or rwsem to the kthread, since lockdep takes an upper and a lower file system of one type for recursive locking. Default: Y");

/* ---- globals ---- */

static int loopmq_major;
static int loopmq_part_shift;

/* The disks' prefix, and the name of the block major. */
const char *loopmq_disk_prefix(void)
{
	return loopmq_replace_loop ? "loop" : LOOPMQ_DISK_PREFIX;
}

static DEFINE_IDR(loopmq_idr);
/* Protects loopmq_idr and every device's idr_visible. */
static DEFINE_MUTEX(loopmq_ctl_mutex);
/*
 * Held across every bind and unbind, so the backing chain of any device
 * (loopmq on a file on loopmq ...) can be walked without it changing.
 * Taken before a device's own mutex.
 */
static DEFINE_MUTEX(loopmq_bind_mutex);

static const struct block_device_operations loopmq_fops;

/*
 * The block device whose I/O an inode's I/O becomes: a block device node
 * itself, or the device of a block-based file system.  0 for none.
 */
static dev_t loopmq_dev_under(struct inode *inode)
{
	if (S_ISBLK(inode->i_mode))
		return inode->i_rdev;
	if (S_ISREG(inode->i_mode) && inode->i_sb->s_bdev)
		return inode->i_sb->s_bdev->bd_dev;
	return 0;
}

/* ---- size, limits and direct I/O ---- */

static loff_t loopmq_backing_size(struct file *file, loff_t offset,
				  loff_t sizelimit)
{
	loff_t size = i_size_read(file->f_mapping->host);

	size = size > offset ? size - offset : 0;
	if (sizelimit > 0 && sizelimit < size)
		size = sizelimit;
	return size >> SECTOR_SHIFT;
}

/* A bound device's size in sectors: a pinned file's map ends it. */
static sector_t loopmq_bound_size(struct loopmq_device *lo)
{
	loff_t limit = lo->sizelimit;

	if (lo->b.pin) {
		if (!limit || limit > lo->b.pin->end - lo->b.offset)
			limit = lo->b.pin->end - lo->b.offset;
	}
	return loopmq_backing_size(lo->b.file, lo->b.offset, limit);
}

static void loopmq_set_size(struct loopmq_device *lo, sector_t sectors)
{
	if (!set_capacity_and_notify(lo->disk, sectors))
		kobject_uevent(&disk_to_dev(lo->disk)->kobj, KOBJ_CHANGE);
}

/* The backing's direct I/O offset alignment, 0 if it cannot do O_DIRECT. */
unsigned int loopmq_dio_align(struct file *file)
{
	struct inode *inode = file->f_mapping->host;
	struct kstat st;

	if (!(file->f_mode & FMODE_CAN_ODIRECT))
		return 0;
	if (S_ISBLK(inode->i_mode))
		return bdev_logical_block_size(I_BDEV(inode));
	if (!vfs_getattr(&file->f_path, &st, STATX_DIOALIGN,
			 AT_STATX_SYNC_AS_STAT) &&
	    (st.result_mask & STATX_DIOALIGN))
		return st.dio_offset_align;
	if (inode->i_sb->s_bdev)
		return bdev_logical_block_size(inode->i_sb->s_bdev);
	/* Can do O_DIRECT but says nothing of alignment (tmpfs): as stock. */
	return SECTOR_SIZE;
}

/*
 * Does @file take IOCB_NOWAIT reads (and, with the caller's further test,
 * writes)?  FMODE_NOWAIT only says that its file operations look at the
 * flag.  A direct read or write turns it into REQ_NOWAIT on bios to the
 * device under the file, and a queue that does not take REQ_NOWAIT ends
 * such a bio BLK_STS_NOTSUPP (submit_bio_noacct()): dm-crypt, dm-thin,
 * most device-mapper targets, and 6.1's blkdev_open() sets FMODE_NOWAIT
 * on every block device.  So read the capability from the device, as
 * io_uring does (__io_file_supports_nowait()): the block device itself,
 * or the one the file system lives on.  A device-mapper table can change
 * under us; an EOPNOTSUPP from a NOWAIT call is therefore also retried
 * without NOWAIT (loopmq_kiocb_requeue()), never an error.
 */
static bool loopmq_file_nowait(struct file *file, bool dio)
{
	struct inode *inode = file->f_mapping->host;

	if (!(file->f_mode & FMODE_NOWAIT))
		return false;
	if (!dio)
		return true;
	if (S_ISBLK(inode->i_mode))
		return bdev_nowait(I_BDEV(inode));
	return !inode->i_sb->s_bdev || bdev_nowait(inode->i_sb->s_bdev);
}

static bool loopmq_can_dio(struct loopmq_device *lo, struct file *file,
			   unsigned int lbs)
{
	unsigned int align = loopmq_dio_align(file);

	return align && !(lo->b.offset & (align - 1)) && !(lbs & (align - 1)) &&
	       align <= lbs;
}

/*
 * Decide the per-file I/O properties, with the queue frozen or before the
 * device is live.  The LO_FLAGS_DIRECT_IO flag reports what is really
 * used, as the stock driver does.
 */
static void loopmq_update_backing(struct loopmq_device *lo, unsigned int lbs)
{
	struct file *file = lo->b.file;
	struct inode *inode = file->f_mapping->host;

	lockdep_assert_held(&lo->mutex);

	lo->b.use_dio = lo->want_dio && loopmq_can_dio(lo, file, lbs);
	lo->b.is_reg = S_ISREG(inode->i_mode);
	lo->b.read_only = lo->lo_flags & LO_FLAGS_READ_ONLY;
	lo->b.never_blocks = !lo->b.use_dio &&
			     inode->i_sb->s_magic == TMPFS_MAGIC;
	/* New file or new I/O properties: what NOWAIT did before says nothing. */
	WRITE_ONCE(lo->nowait_fail, 0);
	lo->b.nowait_read = loopmq_file_nowait(file, lo->b.use_dio);
	lo->b.nowait_write = lo->b.nowait_read &&
			     (lo->b.use_dio ||
			      loopmq_file_buffered_nowait_write(file));
	if (lo->b.use_dio)
		lo->lo_flags |= LO_FLAGS_DIRECT_IO;
	else
		lo->lo_flags &= ~LO_FLAGS_DIRECT_IO;
	/* The remap path, loopmq_remap.c; a pinned file, loopmq_pin.c */
	if (lo->b.pin) {
		lo->b.remap = true;
		lo->b.remap_nowait = bdev_nowait(lo->b.pin->bdev);
		return;
	}
	lo->b.remap = lo->b.use_dio && S_ISBLK(inode->i_mode);
	lo->b.remap_nowait = lo->b.remap && bdev_nowait(I_BDEV(inode));
	/* Clean pages nobody uses (blkid's) would keep it off. */
	if (lo->b.remap)
		invalidate_mapping_pages(file->f_mapping, 0, -1);
}

static void loopmq_limits_for_backing(struct loopmq_device *lo, unsigned int lbs,
				      struct loopmq_limits *l)
{
	struct file *file = lo->b.file;
	struct inode *inode = file->f_mapping->host;
	bool ro = lo->lo_flags & LO_FLAGS_READ_ONLY;
	struct kstatfs sbuf;

	memset(l, 0, sizeof(*l));
	l->logical_block_size = lbs;
	l->write_cache = !ro && file->f_op->fsync;
	l->fua = l->write_cache;
	/*
	 * Rotational if the device under the backing is: the block device
	 * itself, or the one its file system lives on; a file system without
	 * one (tmpfs, NFS) is taken as non-rotational, as the stock driver
	 * does.
	 */
	if (S_ISBLK(inode->i_mode))
		l->rotational = !bdev_nonrot(I_BDEV(inode));
	else if (inode->i_sb->s_bdev)
		l->rotational = !bdev_nonrot(inode->i_sb->s_bdev);
	/*
	 * The remap path sends the request's pages to a block-device
	 * backing as they are: they must meet its DMA alignment.  Its size
	 * limits are not stacked: the block layer splits a clone that
	 * exceeds them, which costs less than a second request of ours
	 * (with brd's 127.5 KiB limit, stacking it made 256 KiB reads
	 * slower, as measured when the remap path was written; the
	 * current figures: docs/BENCHMARKS.md, "Current results").
	 */
	if (S_ISBLK(inode->i_mode))
		l->dma_alignment = max(queue_dma_alignment(bdev_get_queue(I_BDEV(inode))),
				       SECTOR_SIZE - 1);
	/* A pinned file: the same for its file system's device, and no
	 * discard, which would have to go through fallocate (DOC: pin).
	 */
	if (lo->b.pin) {
		l->dma_alignment = max(queue_dma_alignment(bdev_get_queue(lo->b.pin->bdev)),
				       SECTOR_SIZE - 1);
		return;
	}
	/*
	 * Discard stays advertised on a read-only device, as with the stock
	 * driver: the block layer then refuses it with EPERM.
	 */
	if (lo->discard_off)
		return;
	if (S_ISBLK(inode->i_mode)) {
		struct block_device *bdev = I_BDEV(inode);
		unsigned int wz = bdev_write_zeroes_sectors(bdev);

		/* Discard becomes zero-out below, so it follows zeroing. */
		l->max_discard_sectors = wz;
		l->max_write_zeroes_sectors = wz;
		l->discard_granularity = bdev_discard_granularity(bdev) ?:
					 bdev_physical_block_size(bdev);
	} else if (file->f_op->fallocate && !vfs_statfs(&file->f_path, &sbuf)) {
		l->max_discard_sectors = UINT_MAX >> SECTOR_SHIFT;
		l->max_write_zeroes_sectors = UINT_MAX >> SECTOR_SHIFT;
		l->discard_granularity = sbuf.f_bsize;
	}
	if (lo->zeroes_off)
		l->max_write_zeroes_sectors = 0;
}

static unsigned int loopmq_lbs(struct loopmq_device *lo)
{
	return queue_logical_block_size(lo->disk->queue);
}

static int loopmq_set_backing_limits(struct loopmq_device *lo, unsigned int lbs)
{
	struct loopmq_limits l;

	loopmq_limits_for_backing(lo, lbs, &l);
	return loopmq_queue_set_limits(lo->disk->queue, &l);
}

/* Called from the I/O path's work item when fallocate said EOPNOTSUPP. */
static void loopmq_discard_work(struct work_struct *work)
{
	struct loopmq_device *lo = container_of(work, struct loopmq_device,
						discard_work);

	mutex_lock(&lo->mutex);
	if (lo->state == LOOPMQ_BOUND) {
		blk_mq_freeze_queue(lo->disk->queue);
		loopmq_set_backing_limits(lo, loopmq_lbs(lo));
		blk_mq_unfreeze_queue(lo->disk->queue);
	}
	mutex_unlock(&lo->mutex);
}

/*
 * Write back the device's range of the backing's page cache, and with
 * @drop then drop its clean pages: with none of our locks held and the
 * queue running.  A write-back error is left for the next flush to
 * report: the file's errseq is not advanced, as vfs_fsync() would.  The
 * mapping's one-shot error flags are cleared, as every waiter but
 * filemap_fdatawait_keep_errors() does: else the next direct request
 * through the file would find them and fail, whatever its own range.
 */
static void loopmq_dio_settle(struct file *file, loff_t start, loff_t len,
			      bool drop)
{
	struct address_space *mapping = file->f_mapping;
	loff_t end = len > 0 ? start + len - 1 : LLONG_MAX;

	filemap_fdatawrite_range(mapping, start, end);
	filemap_fdatawait_range(mapping, start, end);
	if (drop)
		invalidate_mapping_pages(mapping, start >> PAGE_SHIFT,
					 end >> PAGE_SHIFT);
}

/*
 * Switch a bound device's direct I/O to @want, with @mutex held, and put
 * *@map in place of its auto map (the old one comes back in *@map).  The
 * queue is frozen only for the change itself: no request is in flight or
 * fails, none is reordered.  The caller writes the backing's cached pages
 * back before (most of them, while requests still run) and after (what
 * the last buffered requests dirtied; going direct, the clean pages go
 * too: that mode does not read them, and they would only be a second copy
 * of the device's own page cache), with loopmq_dio_settle(), outside our
 * locks: the file system's own locks must not nest in the frozen queue.
 * Meanwhile direct I/O stays coherent: the file system writes back and
 * drops the range of a direct request itself.  Returns true when the
 * device now uses direct I/O and did not before.
 */
static bool loopmq_dio_switch(struct loopmq_device *lo, bool want,
			      struct loopmq_dio_map **map)
{
	bool was = lo->b.use_dio;

	lockdep_assert_held(&lo->mutex);
	blk_mq_freeze_queue(lo->disk->queue);
	if (map)
		swap(lo->dio_map, *map);
	WRITE_ONCE(lo->want_dio, want);
	loopmq_update_backing(lo, loopmq_lbs(lo));
	blk_mq_unfreeze_queue(lo->disk->queue);
	return lo->b.use_dio && !was;
}

/*
 * The choice of a bound (or binding) device's setting, with @mutex held,
 * from auto's @map, or @why there is none.
 */
static bool loopmq_dio_choose(struct loopmq_device *lo,
			      struct loopmq_dio_map *map, int why)
{
	bool want;

	if (lo->dio_setting != LOOPMQ_DIO_AUTO) {
		lo->dio_reason = LOOPMQ_DIO_WHY_SET;
		return lo->dio_setting == LOOPMQ_DIO_ON;
	}
	if (map) {
		want = loopmq_dio_map_wants(map, false);
		lo->dio_reason = loopmq_dio_map_reason(map, want);
	} else {
		want = why != LOOPMQ_DIO_WHY_NOBDEV;
		lo->dio_reason = why;
	}
	return want;
}

/* auto's switch, queued by loopmq_dio_note() (DOC: dio auto) */
static void loopmq_dio_work(struct work_struct *work)
{
	struct loopmq_device *lo = container_of(work, struct loopmq_device,
						dio_work);
	struct file *file = NULL;
	bool want, was, direct = false;
	loff_t start, len;

	mutex_lock(&lo->mutex);
	/* a request that changes the map from now on queues us again */
	clear_bit(0, &lo->dio_pending);
	/*
	 * Pairs with the full barrier of loopmq_dio_note()'s
	 * test_and_set_bit(): either it sees the bit clear and queues us
	 * again, or we see the map as it left it.
	 */
	smp_mb__after_atomic();
	if (lo->state != LOOPMQ_BOUND || lo->dio_setting != LOOPMQ_DIO_AUTO ||
	    !lo->dio_map)
		goto out_unlock;
	want = loopmq_dio_map_wants(lo->dio_map, lo->want_dio);
	if (want == lo->want_dio)
		goto out_unlock;
	file = get_file(lo->b.file);
	start = lo->b.offset;
	len = get_capacity(lo->disk) << SECTOR_SHIFT;
	mutex_unlock(&lo->mutex);

	/* most of the write-back, with requests still running */
	loopmq_dio_settle(file, start, len, false);

	mutex_lock(&lo->mutex);
	if (lo->state != LOOPMQ_BOUND || lo->dio_setting != LOOPMQ_DIO_AUTO ||
	    !lo->dio_map || lo->b.file != file ||
	    loopmq_dio_map_wants(lo->dio_map, lo->want_dio) != want)
		goto out_unlock;
	was = lo->b.use_dio;
	direct = loopmq_dio_switch(lo, want, NULL);
	lo->dio_reason = loopmq_dio_map_reason(lo->dio_map, want);
	if (lo->b.use_dio != was)
		lo->dio_switches++;
out_unlock:
	mutex_unlock(&lo->mutex);
	if (file) {
		/* the rest, and going direct, the clean pages */
		loopmq_dio_settle(file, start, len, direct);
		fput(file);
	}
}

/*
 * The device's range or file changed (LOOP_SET_STATUS, LOOP_SET_CAPACITY,
 * LOOP_CHANGE_FD): auto maps it anew, in the caller's context, with none
 * of our locks held.  Should that fail, the old map stays.
 */
static int __loopmq_set_dio_setting(struct loopmq_device *lo,
				    unsigned long setting, bool remap);

static void loopmq_dio_remap(struct loopmq_device *lo)
{
	if (READ_ONCE(lo->dio_setting) == LOOPMQ_DIO_AUTO)
		__loopmq_set_dio_setting(lo, LOOPMQ_DIO_AUTO, true);
}

/* ---- bind and unbind ---- */

/* Rescan the partition table, with the disk's open_mutex held. */
static void __loopmq_reread_partitions(struct loopmq_device *lo)
{
	int ret;

	lockdep_assert_held(&lo->disk->open_mutex);
	ret = bdev_disk_changed(lo->disk, false);
	/* The stock driver's words, which tools and blktests look for. */
	if (ret)
		pr_warn("partition scan of %s failed (rc=%d)\n",
			lo->disk->disk_name, ret);
}

static void loopmq_reread_partitions(struct loopmq_device *lo)
{
	mutex_lock(&lo->disk->open_mutex);
	__loopmq_reread_partitions(lo);
	mutex_unlock(&lo->disk->open_mutex);
}

/*
 * A new medium behind a bound device: drop what the page cache holds of
 * the old one and tell user space.  disk_force_media_change() also asks
 * the next opener to scan the partition table (GD_NEED_PART_SCAN), which
 * a bind must not let happen: it scans itself, and an opener's lazy scan
 * just before (udev's blkid answering the change event, any open that
 * waited in ->open for the bind to finish) makes the bind's scan drop
 * the partitions it found and add them again.  Partitions that vanish and
 * reappear fail systemd's BindsTo= units (systemd PR 41425; the block
 * layer stopped setting the flag there in 7.1).
 */
static void loopmq_media_changed(struct loopmq_device *lo)
{
	disk_force_media_change(lo->disk);
	clear_bit(GD_NEED_PART_SCAN, &lo->disk->state);
}

/*
 * The backing's page cache must not recurse into I/O on us: its
 * allocations lose __GFP_IO and __GFP_FS while @file is bound, and get
 * back what they had when the last device bound to it releases it.  Two
 * devices may share a backing (read-only, or by a user's choice): the
 * second finds the mask the first took away, so it keeps the first one's
 * saved mask, and the first to unbind leaves the mask reduced for the
 * other.  Every device bound to a mapping thus holds the mask from
 * before any of them, and the last puts it back.  Under
 * loopmq_bind_mutex, which keeps every device's @b.file as it is.
 */
static struct loopmq_device *loopmq_gfp_sharer(struct loopmq_device *lo,
					       struct address_space *mapping)
{
	struct loopmq_device *l, *found = NULL;
	int id;

	lockdep_assert_held(&loopmq_bind_mutex);
	mutex_lock(&loopmq_ctl_mutex);
	idr_for_each_entry(&loopmq_idr, l, id) {
		if (l != lo && l->b.file && l->b.file->f_mapping == mapping) {
			found = l;
			break;
		}
	}
	mutex_unlock(&loopmq_ctl_mutex);
	return found;
}

static void loopmq_take_backing_gfp(struct loopmq_device *lo,
				    struct file *file)
{
	struct loopmq_device *other = loopmq_gfp_sharer(lo, file->f_mapping);

	if (other) {
		lo->old_gfp_mask = other->old_gfp_mask;
		return;
	}
	lo->old_gfp_mask = mapping_gfp_mask(file->f_mapping);
	mapping_set_gfp_mask(file->f_mapping,
			     lo->old_gfp_mask & ~(__GFP_IO | __GFP_FS));
}

static void loopmq_put_backing_gfp(struct loopmq_device *lo,
				   struct file *file)
{
	if (!loopmq_gfp_sharer(lo, file->f_mapping))
		mapping_set_gfp_mask(file->f_mapping, lo->old_gfp_mask);
}

/*
 * The device a stock loop device reads and writes through: the backing
 * file its sysfs attribute names (the stock driver keeps its state
 * private), resolved to the device it lives on, or to itself if it is a
 * block device.  Best effort: a renamed or deleted backing file, or no
 * sysfs, ends the walk.  Returns 0 when there is nothing to follow.
 */
static dev_t loopmq_stock_loop_backing(dev_t dev)
{
	static const char * const fmt[] = {
		"/sys/dev/block/%u:%u/loop/backing_file",	/* the disk */
		"/sys/dev/block/%u:%u/../loop/backing_file",	/* a partition */
	};
	struct file *f = ERR_PTR(-ENOENT);
	struct path path;
	dev_t under = 0;
	loff_t pos = 0;
	ssize_t len;
	char *buf;
	int i;

	buf = kzalloc(PATH_MAX, GFP_KERNEL);
	if (!buf)
		return 0;
	for (i = 0; i < ARRAY_SIZE(fmt) && IS_ERR(f); i++) {
		snprintf(buf, PATH_MAX, fmt[i], MAJOR(dev), MINOR(dev));
		f = filp_open(buf, O_RDONLY, 0);
	}
	if (IS_ERR(f))
		goto out;
	len = kernel_read(f, buf, PATH_MAX - 1, &pos);
	fput(f);
	if (len <= 0)
		goto out;
	buf[len] = 0;
	strim(buf);
	if (kern_path(buf, LOOKUP_FOLLOW, &path))
		goto out;
	under = loopmq_dev_under(d_inode(path.dentry));
	path_put(&path);
out:
	kfree(buf);
	return under;
}

/*
 * Binding must not make a device its own backing, directly or through
 * other devices: loopmq or stock loop devices, or a file system on one of
 * them holding the backing file.  Walk the chain of devices under @file.
 */
#define LOOPMQ_MAX_CHAIN	16

/*
 * Stock loop devices met on a chain, each with the device under it.  A
 * stock loop device's backing is found by a path lookup, which may wait
 * for as long as the file system does (a stalled FUSE or NFS server): it
 * is made with no lock held (loopmq_stock_resolve()), never under
 * loopmq_bind_mutex, which every bind and unbind takes.  The stock
 * driver's bindings are not protected by that mutex anyway.
 */
struct loopmq_stock_hops {
	unsigned int	nr;
	dev_t		want;		/* the walk needs this one resolved */
	dev_t		dev[LOOPMQ_MAX_CHAIN];
	dev_t		under[LOOPMQ_MAX_CHAIN];
};

/* loopmq_validate_file(): resolve hops->want without locks, walk again. */
#define LOOPMQ_WALK_RESOLVE	1

static bool loopmq_stock_hop(const struct loopmq_stock_hops *hops, dev_t dev,
			     dev_t *under)
{
	unsigned int i;

	for (i = 0; i < hops->nr; i++) {
		if (hops->dev[i] == dev) {
			*under = hops->under[i];
			return true;
		}
	}
	return false;
}

/* With no lock held.  False when the walk met too many. */
static bool loopmq_stock_resolve(struct loopmq_stock_hops *hops)
{
	if (hops->nr == LOOPMQ_MAX_CHAIN)
		return false;
	hops->dev[hops->nr] = hops->want;
	hops->under[hops->nr] = loopmq_stock_loop_backing(hops->want);
	hops->nr++;
	return true;
}

/*
 * After loopmq_validate_file() answered LOOPMQ_WALK_RESOLVE: drop the
 * caller's locks (@lo's mutex, then loopmq_bind_mutex) and resolve.
 * True when the caller should take them again and walk again.
 */
static bool loopmq_walk_unlock_resolve(struct loopmq_device *lo,
				       struct loopmq_stock_hops *stock)
{
	mutex_unlock(&lo->mutex);
	mutex_unlock(&loopmq_bind_mutex);
	return loopmq_stock_resolve(stock);
}

/*
 * Returns 0, a negative errno, or LOOPMQ_WALK_RESOLVE: the caller drops
 * its locks, calls loopmq_stock_resolve() on @stock and takes them to
 * call again.
 */
static int loopmq_validate_file(struct file *file, struct block_device *bdev,
				struct loopmq_stock_hops *stock)
{
	struct inode *inode = file->f_mapping->host;
	dev_t self = bdev->bd_disk->part0->bd_dev;
	dev_t dev = loopmq_dev_under(inode);
	bool blk = S_ISBLK(inode->i_mode);
	int hops;

	lockdep_assert_held(&loopmq_bind_mutex);
	for (hops = 0; dev && hops < LOOPMQ_MAX_CHAIN; hops++) {
		struct loopmq_device *l = NULL;

		if (MAJOR(dev) == MAJOR(self) &&
		    MINOR(dev) >> loopmq_part_shift ==
		    MINOR(self) >> loopmq_part_shift)
			return -EBADF;
		if (MAJOR(dev) == loopmq_major) {
			mutex_lock(&loopmq_ctl_mutex);
			l = idr_find(&loopmq_idr,
				     MINOR(dev) >> loopmq_part_shift);
			mutex_unlock(&loopmq_ctl_mutex);
			/*
			 * The bind mutex keeps a bound device bound.  An
			 * unbound device ends the chain: refused as the
			 * backing itself, as the stock driver does.
			 */
			if (!l || l->state != LOOPMQ_BOUND) {
				if (blk)
					return -EINVAL;
				break;
			}
			inode = l->b.file->f_mapping->host;
			dev = loopmq_dev_under(inode);
			blk = S_ISBLK(inode->i_mode);
		} else if (MAJOR(dev) == LOOP_MAJOR) {
			if (!loopmq_stock_hop(stock, dev, &dev)) {
				stock->want = dev;
				return LOOPMQ_WALK_RESOLVE;
			}
			blk = false;
		} else {
			break;
		}
	}
	inode = file->f_mapping->host;
	if (!S_ISREG(inode->i_mode) && !S_ISBLK(inode->i_mode))
		return -EINVAL;
	if (!file->f_op->read_iter)
		return -EINVAL;
	/*
	 * Reads go through a kiocb built by hand, which the VFS does not
	 * check against the file's mode: refuse a write-only file here (the
	 * stock driver accepts it and fails every read with EBADF).
	 */
	if (!(file->f_mode & FMODE_READ))
		return -EBADF;
	return 0;
}

static int loopmq_info_check(const struct loop_info64 *info)
{
	if ((unsigned int)info->lo_encrypt_key_size > LO_KEY_SIZE)
		return -EINVAL;
	if (info->lo_encrypt_type != LO_CRYPT_NONE)
		return -EINVAL;
	if (info->lo_offset > LLONG_MAX || info->lo_sizelimit > LLONG_MAX)
		return -EOVERFLOW;
	return 0;
}

static void loopmq_info_apply(struct loopmq_device *lo,
			      const struct loop_info64 *info)
{
	lo->b.offset = info->lo_offset;
	lo->sizelimit = info->lo_sizelimit;
	memcpy(lo->file_name, info->lo_file_name, LO_NAME_SIZE);
	lo->file_name[LO_NAME_SIZE - 1] = 0;
}

static unsigned int loopmq_default_lbs(struct file *file)
{
	struct inode *inode = file->f_mapping->host;

	if ((file->f_flags & O_DIRECT) && inode->i_sb->s_bdev)
		return bdev_logical_block_size(inode->i_sb->s_bdev);
	return SECTOR_SIZE;
}

int loopmq_configure(struct loopmq_device *lo, blk_mode_t mode,
		     struct block_device *bdev,
		     const struct loop_config *config)
{
	struct loopmq_stock_hops hops = { 0 };
	struct file *file = fget(config->fd);
	struct loopmq_dio_map *dio_map = NULL;
	int dio_setting, dio_why = LOOPMQ_DIO_WHY_SET;
	unsigned int lbs;
	bool partscan;
	int err;

	if (!file)
		return -EBADF;
	/* Safe: the caller's open holds a reference. Dropped by unbind. */
	__module_get(THIS_MODULE);

	/*
	 * An O_DIRECT fd asks for direct I/O, as with the stock driver;
	 * else dio_default decides.  "auto" maps the backing now, in the
	 * caller's context and before our locks (DOC: dio auto).
	 */
	dio_setting = READ_ONCE(loopmq_dio_default);
	if ((config->info.lo_flags & LO_FLAGS_DIRECT_IO) ||
	    (file->f_flags & O_DIRECT))
		dio_setting = LOOPMQ_DIO_ON;
	if (dio_setting == LOOPMQ_DIO_AUTO) {
		loff_t start = config->info.lo_offset;
		loff_t len = loopmq_backing_size(file, start,
						 config->info.lo_sizelimit);

		dio_map = loopmq_dio_layout(file, start, len << SECTOR_SHIFT,
					    &dio_why);
		if (IS_ERR(dio_map)) {
			err = PTR_ERR(dio_map);
			dio_map = NULL;
			/* only a fatal signal fails the attach */
			if (err == -EINTR)
				goto out_putf;
			dio_why = LOOPMQ_DIO_WHY_UNKNOWN;
		}
	}

	/* Do not change a device under its exclusive owner. */
	if (!(mode & BLK_OPEN_EXCL)) {
		err = bd_prepare_to_claim(bdev, loopmq_configure, NULL);
		if (err)
			goto out_putf;
	}

again:
	mutex_lock(&loopmq_bind_mutex);
	mutex_lock(&lo->mutex);
	err = -EBUSY;
	if (lo->state != LOOPMQ_UNBOUND)
		goto out_unlock;
	err = loopmq_validate_file(file, bdev, &hops);
	if (err == LOOPMQ_WALK_RESOLVE) {
		if (loopmq_walk_unlock_resolve(lo, &hops))
			goto again;
		err = -EINVAL;
		goto out_abort;
	}
	if (err)
		goto out_unlock;
	err = -EINVAL;
	if (config->info.lo_flags & ~LOOP_CONFIGURE_SETTABLE_FLAGS)
		goto out_unlock;
	if (config->block_size) {
		err = blk_validate_block_size(config->block_size);
		if (err)
			goto out_unlock;
	}
	err = loopmq_info_check(&config->info);
	if (err)
		goto out_unlock;

	lo->b.file = file;
	err = loopmq_thread_start(lo);
	if (err) {
		lo->b.file = NULL;
		goto out_unlock;
	}

	loopmq_info_apply(lo, &config->info);
	lo->lo_flags = config->info.lo_flags;
	if (!(file->f_mode & FMODE_WRITE) || !(mode & BLK_OPEN_WRITE) ||
	    !file->f_op->write_iter)
		lo->lo_flags |= LO_FLAGS_READ_ONLY;
	if (loopmq_part_shift)
		lo->lo_flags |= LO_FLAGS_PARTSCAN;
	/* loopmq_update_backing() uses direct I/O only where it can. */
	WRITE_ONCE(lo->dio_setting, dio_setting);
	lo->dio_pending = 0;
	/* no request but flushes yet: the capacity is 0 until below */
	lo->dio_map = dio_map;
	dio_map = NULL;
	lo->dio_switches = 0;
	WRITE_ONCE(lo->want_dio, loopmq_dio_choose(lo, lo->dio_map, dio_why));
	lo->discard_off = false;
	lo->zeroes_off = false;

	dev_set_uevent_suppress(disk_to_dev(lo->disk), 1);
	loopmq_media_changed(lo);
	set_disk_ro(lo->disk, lo->lo_flags & LO_FLAGS_READ_ONLY);

	loopmq_take_backing_gfp(lo, file);

	lbs = config->block_size ?: loopmq_default_lbs(file);
	loopmq_update_backing(lo, lbs);
	loopmq_set_backing_limits(lo, lbs);
	loopmq_set_size(lo, loopmq_backing_size(file, lo->b.offset,
						lo->sizelimit));
	/* Only a listing depends on it: a failure does not fail the bind. */
	lo->sysfs_loop = !sysfs_create_group(&disk_to_dev(lo->disk)->kobj,
					     &loopmq_loop_group);
	if (!lo->sysfs_loop)
		pr_warn("%s: no loop/ sysfs directory\n", lo->disk->disk_name);

	lo->state = LOOPMQ_BOUND;
	partscan = lo->lo_flags & LO_FLAGS_PARTSCAN;
	if (partscan)
		clear_bit(GD_SUPPRESS_PART_SCAN, &lo->disk->state);
	mutex_unlock(&lo->mutex);
	mutex_unlock(&loopmq_bind_mutex);

	/*
	 * User space hears of the bind once the partitions are there, so
	 * that udev probing the disk on this event finds them all.  Their
	 * own add events need the disk's uevents on: a partition of a disk
	 * that suppresses them is added silently.  Nothing unbinds
	 * meanwhile: our caller holds the device open.
	 */
	dev_set_uevent_suppress(disk_to_dev(lo->disk), 0);
	if (partscan)
		loopmq_reread_partitions(lo);
	kobject_uevent(&disk_to_dev(lo->disk)->kobj, KOBJ_CHANGE);
	if (!(mode & BLK_OPEN_EXCL))
		bd_abort_claiming(bdev, loopmq_configure);
	return 0;

out_unlock:
	mutex_unlock(&lo->mutex);
	mutex_unlock(&loopmq_bind_mutex);
out_abort:
	if (!(mode & BLK_OPEN_EXCL))
		bd_abort_claiming(bdev, loopmq_configure);
out_putf:
	loopmq_dio_free(dio_map);
	fput(file);
	module_put(THIS_MODULE);
	return err;
}

/*
 * Undo loopmq_configure(), from the last ->release().  The caller moved the
 * device to RUNDOWN, in which it cannot be opened, and holds the disk's
 * open_mutex, which every open holds from ->open until it is counted in
 * disk_openers(): nobody can open the disk or a partition meanwhile, so
 * dropping the partitions cannot fail with EBUSY.
 */
static void loopmq_unbind(struct loopmq_device *lo)
{
	struct request_queue *q = lo->disk->queue;
	struct loopmq_dio_map *dio_map;
	struct loopmq_limits l = { .logical_block_size = SECTOR_SIZE };
	struct loopmq_pin *pin;
	struct file *file;

	lockdep_assert_held(&lo->disk->open_mutex);
	/*
	 * The partitions go first.  An opener that looked up a partition
	 * before it was dropped waits for open_mutex, which this release
	 * holds, and then opens it: a dropped partition keeps its size, so
	 * its reads reach the unbound device and fail (blktests loop/010:
	 * blkid probing p1 while the device is detached).  The rest of the
	 * unbind (the queue freeze, the kthread's end, an RCU grace period)
	 * takes tens of milliseconds; done first, the drop leaves such an
	 * opener only the few microseconds since the last close began.
	 * The medium is gone: the old one's page cache goes, the next opener
	 * is asked to scan (GD_NEED_PART_SCAN), and the drop, with capacity
	 * 0, clears that again and drops every partition, also those added
	 * with BLKPG (partx --add) to a device attached without partition
	 * scanning: a reused device must not show them.  No request is in
	 * flight: nobody has the device open.
	 */
	disk_force_media_change(lo->disk);
	invalidate_disk(lo->disk);
	__loopmq_reread_partitions(lo);

	mutex_lock(&loopmq_bind_mutex);
	/* Every request has completed once the queue is frozen. */
	blk_mq_freeze_queue(q);
	loopmq_thread_stop(lo);
	cancel_work_sync(&lo->discard_work);
	/* queued but not run: the next bind starts with the bit clear */
	cancel_work_sync(&lo->dio_work);
	clear_bit(0, &lo->dio_pending);

	loopmq_put_backing_gfp(lo, lo->b.file);
	spin_lock(&lo->file_lock);
	file = lo->b.file;
	pin = lo->b.pin;
	memset(&lo->b, 0, sizeof(lo->b));
	spin_unlock(&lo->file_lock);
	lo->sizelimit = 0;
	memset(lo->file_name, 0, LO_NAME_SIZE);
	loopmq_queue_set_limits(q, &l);
	/* Every remapped bio has ended: the file may change again. */
	loopmq_pin_free(pin);
	blk_mq_unfreeze_queue(q);

	/* The device stays in RUNDOWN: nobody binds it meanwhile. */
	mutex_unlock(&loopmq_bind_mutex);

	if (lo->sysfs_loop)
		sysfs_remove_group(&disk_to_dev(lo->disk)->kobj,
				   &loopmq_loop_group);
	lo->sysfs_loop = false;
	if (!loopmq_part_shift)
		set_bit(GD_SUPPRESS_PART_SCAN, &lo->disk->state);
	/* Partitions are gone before user space hears of the change. */
	kobject_uevent(&disk_to_dev(lo->disk)->kobj, KOBJ_CHANGE);

	/*
	 * auto's map goes under @mutex, which loopmq/dio_auto's readers
	 * hold; queue_rq fails a request on the unbound device before it
	 * would look at the map.
	 */
	mutex_lock(&lo->mutex);
	lo->lo_flags = 0;
	lo->state = LOOPMQ_UNBOUND;
	dio_map = lo->dio_map;
	lo->dio_map = NULL;
	mutex_unlock(&lo->mutex);
	loopmq_dio_free(dio_map);

	/*
	 * fput() of a block device takes its open_mutex, but not here: from a
	 * task it is deferred to the return to user space, from a kthread to
	 * a work item.
	 */
	fput(file);
	module_put(THIS_MODULE);
}

int loopmq_clr_fd(struct loopmq_device *lo)
{
	mutex_lock(&lo->mutex);
	if (lo->state != LOOPMQ_BOUND) {
		mutex_unlock(&lo->mutex);
		return -ENXIO;
	}
	/*
	 * Detach on the last close, as the stock driver does (since 6.11):
	 * only ->release() can unbind without racing an open, see
	 * loopmq_unbind().  When the caller is the only opener, that is its
	 * own close, and nobody may open the device from now on.  Held open
	 * by someone else too (udev's blkid, a mount), the device keeps
	 * working until they close it.
	 */
	lo->lo_flags |= LO_FLAGS_AUTOCLEAR;
	if (disk_openers(lo->disk) == 1)
		lo->state = LOOPMQ_RUNDOWN;
	mutex_unlock(&lo->mutex);
	return 0;
}

int loopmq_change_fd(struct loopmq_device *lo,
		     struct block_device *bdev, unsigned int fd)
{
	struct loopmq_stock_hops hops = { 0 };
	struct file *file = fget(fd);
	struct file *old;
	int err;

	if (!file)
		return -EBADF;
again:
	mutex_lock(&loopmq_bind_mutex);
	mutex_lock(&lo->mutex);
	err = -ENXIO;
	if (lo->state != LOOPMQ_BOUND)
		goto out_unlock;
	/* Only a read-only device may switch to another copy of its data. */
	err = -EINVAL;
	if (!(lo->lo_flags & LO_FLAGS_READ_ONLY))
		goto out_unlock;
	/* The pin is of this file: unpin first (LOOPMQ_REMAP_FILE). */
	err = -EBUSY;
	if (lo->b.pin)
		goto out_unlock;
	err = loopmq_validate_file(file, bdev, &hops);
	if (err == LOOPMQ_WALK_RESOLVE) {
		if (loopmq_walk_unlock_resolve(lo, &hops))
			goto again;
		fput(file);
		return -EINVAL;
	}
	if (err)
		goto out_unlock;
	err = -EINVAL;
	if (loopmq_backing_size(file, lo->b.offset, lo->sizelimit) !=
	    loopmq_backing_size(lo->b.file, lo->b.offset, lo->sizelimit))
		goto out_unlock;

	loopmq_media_changed(lo);
	blk_mq_freeze_queue(lo->disk->queue);
	old = lo->b.file;
	loopmq_put_backing_gfp(lo, old);
	spin_lock(&lo->file_lock);
	lo->b.file = file;
	spin_unlock(&lo->file_lock);
	loopmq_take_backing_gfp(lo, file);
	loopmq_update_backing(lo, loopmq_lbs(lo));
	loopmq_set_backing_limits(lo, loopmq_lbs(lo));
	blk_mq_unfreeze_queue(lo->disk->queue);
	mutex_unlock(&lo->mutex);
	mutex_unlock(&loopmq_bind_mutex);
	fput(old);
	if (lo->lo_flags & LO_FLAGS_PARTSCAN)
		loopmq_reread_partitions(lo);
	loopmq_dio_remap(lo);
	return 0;

out_unlock:
	mutex_unlock(&lo->mutex);
	mutex_unlock(&loopmq_bind_mutex);
	fput(file);
	return err;
}

int loopmq_set_status(struct loopmq_device *lo,
		      const struct loop_info64 *info)
{
	bool partscan = false, moved = false;
	int prev, err;

	err = mutex_lock_killable(&lo->mutex);
	if (err)
		return err;
	if (lo->state != LOOPMQ_BOUND) {
		err = -ENXIO;
		goto out_unlock;
	}
	err = loopmq_info_check(info);
	if (err)
		goto out_unlock;
	/* A pinned file's map is of the device's range: unpin first. */
	if (lo->b.pin && (lo->b.offset != info->lo_offset ||
			  lo->sizelimit != info->lo_sizelimit)) {
		err = -EBUSY;
		goto out_unlock;
	}
	if (lo->b.offset != info->lo_offset ||
	    lo->sizelimit != info->lo_sizelimit) {
		/* Cached data of the old mapping must not survive. */
		sync_blockdev(lo->disk->part0);
		invalidate_bdev(lo->disk->part0);
		moved = true;
	}

	blk_mq_freeze_queue(lo->disk->queue);
	prev = lo->lo_flags;
	loopmq_info_apply(lo, info);
	lo->lo_flags = (prev & ~LOOP_SET_STATUS_SETTABLE_FLAGS) |
		       (info->lo_flags & LOOP_SET_STATUS_SETTABLE_FLAGS) |
		       (prev & ~LOOP_SET_STATUS_CLEARABLE_FLAGS);
	loopmq_update_backing(lo, loopmq_lbs(lo));
	loopmq_set_backing_limits(lo, loopmq_lbs(lo));
	blk_mq_unfreeze_queue(lo->disk->queue);
	loopmq_set_size(lo, loopmq_bound_size(lo));
	if ((lo->lo_flags & LO_FLAGS_PARTSCAN) &&
	    !(prev & LO_FLAGS_PARTSCAN)) {
		clear_bit(GD_SUPPRESS_PART_SCAN, &lo->disk->state);
		partscan = true;
	}
out_unlock:
	mutex_unlock(&lo->mutex);
	if (partscan)
		loopmq_reread_partitions(lo);
	if (!err && moved)
		loopmq_dio_remap(lo);
	return err;
}

int loopmq_get_status(struct loopmq_device *lo,
		      struct loop_info64 *info)
{
	struct path path;
	struct kstat st;
	int err;

	err = mutex_lock_killable(&lo->mutex);
	if (err)
		return err;
	if (lo->state != LOOPMQ_BOUND) {
		mutex_unlock(&lo->mutex);
		return -ENXIO;
	}
	memset(info, 0, sizeof(*info));
	info->lo_number = lo->index;
	info->lo_offset = lo->b.offset;
	info->lo_sizelimit = lo->sizelimit;
	info->lo_flags = lo->lo_flags;
	memcpy(info->lo_file_name, lo->file_name, LO_NAME_SIZE);
	path = lo->b.file->f_path;
	path_get(&path);
	/* Do not hold our mutex across a call into the filesystem. */
	mutex_unlock(&lo->mutex);
	err = vfs_getattr(&path, &st, STATX_INO, AT_STATX_SYNC_AS_STAT);
	if (!err) {
		info->lo_device = huge_encode_dev(st.dev);
		info->lo_inode = st.ino;
		info->lo_rdevice = huge_encode_dev(st.rdev);
	}
	path_put(&path);
	return err;
}

/*
 * LOOPMQ_SET_DIO, sysfs loopmq/direct_io: @setting is an enum
 * loopmq_dio_setting.  "auto" maps the backing first, in the caller's
 * context, without our locks.  @remap: auto's new map of a changed range
 * or file (loopmq_dio_remap()), which a setting made meanwhile cancels.
 */
static int __loopmq_set_dio_setting(struct loopmq_device *lo,
				    unsigned long setting, bool remap)
{
	struct loopmq_dio_map *map = NULL;
	int err, why = LOOPMQ_DIO_WHY_SET;
	bool want, direct = false;
	struct file *file;
	loff_t start, len;

	if (setting >= LOOPMQ_DIO_NR)
		return -EINVAL;
	err = mutex_lock_killable(&lo->mutex);
	if (err)
		return err;
	if (lo->state != LOOPMQ_BOUND) {
		mutex_unlock(&lo->mutex);
		return -ENXIO;
	}
	file = get_file(lo->b.file);
	start = lo->b.offset;
	len = get_capacity(lo->disk) << SECTOR_SHIFT;
	mutex_unlock(&lo->mutex);

	if (setting == LOOPMQ_DIO_AUTO) {
		map = loopmq_dio_layout(file, start, len, &why);
		if (IS_ERR(map)) {
			err = PTR_ERR(map);
			map = NULL;
			goto out_put;
		}
	}
	/* most of the write-back, with requests still running */
	loopmq_dio_settle(file, start, len, false);

	err = mutex_lock_killable(&lo->mutex);
	if (err)
		goto out_put;
	err = -ENXIO;
	if (lo->state != LOOPMQ_BOUND)
		goto out_unlock;
	/* a new file or range meanwhile: the map is not of it */
	err = -EAGAIN;
	if (file != lo->b.file || start != lo->b.offset ||
	    len != get_capacity(lo->disk) << SECTOR_SHIFT)
		goto out_unlock;
	/* a setting made while we mapped stands (-EAGAIN: no settling) */
	if (remap && lo->dio_setting != LOOPMQ_DIO_AUTO)
		goto out_unlock;
	err = -EINVAL;
	if (setting == LOOPMQ_DIO_ON &&
	    !loopmq_can_dio(lo, lo->b.file, loopmq_lbs(lo)))
		goto out_unlock;
	err = 0;
	WRITE_ONCE(lo->dio_setting, setting);
	want = loopmq_dio_choose(lo, map, why);
	/* the new map in place; the old one comes back to be freed */
	direct = loopmq_dio_switch(lo, want, &map);
out_unlock:
	mutex_unlock(&lo->mutex);
	if (!err)
		loopmq_dio_settle(file, start, len, direct);
out_put:
	loopmq_dio_free(map);
	fput(file);
	return err;
}

int loopmq_set_dio_setting(struct loopmq_device *lo, unsigned long setting)
{
	return __loopmq_set_dio_setting(lo, setting, false);
}

/* LOOP_SET_DIRECT_IO */
int loopmq_set_dio(struct loopmq_device *lo, unsigned long arg)
{
	return loopmq_set_dio_setting(lo, arg ? LOOPMQ_DIO_ON : LOOPMQ_DIO_OFF);
}

int loopmq_set_block_size(struct loopmq_device *lo,
			  blk_mode_t mode,
			  struct block_device *bdev, unsigned long arg)
{
	struct file *file = NULL;
	bool was, direct = false;
	loff_t start = 0, len = 0;
	int err;

	if (!(mode & BLK_OPEN_EXCL)) {
		err = bd_prepare_to_claim(bdev, loopmq_set_block_size, NULL);
		if (err)
			return err;
	}
	err = mutex_lock_killable(&lo->mutex);
	if (err)
		goto out_claim;
	err = -ENXIO;
	if (lo->state != LOOPMQ_BOUND)
		goto out_unlock;
	err = blk_validate_block_size(arg);
	if (err || loopmq_lbs(lo) == arg)
		goto out_unlock;
	err = -EINVAL;
	if (lo->b.pin && arg < bdev_logical_block_size(lo->b.pin->bdev))
		goto out_unlock;
	err = 0;

	sync_blockdev(lo->disk->part0);
	invalidate_bdev(lo->disk->part0);
	was = lo->b.use_dio;
	blk_mq_freeze_queue(lo->disk->queue);
	loopmq_update_backing(lo, arg);
	err = loopmq_set_backing_limits(lo, arg);
	blk_mq_unfreeze_queue(lo->disk->queue);
	/*
	 * The new size may allow the direct I/O the setting asked for, or
	 * forbid it: then the backing's cache is settled as at a switch.
	 */
	if (lo->b.use_dio != was) {
		file = get_file(lo->b.file);
		start = lo->b.offset;
		len = get_capacity(lo->disk) << SECTOR_SHIFT;
		direct = lo->b.use_dio;
	}
out_unlock:
	mutex_unlock(&lo->mutex);
	if (file) {
		loopmq_dio_settle(file, start, len, direct);
		fput(file);
	}
out_claim:
	if (!(mode & BLK_OPEN_EXCL))
		bd_abort_claiming(bdev, loopmq_set_block_size);
	return err;
}

int loopmq_set_capacity(struct loopmq_device *lo)
{
	int err = 0;

	mutex_lock(&lo->mutex);
	if (lo->state != LOOPMQ_BOUND)
		err = -ENXIO;
	else
		loopmq_set_size(lo, loopmq_bound_size(lo));
	mutex_unlock(&lo->mutex);
	if (!err)
		loopmq_dio_remap(lo);
	return err;
}

/**
 * loopmq_set_remap - pin the backing file, or unpin it
 * @lo: the device
 * @arg: LOOPMQ_REMAP_PINNED or LOOPMQ_REMAP_FILE
 *
 * See DOC: pin in loopmq_pin.c.  Pinning freezes the queue first: no
 * write may be on its way through the file once it refuses writes.
 *
 * Return: 0 (also when already so), ENXIO (unbound), EINVAL (a bad
 * @arg, a block device, an empty device, or what loopmq_pin_file()
 * refuses), or the other errors of loopmq_pin_file().
 */
int loopmq_set_remap(struct loopmq_device *lo, unsigned long arg)
{
	struct loopmq_pin *pin = NULL;
	bool pinned;
	int err;

	if (arg != LOOPMQ_REMAP_FILE && arg != LOOPMQ_REMAP_PINNED)
		return -EINVAL;
	err = mutex_lock_killable(&lo->mutex);
	if (err)
		return err;
	err = -ENXIO;
	if (lo->state != LOOPMQ_BOUND)
		goto out;
	pinned = arg == LOOPMQ_REMAP_PINNED;
	err = 0;
	if (!!lo->b.pin == pinned)
		goto out;
	if (pinned) {
		/* Most of the write-back before the queue stops. */
		err = vfs_fsync(lo->b.file, 0);
		if (err)
			goto out;
	}
	blk_mq_freeze_queue(lo->disk->queue);
	if (pinned) {
		err = loopmq_pin_file(lo->b.file, loopmq_lbs(lo), lo->b.offset,
				      get_capacity(lo->disk) << SECTOR_SHIFT,
				      &pin);
		if (!err)
			lo->b.pin = pin;
		pin = NULL;
	} else {
		pin = lo->b.pin;
		lo->b.pin = NULL;
	}
	/*
	 * Unpinning: the file takes writes again before the first request
	 * that goes through it is dispatched, or that write would meet
	 * the pin's ETXTBSY and fail.  No request is in flight: every
	 * remapped bio has ended.
	 */
	loopmq_pin_free(pin);
	loopmq_update_backing(lo, loopmq_lbs(lo));
	loopmq_set_backing_limits(lo, loopmq_lbs(lo));
	blk_mq_unfreeze_queue(lo->disk->queue);
	/* The size stays: LOOP_SET_CAPACITY grows it, as ever. */
out:
	mutex_unlock(&lo->mutex);
	return err;
}

/* ---- open and release ---- */

int loopmq_open_disk(struct gendisk *disk)
{
	struct loopmq_device *lo = disk->private_data;
	int err;

	err = mutex_lock_killable(&lo->mutex);
	if (err)
		return err;
	/* Being detached or removed: see loopmq_unbind(). */
	if (lo->state == LOOPMQ_DELETING || lo->state == LOOPMQ_RUNDOWN)
		err = -ENXIO;
	mutex_unlock(&lo->mutex);
	return err;
}

/* Called with the disk's open_mutex held, after the opener was uncounted. */
void loopmq_release_disk(struct gendisk *disk)
{
	struct loopmq_device *lo = disk->private_data;

	if (disk_openers(disk) > 0)
		return;
	mutex_lock(&lo->mutex);
	if (lo->state == LOOPMQ_BOUND && (lo->lo_flags & LO_FLAGS_AUTOCLEAR))
		lo->state = LOOPMQ_RUNDOWN;
	if (lo->state != LOOPMQ_RUNDOWN) {
		mutex_unlock(&lo->mutex);
		return;
	}
	mutex_unlock(&lo->mutex);
	loopmq_unbind(lo);
}

/*
 * The last reference to the disk is gone.  Only now may the device be
 * freed: an open that raced LOOP_CTL_REMOVE (->open had returned, the
 * opener was not counted yet) still calls ->ioctl and ->release after
 * del_gendisk().
 */
static void loopmq_free_disk(struct gendisk *disk)
{
	struct loopmq_device *lo = disk->private_data;

	bioset_exit(&lo->bio_set);
	free_percpu(lo->stats);
	mutex_destroy(&lo->mutex);
	kfree(lo);
}

static const struct block_device_operations loopmq_fops = {
	.owner		= THIS_MODULE,
	.open		= loopmq_open,
	.release	= loopmq_release,
	.free_disk	= loopmq_free_disk,
	.ioctl		= loopmq_ioctl,
#ifdef CONFIG_COMPAT
	.compat_ioctl	= loopmq_compat_ioctl,
#endif
};

static const struct blk_mq_ops loopmq_mq_ops = {
	.queue_rq	= loopmq_queue_rq,
	.commit_rqs	= loopmq_commit_rqs,
	.complete	= loopmq_complete_rq,
	.init_request	= loopmq_init_request,
};

/* ---- adding and removing devices ---- */

int loopmq_add(int index)
{
	struct loopmq_limits l = { .logical_block_size = SECTOR_SIZE };
	struct loopmq_device *lo;
	struct gendisk *disk;
	int err;

	lo = kzalloc(sizeof(*lo), GFP_KERNEL);
	if (!lo)
		return -ENOMEM;
	mutex_init(&lo->mutex);
	spin_lock_init(&lo->file_lock);
	init_llist_head(&lo->kq);
	INIT_WORK(&lo->discard_work, loopmq_discard_work);
	INIT_WORK(&lo->dio_work, loopmq_dio_work);
	lo->mode = READ_ONCE(loopmq_default_mode);
	lo->stats = alloc_percpu(struct loopmq_pcpu_stats);
	err = -ENOMEM;
	if (!lo->stats)
		goto out_free_dev;
	/* Each device its own: a stacked one must not wait for ours. */
	err = bioset_init(&lo->bio_set, BIO_POOL_SIZE, 0, 0);
	if (err)
		goto out_free_stats;

	err = mutex_lock_killable(&loopmq_ctl_mutex);
	if (err)
		goto out_free_stats;
	if (index > (int)(MINORMASK >> loopmq_part_shift)) {
		err = -EINVAL;
	} else if (index >= 0) {
		err = idr_alloc(&loopmq_idr, lo, index, index + 1, GFP_KERNEL);
		if (err == -ENOSPC)
			err = -EEXIST;
	} else {
		err = idr_alloc(&loopmq_idr, lo, 0,
				(MINORMASK >> loopmq_part_shift) + 1,
				GFP_KERNEL);
	}
	mutex_unlock(&loopmq_ctl_mutex);
	if (err < 0)
		goto out_free_stats;
	lo->index = err;

	lo->tag_set.ops = &loopmq_mq_ops;
	lo->tag_set.nr_hw_queues = loopmq_nr_hw_queues ?: num_possible_cpus();
	lo->tag_set.queue_depth = loopmq_hw_queue_depth;
	lo->tag_set.numa_node = NUMA_NO_NODE;
	lo->tag_set.cmd_size = sizeof(struct loopmq_cmd);
	/*
	 * Blocking: direct mode sleeps in queue_rq, and any mode may.
	 * Stacking, like loop: the backing device's own queue is the one to
	 * schedule, so no elevator by default even with one hardware queue,
	 * and CPU hot-unplug need not drain a context whose requests other
	 * contexts finish.
	 */
	lo->tag_set.flags = BLK_MQ_F_SHOULD_MERGE | BLK_MQ_F_BLOCKING |
			    BLK_MQ_F_STACKING | BLK_MQ_F_NO_SCHED_BY_DEFAULT;
	lo->tag_set.driver_data = lo;
	err = blk_mq_alloc_tag_set(&lo->tag_set);
	if (err)
		goto out_free_idr;

	disk = loopmq_alloc_disk(&lo->tag_set, lo, &l);
	if (IS_ERR(disk)) {
		err = PTR_ERR(disk);
		goto out_free_tags;
	}
	lo->disk = disk;
	disk->major = loopmq_major;
	disk->first_minor = lo->index << loopmq_part_shift;
	disk->minors = 1 << loopmq_part_shift;
	disk->fops = &loopmq_fops;
	disk->private_data = lo;
	snprintf(disk->disk_name, DISK_NAME_LEN, "%s%d", loopmq_disk_prefix(),
		 lo->index);
	if (!loopmq_part_shift)
		set_bit(GD_SUPPRESS_PART_SCAN, &disk->state);
	set_capacity(disk, 0);
	err = device_add_disk(NULL, disk, loopmq_disk_groups);
	if (err)
		goto out_cleanup_disk;

	mutex_lock(&loopmq_ctl_mutex);
	lo->idr_visible = true;
	mutex_unlock(&loopmq_ctl_mutex);
	return lo->index;

out_cleanup_disk:
	put_disk(disk);
out_free_tags:
	blk_mq_free_tag_set(&lo->tag_set);
out_free_idr:
	mutex_lock(&loopmq_ctl_mutex);
	idr_remove(&loopmq_idr, lo->index);
	mutex_unlock(&loopmq_ctl_mutex);
out_free_stats:
	bioset_exit(&lo->bio_set);
	free_percpu(lo->stats);
out_free_dev:
	kfree(lo);
	return err;
}

/* The device itself is freed by loopmq_free_disk(), maybe later. */
static void loopmq_remove(struct loopmq_device *lo)
{
	del_gendisk(lo->disk);
	blk_mq_free_tag_set(&lo->tag_set);
	mutex_lock(&loopmq_ctl_mutex);
	idr_remove(&loopmq_idr, lo->index);
	mutex_unlock(&loopmq_ctl_mutex);
	put_disk(lo->disk);
}

int loopmq_control_remove(int index)
{
	struct loopmq_device *lo;
	int err;

	if (index < 0)
		return -EINVAL;
	/* Hide the device so that nobody else finds it meanwhile. */
	err = mutex_lock_killable(&loopmq_ctl_mutex);
	if (err)
		return err;
	lo = idr_find(&loopmq_idr, index);
	if (!lo || !lo->idr_visible)
		err = -ENODEV;
	else
		lo->idr_visible = false;
	mutex_unlock(&loopmq_ctl_mutex);
	if (err)
		return err;

	mutex_lock(&lo->mutex);
	if (lo->state != LOOPMQ_UNBOUND || disk_openers(lo->disk) > 0) {
		mutex_unlock(&lo->mutex);
		mutex_lock(&loopmq_ctl_mutex);
		lo->idr_visible = true;
		mutex_unlock(&loopmq_ctl_mutex);
		return -EBUSY;
	}
	lo->state = LOOPMQ_DELETING;
	mutex_unlock(&lo->mutex);
	loopmq_remove(lo);
	return 0;
}

int loopmq_control_get_free(void)
{
	struct loopmq_device *lo;
	int id, err;

	err = mutex_lock_killable(&loopmq_ctl_mutex);
	if (err)
		return err;
	idr_for_each_entry(&loopmq_idr, lo, id) {
		/* data_race: losing it only adds a device, harmlessly. */
		if (lo->idr_visible && data_race(lo->state) == LOOPMQ_UNBOUND) {
			mutex_unlock(&loopmq_ctl_mutex);
			return id;
		}
	}
	mutex_unlock(&loopmq_ctl_mutex);
	return loopmq_add(-1);
}

/*
 * replace_loop: an open of a block device node on major 7 that has no
 * disk makes the device, as the stock driver does (CONFIG_BLOCK_LEGACY_
 * AUTOLOAD; called under the block layer's major-names lock, which
 * unregister_blkdev() takes too, so no call runs after module exit began).
 */
static void loopmq_probe(dev_t dev)
{
	int index = MINOR(dev) >> loopmq_part_shift;

	if (loopmq_p_max_loop.given && loopmq_max_loop &&
	    index >= (int)loopmq_max_loop)
		return;
	loopmq_add(index);
}

static int __init loopmq_register_major(void)
{
	int err;

	if (!loopmq_replace_loop) {
		if (loopmq_p_max_loop.given) {
			pr_err("max_loop applies with replace_loop=1 only; nr_devices sets how many loopmq devices are made\n");
			return -EINVAL;
		}
		err = register_blkdev(0, loopmq_disk_prefix());
		if (err < 0)
			return err;
		loopmq_major = err;
		return 0;
	}
	if (loopmq_max_loop > 1U << (MINORBITS - loopmq_part_shift)) {
		pr_err("max_loop=%u: more than %u devices with max_part=%u\n",
		       loopmq_max_loop, 1U << (MINORBITS - loopmq_part_shift),
		       loopmq_max_part);
		return -EINVAL;
	}
	err = __register_blkdev(LOOP_MAJOR, loopmq_disk_prefix(), loopmq_probe);
	if (err == -EBUSY)
		pr_err("replace_loop=1: block major %d is taken: the loop driver is loaded or built in; unload it (modprobe -r loop) or load loopmq without replace_loop\n",
		       LOOP_MAJOR);
	if (err)
		return err;
	loopmq_major = LOOP_MAJOR;
	return 0;
}

/*
 * Module exit, and init once the major and the control device exist.  No
 * device is bound or open: each would hold a module reference.  The major
 * and the control device go first, so that neither a probe nor
 * LOOP_CTL_ADD makes a device behind the removal.
 */
static void loopmq_teardown(void)
{
	struct loopmq_device *lo;
	int id;

	unregister_blkdev(loopmq_major, loopmq_disk_prefix());
	loopmq_ctl_unregister();
	idr_for_each_entry(&loopmq_idr, lo, id)
		loopmq_remove(lo);
	idr_destroy(&loopmq_idr);
}

static int __init loopmq_init(void)
{
	unsigned int i, nr;
	int err;

	BUILD_BUG_ON(sizeof(struct loopmq_mode_info) != 32);
	BUILD_BUG_ON(sizeof(struct loopmq_stats) != 272);
	BUILD_BUG_ON(LOOPMQ_PATH_NR > LOOPMQ_STATS_PATHS);
	BUILD_BUG_ON(LOOPMQ_FB_NR > LOOPMQ_STATS_FALLBACKS);

	if (loopmq_max_part > 0) {
		loopmq_part_shift = fls(loopmq_max_part);
		loopmq_max_part = (1U << loopmq_part_shift) - 1;
	}

	err = loopmq_register_major();
	if (err)
		return err;

	err = loopmq_ctl_register(loopmq_replace_loop);
	if (err)
		goto out_unregister_blkdev;

	/* replace_loop: max_loop as the stock driver, unless nr_devices is given */
	nr = loopmq_nr_devices;
	if (loopmq_replace_loop && !loopmq_p_nr_devices.given)
		nr = loopmq_max_loop;
	for (i = 0; i < nr; i++) {
		err = loopmq_add(i);
		if (err == -EEXIST)	/* an open of /dev/loopN made it */
			continue;
		if (err < 0)
			goto out_remove_devices;
	}
	pr_info("loaded: %u devices %s*, mode %s\n", nr, loopmq_disk_prefix(),
		loopmq_mode_names[loopmq_default_mode]);
	return 0;

out_remove_devices:
	loopmq_teardown();
	return err;
out_unregister_blkdev:
	unregister_blkdev(loopmq_major, loopmq_disk_prefix());
	return err;
}

static void __exit loopmq_exit(void)
{
	loopmq_teardown();
}

module_init(loopmq_init);
module_exit(loopmq_exit);
MODULE_DESCRIPTION("loop block device with per-request dispatch");
MODULE_LICENSE("GPL");

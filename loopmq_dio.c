// SPDX-License-Identifier: GPL-2.0
/*
 * loopmq_dio.c: direct I/O "auto", the choice between direct and buffered
 * I/O made from the backing file's layout.
 *
 * DOC: dio auto
 *
 * Direct I/O is the better setting on a fully written image: one copy of
 * the data in memory (the device's page cache only) and no write-back of
 * the backing's own page cache.  On a sparse or reflinked image buffered
 * I/O is: a direct write into a hole or an unwritten extent allocates and
 * converts it in a transaction of its own, and one into a shared extent
 * copies it first, request by request, where buffered I/O gathers those
 * writes into the file system's write-back (docs/BENCHMARKS.md, "Sparse
 * and reflinked image files").
 *
 * So "auto" maps the device's range at attach, in the context of the task
 * that asked for it (LOOP_CONFIGURE, LOOPMQ_SET_DIO, a write to sysfs
 * loopmq/direct_io), before any lock of ours is taken: FIEMAP of the range
 * through a page mapped into that task for the call, since a file
 * system's ->fiemap() writes its answer to user memory.  Every block
 * (4 KiB, coarser for images over 16 GiB: at most 2^22 blocks) that has
 * a hole, an unwritten or a shared extent in it is "costly" for direct
 * I/O, a bit in a map.  Direct I/O is chosen when at most 1/32 of the
 * blocks are costly.
 *
 * The device then keeps the map current itself, without asking the file
 * system again: a write that covers a block whole clears its bit (the
 * block is allocated, written and, if it was shared, copied), a discard
 * or write-zeroes sets the bits of the blocks it touches (a punched hole,
 * an unwritten extent).  That costs queue_rq a few bit operations per
 * request on such a device and nothing on the others.  When the share of
 * costly blocks crosses the threshold, a work item switches: direct I/O
 * at 1/32 or less, buffered again above 1/8 (the gap keeps a device near
 * the threshold from switching back and forth).
 *
 * The share of the range alone misjudges an image with a file system on
 * the device: the file system's free space stays costly for good (it was
 * discarded by mkfs, or never written), yet its writes go to the blocks it
 * already uses, where direct I/O pays nothing, and buffered I/O keeps
 * every block twice, in its page cache and in the image's.  So the device
 * also counts, over a window of written blocks (1/64 of the map, 256 to
 * 4096), how many of them were costly when written: a window with at most
 * 1/32 costly chooses direct I/O as a written range does (reason
 * "rewrites"), and from direct I/O only a range and a window both above
 * 1/8 go buffered again.  A discard or write-zeroes forgets the windows:
 * after it, the range's share decides until the next window is full.
 * Where the range's share alone decides (a written image), no window is
 * counted: queue_rq then touches no shared counter.
 *
 * The switch
 * (loopmq_dio_work(), loopmq_dio_switch() in loopmq_main.c) writes the
 * device's range of the backing's page cache back while requests still
 * run, freezes the queue only to change the setting, then writes back
 * what the last buffered requests dirtied and, going direct, drops the
 * clean pages; nothing fails or is reordered, and a write-back error is
 * left for the next flush to report.  The write-back runs outside our
 * locks and outside the frozen queue: the file system's locks must not
 * nest in it.  Meanwhile a FLUSH on a block-device backing whose page
 * cache still holds dirty pages takes the file path (DOC: remap).
 * LOOP_SET_STATUS (offset, size limit), LOOP_SET_CAPACITY and
 * LOOP_CHANGE_FD map the device anew, without our locks; a setting made
 * meanwhile stands, and the new map is dropped.
 *
 * What the map does not see: writes to the image from outside the device,
 * and a reflinked partner's writes that unshare this file's extents
 * (setting "auto" again measures anew); and, past 16 GiB, where a block
 * of the map is larger than 4 KiB, writes smaller than a block.
 * A measurement that fails (but for a fatal signal) leaves the layout
 * unknown; it never fails the attach.
 *
 * Without a block device under its file system (tmpfs), a file stays
 * buffered: its buffered I/O is a copy into its own pages, and direct I/O
 * there saves nothing.  A block device backing takes direct I/O (the
 * remap path, loopmq_remap.c), and so does a file whose file system has
 * no FIEMAP (its layout is unknown: as dio_default=Y).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitops.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/mman.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "loopmq.h"

#define LOOPMQ_DIO_MAX_BITS	BIT(22)
/* blocks written per window: 1/64 of the map, within these bounds */
#define LOOPMQ_DIO_WINDOW_MIN	256UL
#define LOOPMQ_DIO_WINDOW_MAX	4096UL
#define LOOPMQ_FIEMAP_BUF	PAGE_SIZE
#define LOOPMQ_FIEMAP_NR	(LOOPMQ_FIEMAP_BUF / sizeof(struct fiemap_extent))

const char * const loopmq_dio_names[LOOPMQ_DIO_NR] = {
	LOOPMQ_DIO_SETTINGS(LOOPMQ_NAME)
};

const char * const loopmq_dio_reason_names[LOOPMQ_DIO_WHY_NR] = {
	LOOPMQ_DIO_REASONS(LOOPMQ_NAME)
};

static unsigned long loopmq_dio_range(struct loopmq_dio_map *m,
				      unsigned long first, unsigned long last,
				      bool set);

/* Device bytes [@a, @b) of kind @kind: mark every block they touch. */
static void loopmq_dio_mark(struct loopmq_dio_map *m, u64 a, u64 b, u64 *kind)
{
	if (a >= b)
		return;
	*kind += b - a;
	loopmq_dio_range(m, a >> m->shift,
			 min_t(u64, ((b - 1) >> m->shift) + 1, m->nbits), true);
}

/* One ->fiemap() call's extents, copied out of @ubuf. */
static int loopmq_dio_fiemap(struct inode *inode, void __user *ubuf,
			     struct fiemap_extent *ext, u64 pos, u64 len)
{
	struct fiemap_extent_info fi = {
		.fi_extents_max		= LOOPMQ_FIEMAP_NR,
		.fi_extents_start	= ubuf,
	};
	int err;

	err = inode->i_op->fiemap(inode, &fi, pos, len);
	if (err)
		return err;
	if (copy_from_user(ext, ubuf, fi.fi_extents_mapped * sizeof(*ext)))
		return -EFAULT;
	return fi.fi_extents_mapped;
}

/* Walk the extents of file bytes [@start, @start + @len) into @m. */
static int loopmq_dio_walk(struct inode *inode, struct loopmq_dio_map *m,
			   u64 start, u64 len)
{
	u64 end = start + len, pos = start, covered = start;
	struct fiemap_extent *ext;
	unsigned long uaddr;
	int n, i, err = 0;

	ext = kmalloc(LOOPMQ_FIEMAP_BUF, GFP_KERNEL);
	if (!ext)
		return -ENOMEM;
	uaddr = vm_mmap(NULL, 0, LOOPMQ_FIEMAP_BUF, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, 0);
	if (IS_ERR_VALUE(uaddr)) {
		kfree(ext);
		return (int)uaddr;
	}
	while (pos < end) {
		bool last = false;

		n = loopmq_dio_fiemap(inode, (void __user *)uaddr, ext, pos,
				      end - pos);
		if (n <= 0) {
			err = n;
			break;
		}
		for (i = 0; i < n; i++) {
			struct fiemap_extent *e = &ext[i];
			u64 a = max(e->fe_logical, start);
			u64 b = min(e->fe_logical + e->fe_length, end);

			/* a gap before it is a hole */
			if (e->fe_logical > covered)
				loopmq_dio_mark(m, covered - start,
						min(e->fe_logical, end) - start,
						&m->holes);
			if (b > a && (e->fe_flags & FIEMAP_EXTENT_UNWRITTEN))
				loopmq_dio_mark(m, a - start, b - start,
						&m->unwritten);
			else if (b > a && (e->fe_flags & FIEMAP_EXTENT_SHARED))
				loopmq_dio_mark(m, a - start, b - start,
						&m->shared);
			covered = max(covered, b);
			last = e->fe_flags & FIEMAP_EXTENT_LAST;
		}
		if (last || ext[n - 1].fe_logical + ext[n - 1].fe_length <= pos)
			break;
		pos = ext[n - 1].fe_logical + ext[n - 1].fe_length;
		if (fatal_signal_pending(current)) {
			err = -EINTR;
			break;
		}
		cond_resched();
	}
	/* after the last extent: a hole to the end */
	if (!err && covered < end)
		loopmq_dio_mark(m, covered - start, end - start, &m->holes);
	vm_munmap(uaddr, LOOPMQ_FIEMAP_BUF);
	kfree(ext);
	return err;
}

/*
 * The layout of file bytes [@start, @start + @len), in the caller's
 * context, with none of our locks held.  Returns a map, or NULL with the
 * reason in *@why where no map decides (a block device, no block device
 * under the file system, no FIEMAP), or an ERR_PTR.
 */
struct loopmq_dio_map *loopmq_dio_layout(struct file *file, loff_t start,
					 loff_t len, int *why)
{
	struct inode *inode = file->f_mapping->host;
	struct loopmq_dio_map *m;
	unsigned int shift = 12;
	int err;

	if (S_ISBLK(inode->i_mode)) {
		*why = LOOPMQ_DIO_WHY_BLOCKDEV;
		return NULL;
	}
	/* tmpfs, overlayfs, NFS... (btrfs has a device, but no s_bdev) */
	if (!(inode->i_sb->s_type->fs_flags & FS_REQUIRES_DEV)) {
		*why = LOOPMQ_DIO_WHY_NOBDEV;
		return NULL;
	}
	/* ->fiemap() answers in user memory: a task's own mm, not a kthread's */
	if (!S_ISREG(inode->i_mode) || !inode->i_op->fiemap || !current->mm ||
	    (current->flags & PF_KTHREAD) || len <= 0) {
		*why = LOOPMQ_DIO_WHY_UNKNOWN;
		return NULL;
	}
	while (((len - 1) >> shift) >= LOOPMQ_DIO_MAX_BITS)
		shift++;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->shift = shift;
	m->nbits = ((len - 1) >> shift) + 1;
	m->bytes = len;
	m->window = clamp(m->nbits / 64, LOOPMQ_DIO_WINDOW_MIN,
			  LOOPMQ_DIO_WINDOW_MAX);
	m->write_permille = -1;
	m->map = kvcalloc(BITS_TO_LONGS(m->nbits), sizeof(long), GFP_KERNEL);
	if (!m->map) {
		kfree(m);
		return ERR_PTR(-ENOMEM);
	}
	err = loopmq_dio_walk(inode, m, start, len);
	if (err) {
		loopmq_dio_free(m);
		/* A file system that cannot map this file: as without FIEMAP. */
		if (err == -EOPNOTSUPP || err == -EBADR) {
			*why = LOOPMQ_DIO_WHY_UNKNOWN;
			return NULL;
		}
		return ERR_PTR(err);
	}
	return m;
}

void loopmq_dio_free(struct loopmq_dio_map *m)
{
	if (!m)
		return;
	kvfree(m->map);
	kfree(m);
}

/*
 * The range's share alone: direct I/O at 1/32 costly blocks or less; @dio
 * is the current choice, and from direct I/O buffered again only above
 * 1/8.
 */
static bool loopmq_dio_range_wants(struct loopmq_dio_map *m, bool dio)
{
	/* a set and a clear of one bit may count in either order */
	unsigned long costly = max(atomic_long_read(&m->costly), 0L);

	return dio ? costly * 8 <= m->nbits : costly * 32 <= m->nbits;
}

/*
 * What a map says: direct I/O or not.  Where the range's share says
 * buffered, the costly share of the last window of writes, when there
 * was one, with the same thresholds.
 */
bool loopmq_dio_map_wants(struct loopmq_dio_map *m, bool dio)
{
	int w = READ_ONCE(m->write_permille);

	if (loopmq_dio_range_wants(m, dio))
		return true;
	return w >= 0 && w * (dio ? 8 : 32) <= 1000;
}

/* Why a map chose what it chose. */
int loopmq_dio_map_reason(struct loopmq_dio_map *m, bool dio)
{
	if (dio && !loopmq_dio_range_wants(m, false) &&
	    READ_ONCE(m->write_permille) >= 0)
		return LOOPMQ_DIO_WHY_REWRITES;
	if (dio)
		return LOOPMQ_DIO_WHY_WRITTEN;
	return m->shared > m->holes + m->unwritten ? LOOPMQ_DIO_WHY_SHARED :
						       LOOPMQ_DIO_WHY_SPARSE;
}

/*
 * Set (@set) or clear bits [@first, @last) of the map, and count what
 * changed: whole words at once (a discard of a whole device is one
 * request), the bits of partial words one by one.  Returns the bits it
 * changed.
 */
static unsigned long loopmq_dio_range(struct loopmq_dio_map *m,
				      unsigned long first, unsigned long last,
				      bool set)
{
	unsigned long i = first, old, n = 0;

	while (i < last) {
		if (!(i % BITS_PER_LONG) && i + BITS_PER_LONG <= last) {
			unsigned long *w = &m->map[i / BITS_PER_LONG];

			if (READ_ONCE(*w) != (set ? ~0UL : 0UL)) {
				old = xchg(w, set ? ~0UL : 0UL);
				old = set ? BITS_PER_LONG - hweight_long(old) :
					    hweight_long(old);
				atomic_long_add(set ? (long)old : -(long)old,
						&m->costly);
				n += old;
			}
			i += BITS_PER_LONG;
			continue;
		}
		if (set ? !test_bit(i, m->map) && !test_and_set_bit(i, m->map) :
			  test_bit(i, m->map) && test_and_clear_bit(i, m->map)) {
			atomic_long_add(set ? 1 : -1, &m->costly);
			n++;
		}
		i++;
	}
	return n;
}

/*
 * A write touched @n blocks, @hit of them costly: count them into the
 * window, and the request that fills it sets the window's share.  A
 * heuristic: a request racing with the end of a window may count in
 * either window or in none.
 */
static void loopmq_dio_window(struct loopmq_dio_map *m, unsigned long n,
			      unsigned long hit)
{
	long total, costly;

	if (hit)
		atomic_long_add(hit, &m->win_costly);
	total = atomic_long_add_return(n, &m->win_blocks);
	if (total < (long)m->window || total - (long)n >= (long)m->window)
		return;
	costly = atomic_long_read(&m->win_costly);
	atomic_long_set(&m->win_costly, 0);
	atomic_long_set(&m->win_blocks, 0);
	WRITE_ONCE(m->write_permille, (int)min(costly * 1000 / total, 1000L));
}

/*
 * From queue_rq: what @rq does to the map, and a switch when the share of
 * costly blocks crossed its threshold.  The map is set and freed with the
 * queue frozen.
 */
void loopmq_dio_note(struct loopmq_device *lo, struct loopmq_dio_map *m,
		     struct request *rq)
{
	u64 pos = blk_rq_pos(rq) << SECTOR_SHIFT;
	u64 end = pos + blk_rq_bytes(rq);
	unsigned long first, last, whole, wend, hit;
	bool want = READ_ONCE(lo->want_dio);

	if (end <= pos)
		return;
	first = min_t(u64, pos >> m->shift, m->nbits);
	last = min_t(u64, ((end - 1) >> m->shift) + 1, m->nbits);
	switch (req_op(rq)) {
	case REQ_OP_WRITE:
		/* the blocks the write covers whole; the last, partial block
		 * of the range whole too when the write reaches its end
		 */
		if (end >= m->bytes)
			end = (u64)m->nbits << m->shift;
		whole = min_t(u64, DIV_ROUND_UP_ULL(pos, 1ULL << m->shift),
			      m->nbits);
		wend = min_t(u64, end >> m->shift, m->nbits);
		/* costly: the whole blocks it cleared, the partial ones set */
		hit = loopmq_dio_range(m, whole, wend, false);
		/*
		 * The windows count only where the range's share alone does
		 * not decide (no shared counter on a written image's every
		 * write): it only falls as writes come, and a discard, which
		 * raises it, forgets the windows.
		 */
		if (first >= last || loopmq_dio_range_wants(m, want))
			break;
		if ((first < whole || first >= wend) && test_bit(first, m->map))
			hit++;
		if (last - 1 > first && (last - 1 < whole || last - 1 >= wend) &&
		    test_bit(last - 1, m->map))
			hit++;
		loopmq_dio_window(m, last - first, hit);
		break;
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
		/* every block it touches; the writes before it no longer
		 * say what writes will meet
		 */
		loopmq_dio_range(m, first, last, true);
		WRITE_ONCE(m->write_permille, -1);
		atomic_long_set(&m->win_costly, 0);
		atomic_long_set(&m->win_blocks, 0);
		break;
	default:
		return;
	}
	if (loopmq_dio_map_wants(m, want) != want &&
	    !test_and_set_bit(0, &lo->dio_pending))
		queue_work(system_long_wq, &lo->dio_work);
}

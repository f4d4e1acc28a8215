// SPDX-License-Identifier: GPL-2.0
/*
 * loopmq's pinned image files: a regular file whose block map is held
 * still while it is attached, so that the remap path may send its I/O to
 * the file system's block device.
 */

/**
 * DOC: pin
 *
 * A file's blocks may move at any time: holes fill, unwritten extents are
 * converted, reflinked extents are copied on write, defragmenters and
 * extent swaps exchange them.  A block map read once is therefore only
 * valid while every such path is shut for the file.  The kernel has one
 * such state, the one swap files live in: with ``S_SWAPFILE`` set on the
 * inode, write(2), shrinking truncate, fallocate, reflink, dedupe,
 * copy_file_range into the file, shared writable mappings, ext4's
 * EXT4_IOC_MOVE_EXT and EXT4_IOC_SWAP_BOOT, xfs's extent swaps, unlink and
 * rename all refuse (docs/REMAP.md lists each check, with its place in
 * both kernels' sources).
 *
 * Pinning (LOOPMQ_SET_REMAP with LOOPMQ_REMAP_PINNED, ``loopmqctl
 * --remap=pinned``) is asked for per device; ``auto`` never pins.  It is
 * offered for regular files on ext4 and xfs, the file systems whose
 * block-moving paths were reviewed, and refused (EOPNOTSUPP) for
 * encrypted and DAX files and files that cannot do direct I/O (ext4
 * data=journal, inline data, verity), whose bytes on the device are not
 * the file's bytes or whose home blocks the journal still overwrites.
 * Under the inode lock, as swapon does: a file already pinned or used for
 * swap is refused (EBUSY); S_SWAPFILE is set and writes in flight are
 * drained.  Then the file is synced, so that no allocation is still
 * uncommitted, and every block inside i_size is mapped with bmap(), which
 * answers 0 for holes and for unwritten extents (only mapped extents have
 * an address) and, on xfs, for every block of a file that has reflinked
 * extents or lives on the realtime device.  Any 0 refuses the pin
 * (EINVAL, naming the offset in the kernel log; loopmqctl names the
 * extent from FIEMAP).  Runs of consecutive blocks are merged into the
 * map.  Last, the file's page cache is dropped, and with it every shared
 * mapping's pages (a later write to one faults and gets SIGBUS); a page
 * that cannot be dropped fails the pin (EBUSY).  From then on no cached
 * page of the file is newer than the disk, so reads are remapped whether
 * or not a reader of the file cached their range, and a remapped write
 * drops the pages of its range that such a reader cached (DOC: remap),
 * so that the reader sees it.  Only the
 * device's range of the file, [offset, offset + size), is mapped; the
 * pin protects the whole file.
 *
 * While pinned, every read, write and flush of the device is remapped
 * (DOC: remap), whatever the ``remap`` parameter says: loopmq's own
 * writes through the file would meet ETXTBSY too.  A FLUSH becomes an
 * empty REQ_PREFLUSH bio to the file system's device; overwriting
 * written blocks inside i_size changes no metadata, so nothing of the
 * file needs an fsync (swap relies on the same).  Discard and
 * write-zeroes are not offered: both would have to go through
 * fallocate, which would move blocks under the map.  One that passed
 * the block layer's check before the pin and waited for its queue freeze
 * ends with EOPNOTSUPP: a pinned device sends no request through the
 * file (loopmq_pinned_refuse()).  Remapped writes hold the file system's freeze protection
 * (sb_start_write) from submission until the request ends, so that
 * fsfreeze waits for them and none reaches the device while it is frozen:
 * queue_rq only tries, and the kthread waits.  While pinned, the device
 * keeps its offset and size (LOOP_SET_STATUS refuses to change them:
 * EBUSY, and LOOP_SET_CAPACITY does not grow it past the map), as the
 * map is of that range.
 *
 * Unpinning (LOOPMQ_REMAP_FILE, or detach) happens with the queue frozen,
 * after the last remapped bio ended, and clears S_SWAPFILE before the
 * queue runs again: a write through the file never meets the pin.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "loopmq.h"

/* The file systems whose block-moving paths docs/REMAP.md reviewed. */
static bool loopmq_pin_fs_ok(struct super_block *sb)
{
	return sb->s_bdev && (!strcmp(sb->s_type->name, "ext4") ||
			      !strcmp(sb->s_type->name, "xfs"));
}

static void loopmq_pin_clear(struct inode *inode)
{
	inode_lock(inode);
	inode->i_flags &= ~S_SWAPFILE;
	inode_unlock(inode);
}

void loopmq_pin_free(struct loopmq_pin *pin)
{
	if (!pin)
		return;
	loopmq_pin_clear(pin->inode);
	kvfree(pin->ext);
	kfree(pin);
}

/* Append @len bytes at @pos, device block @blk (in sectors), to @pin. */
static int loopmq_pin_add(struct loopmq_pin *pin, unsigned int *room,
			  loff_t pos, sector_t sector, loff_t len)
{
	struct loopmq_pin_ext *e = pin->nr ? &pin->ext[pin->nr - 1] : NULL;

	if (e && e->pos + e->len == pos &&
	    e->sector + (e->len >> SECTOR_SHIFT) == sector) {
		e->len += len;
		return 0;
	}
	if (pin->nr == *room) {
		unsigned int n = *room ? *room * 2 : 64;
		struct loopmq_pin_ext *ext;

		ext = kvmalloc_array(n, sizeof(*ext), GFP_KERNEL);
		if (!ext)
			return -ENOMEM;
		if (pin->nr)
			memcpy(ext, pin->ext, pin->nr * sizeof(*ext));
		kvfree(pin->ext);
		pin->ext = ext;
		*room = n;
	}
	pin->ext[pin->nr++] = (struct loopmq_pin_ext) {
		.pos = pos, .sector = sector, .len = len,
	};
	return 0;
}

/* Map every block of [pin->start, pin->end) with bmap(); any 0 refuses. */
static int loopmq_pin_map(struct file *file, struct loopmq_pin *pin)
{
	struct inode *inode = file_inode(file);
	unsigned int bits = inode->i_blkbits, room = 0;
	sector_t i = pin->start >> bits;
	sector_t nr = DIV_ROUND_UP(pin->end, 1ULL << bits);
	int err;

	for (; i < nr; i++) {
		sector_t blk = i;

		err = bmap(inode, &blk);
		if (err)
			return err == -EINVAL ? -EOPNOTSUPP : err;
		if (!blk) {
			pr_info("cannot pin %pD: no block at offset %llu (a hole, an unwritten or a shared extent)\n",
				file, (unsigned long long)i << bits);
			return -EINVAL;
		}
		err = loopmq_pin_add(pin, &room, (loff_t)i << bits,
				     blk << (bits - SECTOR_SHIFT), 1LL << bits);
		if (err)
			return err;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

/**
 * loopmq_pin_file - pin @file's block map
 * @file: the backing file
 * @lbs: the device's logical block size
 * @offset: the device's offset into the file
 * @len: the device's size in bytes
 * @out: the map of [@offset, @offset + @len), on success
 *
 * See DOC: pin.  With the queue frozen: no write through the file may be
 * on its way once the file refuses writes.
 *
 * Return: 0, or EINVAL (a block that cannot be mapped, a range past the
 * end of the file, or @lbs and @offset not aligned to the file system's
 * device), EOPNOTSUPP (not a file loopmq can pin), EBUSY (pinned
 * already, a swap file, or a page of it that cannot be dropped), ENOMEM,
 * EINTR, or the error of the sync.
 */
int loopmq_pin_file(struct file *file, unsigned int lbs, loff_t offset,
		    loff_t len, struct loopmq_pin **out)
{
	struct inode *inode = file_inode(file);
	struct super_block *sb = inode->i_sb;
	struct loopmq_pin *pin;
	unsigned int dev_lbs;
	int err;

	if (!S_ISREG(inode->i_mode))
		return -EINVAL;
	if (!loopmq_pin_fs_ok(sb) || IS_ENCRYPTED(inode) || IS_DAX(inode) ||
	    !loopmq_dio_align(file) || inode->i_blkbits < SECTOR_SHIFT)
		return -EOPNOTSUPP;
	dev_lbs = bdev_logical_block_size(sb->s_bdev);
	if (lbs < dev_lbs || (offset & (dev_lbs - 1)) || len <= 0)
		return -EINVAL;
	pin = kzalloc(sizeof(*pin), GFP_KERNEL);
	if (!pin)
		return -ENOMEM;
	pin->inode = inode;
	pin->bdev = sb->s_bdev;
	pin->start = offset;
	pin->end = offset + len;

	inode_lock(inode);
	if (IS_SWAPFILE(inode)) {
		inode_unlock(inode);
		kfree(pin);
		return -EBUSY;
	}
	inode->i_flags |= S_SWAPFILE;
	/* Writers that passed their check before the flag was set. */
	inode_dio_wait(inode);
	/* Past the end there are no blocks, and it cannot grow into it. */
	err = pin->end > i_size_read(inode) ? -EINVAL : 0;
	inode_unlock(inode);

	/* No allocation of the file may be uncommitted when it is mapped. */
	if (!err)
		err = vfs_fsync(file, 0);
	if (!err)
		err = loopmq_pin_map(file, pin);
	if (err) {
		loopmq_pin_free(pin);
		return err;
	}
	/*
	 * Drop the page cache, and with it every mapping of it: a write to a
	 * shared mapping made before the pin faults from now on, and the
	 * fault answers SIGBUS.  A page dirtied through such a mapping
	 * meanwhile cannot be dropped: write it back (in place, the blocks
	 * are mapped) and try again.  Afterwards no page can be newer than
	 * the disk, which is what lets reads be remapped whatever is cached.
	 */
	err = invalidate_inode_pages2(file->f_mapping);
	if (err) {
		filemap_write_and_wait(file->f_mapping);
		err = invalidate_inode_pages2(file->f_mapping);
	}
	if (err) {
		loopmq_pin_free(pin);
		return err;
	}
	*out = pin;
	return 0;
}

/* The extent of @pin holding byte @pos, inside [pin->start, pin->end). */
static const struct loopmq_pin_ext *loopmq_pin_find(const struct loopmq_pin *pin,
						    loff_t pos)
{
	unsigned int lo = 0, hi = pin->nr;

	while (hi - lo > 1) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (pin->ext[mid].pos <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return &pin->ext[lo];
}

/**
 * loopmq_pin_lookup - where byte @pos of the file is on the device
 * @pin: the map
 * @pos: a byte in [pin->start, pin->end)
 * @room: set to how many bytes from @pos on are consecutive there
 *
 * Return: the device sector of @pos.
 */
sector_t loopmq_pin_lookup(const struct loopmq_pin *pin, loff_t pos,
			   loff_t *room)
{
	const struct loopmq_pin_ext *e = loopmq_pin_find(pin, pos);

	*room = e->pos + e->len - pos;
	return e->sector + ((pos - e->pos) >> SECTOR_SHIFT);
}

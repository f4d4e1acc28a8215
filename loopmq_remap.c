// SPDX-License-Identifier: GPL-2.0
/*
 * loopmq's remap path: a request on a block-device backing goes to that
 * device as clones of its own bios, without the file layer.
 */

/**
 * DOC: remap
 *
 * On a block-device backing with direct I/O, the file path turns each
 * request into a kiocb, and the block device's file operations turn the
 * kiocb back into bios.  The remap path skips the round trip: every bio of
 * the request is cloned (the first into the request's PDU, the others from
 * the device's bio_set), shifted by the offset and submitted to the
 * backing device.  The clones share the request's pages; the request ends
 * when its last clone does, in the backing's completion context, without
 * a context switch (path ``remap``).  Except a request of a flush sequence
 * (FLUSH, PREFLUSH, FUA) whose last clone ends asynchronously: the kthread
 * ends it, because the backing may have ended the clone under its own
 * flush lock (loopmq_remap_put()).
 *
 * Where it applies: the backing is a block device, direct I/O is on (so
 * the block size and offset are already aligned to the backing's logical
 * block size), and the parameter ``remap`` is on.  Reads, writes, FLUSH
 * (an empty REQ_PREFLUSH bio) and, where the backing zeroes blocks
 * (write_zeroes_max_bytes), DISCARD and WRITE_ZEROES: the file path makes
 * both a zero-out of the block device (blkdev_fallocate), so both become
 * REQ_OP_WRITE_ZEROES, unmapping unless REQ_NOUNMAP says otherwise.  What
 * the backing cannot split its way around is stacked onto the device
 * when it is attached: the logical block size (direct I/O already
 * requires it), the DMA alignment and the discard granularity.  Its
 * maximum request size and segments are not: the block layer splits a
 * clone that exceeds them, which is cheaper than a second request of
 * ours (loopmq_limits_for_backing()).
 *
 * Which task submits follows the dispatch mode and the inline guards as
 * for the file path: the backing device taking REQ_NOWAIT (bdev_nowait())
 * plays the role of a file offering IOCB_NOWAIT.  From queue_rq a clone
 * carries REQ_NOWAIT; a clone ending BLK_STS_AGAIN (the backing had no
 * free tag) or BLK_STS_NOTSUPP (its queue stopped taking REQ_NOWAIT: a
 * device-mapper table reloaded since the bind) sends the whole request
 * to the kthread, which submits it again, blocking.  Redoing a whole request is safe: it has not
 * completed, so nothing may depend on the order of its writes.  A
 * backing that refuses a zero-out (BLK_STS_NOTSUPP) gets the request
 * again through the file, which may fall back to writing zeroes.
 *
 * The page cache of the backing device.  A direct read through the file
 * first writes back cached pages of its range; a direct write also drops
 * the range's cached pages after the write.  The remap path keeps both
 * rules: a request whose range has a page in the backing's page cache
 * takes the file path, and after a remapped write the kthread drops the
 * pages a buffered user cached meanwhile before the request completes.
 * A FLUSH must make durable what the backing's page cache still holds
 * dirty, as vfs_fsync() on the file does: pages loopmq wrote buffered
 * before a switch to direct I/O (the switch's last write-back runs after
 * the queue is live again), or another writer of the backing left.  While
 * the backing's page cache has pages dirty or under write-back, or a
 * write-back failed that the file has not reported, a FLUSH takes the
 * file path (which reports it), and is an empty REQ_PREFLUSH bio
 * otherwise.
 * Attaching drops the clean cached pages of the backing (left by blkid,
 * for example), so a cache that nobody uses does not keep the file path
 * on.  This is as coherent as the file path and no more: a buffered user
 * racing the write may still see either data, as with any O_DIRECT
 * writer (tests/guest/82-remap.sh checks that a page cached before a
 * write is not stale after it).
 *
 * A pinned image file (DOC: pin in loopmq_pin.c) takes this path too, to
 * its file system's device through the file's block map: a bio that
 * crosses from one extent into the next gets one clone per extent, each
 * trimmed to its piece and pointed at it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/pagemap.h>

#include "loopmq.h"

static struct block_device *loopmq_remap_bdev(struct loopmq_device *lo)
{
	if (lo->b.pin)
		return lo->b.pin->bdev;
	return I_BDEV(lo->b.file->f_mapping->host);
}

/* Byte range of @rq on the backing device. */
static void loopmq_remap_range(struct loopmq_device *lo, struct request *rq,
			       loff_t *start, loff_t *end)
{
	*start = ((loff_t)blk_rq_pos(rq) << SECTOR_SHIFT) + lo->b.offset;
	*end = *start + blk_rq_bytes(rq) - 1;
}

/* Does the backing's page cache hold a page of @rq's range? */
static bool loopmq_remap_cached(struct loopmq_device *lo, struct request *rq)
{
	struct address_space *mapping = lo->b.file->f_mapping;
	loff_t start, end;

	/* Racy, as the file path's look; a write's end looks again. */
	if (!data_race(mapping->nrpages) || !blk_rq_bytes(rq))
		return false;
	loopmq_remap_range(lo, rq, &start, &end);
	return filemap_range_has_page(mapping, start, end);
}

/*
 * Does the backing's page cache hold pages not yet on the device: dirty,
 * or under write-back?  A write-back clears a page's dirty mark only
 * after marking it under write-back, so one of the two is always seen.
 * Or did a write-back fail that our file has not reported yet?
 */
static bool loopmq_remap_dirty(struct loopmq_device *lo)
{
	struct file *file = lo->b.file;
	struct address_space *mapping = file->f_mapping;

	return mapping_tagged(mapping, PAGECACHE_TAG_DIRTY) ||
	       mapping_tagged(mapping, PAGECACHE_TAG_WRITEBACK) ||
	       filemap_check_wb_err(mapping, READ_ONCE(file->f_wb_err));
}

/**
 * loopmq_remap_ok - may @rq take the remap path now?
 * @lo: the device
 * @rq: the request, started
 *
 * Return: true when it may (see DOC: remap); false sends it to the file.
 */
bool loopmq_remap_ok(struct loopmq_device *lo, struct request *rq)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);

	if (!lo->b.remap || cmd->remap_off)
		return false;
	/* A pinned file takes no write through the file (DOC: pin). */
	if (!lo->b.pin && !READ_ONCE(loopmq_remap))
		return false;
	switch (req_op(rq)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		break;
	case REQ_OP_FLUSH:
		return lo->b.pin || !loopmq_remap_dirty(lo);
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
		if (lo->b.pin ||
		    !bdev_write_zeroes_sectors(loopmq_remap_bdev(lo)))
			return false;
		break;
	default:
		return false;
	}
	if (lo->b.pin) {
		loff_t start, end;

		/* The device is no larger than the map: this is a guard. */
		loopmq_remap_range(lo, rq, &start, &end);
		if (start < lo->b.pin->start || end >= lo->b.pin->end)
			return false;
		/* Nothing cached is newer than the disk (DOC: pin). */
		return true;
	}
	/*
	 * What blkdev_write_iter() and blkdev_fallocate() refuse, the file
	 * path refuses too: writes to a device made read-only since the
	 * bind (EPERM) or used for swap (ETXTBSY).  submit_bio_noacct()
	 * would only warn.
	 */
	if (op_is_write(req_op(rq)) &&
	    (bdev_read_only(loopmq_remap_bdev(lo)) ||
	     IS_SWAPFILE(lo->b.file->f_mapping->host)))
		return false;
	/*
	 * Past the end of a backing that shrank, the file path reads zeroes
	 * (a short read) where a bio would fail: keep what the file does.
	 */
	if ((blk_rq_pos(rq) + blk_rq_sectors(rq)) +
	    (lo->b.offset >> SECTOR_SHIFT) >
	    bdev_nr_sectors(loopmq_remap_bdev(lo)))
		return false;
	return !loopmq_remap_cached(lo, rq);
}

/* The request's operation and flags, as its clones carry them. */
static blk_opf_t loopmq_remap_opf(struct request *rq, struct bio *src,
				  bool nowait)
{
	blk_opf_t keep = REQ_SYNC | REQ_META | REQ_PRIO | REQ_IDLE |
			 REQ_RAHEAD | REQ_BACKGROUND;
	blk_opf_t opf;

	switch (req_op(rq)) {
	case REQ_OP_FLUSH:
		opf = REQ_OP_WRITE | REQ_PREFLUSH | REQ_SYNC;
		break;
	case REQ_OP_DISCARD:
		opf = REQ_OP_WRITE_ZEROES;
		break;
	case REQ_OP_WRITE_ZEROES:
		opf = REQ_OP_WRITE_ZEROES | (src->bi_opf & REQ_NOUNMAP);
		break;
	default:
		/*
		 * FUA from the request, not the bio: the flush machinery
		 * clears what the queue does not need on the request alone.
		 */
		opf = req_op(rq) | (src->bi_opf & keep);
		if ((rq->cmd_flags & REQ_FUA) &&
		    likely(!READ_ONCE(loopmq_fault_drop_flush)))
			opf |= REQ_FUA;
		break;
	}
	if (nowait)
		opf |= REQ_NOWAIT;
	return opf;
}

static void loopmq_remap_put(struct loopmq_device *lo, struct request *rq,
			     bool async);

/*
 * A write to a pinned file holds its file system's freeze protection
 * until the request ends (DOC: pin): fsfreeze then waits for it.  Only
 * the kthread waits for a frozen file system; queue_rq tries.  The
 * clones end in another context, so lockdep is told that this task no
 * longer holds it, as for an async kiocb.
 */
static bool loopmq_remap_freeze_get(struct loopmq_device *lo,
				    struct request *rq)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	struct super_block *sb;

	cmd->remap_frozen = false;
	if (!lo->b.pin || req_op(rq) != REQ_OP_WRITE)
		return true;
	sb = lo->b.pin->inode->i_sb;
	if (cmd->from_kthread)
		sb_start_write(sb);
	else if (!sb_start_write_trylock(sb))
		return false;
	__sb_writers_release(sb, SB_FREEZE_WRITE);
	cmd->remap_frozen = true;
	return true;
}

static void loopmq_remap_freeze_put(struct loopmq_device *lo,
				    struct request *rq)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	struct super_block *sb;

	if (!cmd->remap_frozen)
		return;
	cmd->remap_frozen = false;
	sb = lo->b.pin->inode->i_sb;
	__sb_writers_acquired(sb, SB_FREEZE_WRITE);
	sb_end_write(sb);
}

static void loopmq_remap_end_io(struct bio *clone)
{
	struct request *rq = clone->bi_private;
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	blk_status_t st = clone->bi_status;

	/* Any error will do: several clones may fail at once. */
	if (unlikely(st))
		WRITE_ONCE(cmd->remap_status, st);
	if (clone == &cmd->clone)
		bio_uninit(clone);
	else
		bio_put(clone);
	loopmq_remap_put(rq->q->queuedata, rq, true);
}

/*
 * Where a clone goes once it is made.  With REQ_NOWAIT onto @list, sent
 * only when every clone of the request exists: allocations do not wait
 * then, and one that fails undoes them all with nothing sent.  Without,
 * the task may wait for the pool, and submits each clone at once: a bio
 * of lo->bio_set comes back to the pool only when it ends, so a task that
 * waited for the next while holding an unsubmitted one could wait for
 * ever (block/bio.c, bio_alloc_bioset()).  It holds none while it
 * allocates: a piece of a bio is a clone of it trimmed to the piece, not
 * a split of a clone it still holds.
 */
struct loopmq_remap_out {
	struct bio_list	list;	/* NOWAIT: clones not yet sent */
	unsigned int	sent;	/* blocking: clones already sent */
	bool		nowait;
};

static void loopmq_remap_emit(struct request *rq, struct loopmq_remap_out *out,
			      struct bio *clone)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);

	if (out->nowait) {
		bio_list_add(&out->list, clone);
		return;
	}
	atomic_inc(&cmd->ref);
	out->sent++;
	submit_bio_noacct(clone);
}

/* A clone of @src for @rq: the first in the PDU, the others from the pool. */
static struct bio *loopmq_remap_alloc(struct loopmq_device *lo,
				      struct request *rq, struct bio *src,
				      bool first, bool nowait)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	struct block_device *bdev = loopmq_remap_bdev(lo);
	gfp_t gfp = nowait ? GFP_NOWAIT : GFP_NOIO;
	struct bio *clone;

	if (first) {
		clone = &cmd->clone;
		if (bio_init_clone(bdev, clone, src, gfp))
			return NULL;
	} else {
		clone = bio_alloc_clone(bdev, src, gfp, &lo->bio_set);
		if (!clone)
			return NULL;
	}
	clone->bi_opf = loopmq_remap_opf(rq, src, nowait);
	clone->bi_end_io = loopmq_remap_end_io;
	clone->bi_private = rq;
	return clone;
}

static void loopmq_remap_free(struct request *rq, struct bio *clone)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);

	if (clone == &cmd->clone)
		bio_uninit(clone);
	else
		bio_put(clone);
}

/*
 * Clone every bio of @rq for the backing device, one clone per piece
 * that is consecutive there (a pinned file's extent), and hand each to
 * loopmq_remap_emit().  Returns 0, or -ENOMEM with @out->list emptied.
 */
static int loopmq_remap_clone(struct loopmq_device *lo, struct request *rq,
			      struct loopmq_remap_out *out)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	sector_t shift = lo->b.offset >> SECTOR_SHIFT;
	struct bio *src, *clone;
	bool first = true;

	if (req_op(rq) == REQ_OP_FLUSH) {
		/* The flush machinery's request: it has no bio. */
		bio_init(&cmd->clone, loopmq_remap_bdev(lo), NULL, 0,
			 loopmq_remap_opf(rq, NULL, out->nowait));
		cmd->clone.bi_end_io = loopmq_remap_end_io;
		cmd->clone.bi_private = rq;
		loopmq_remap_emit(rq, out, &cmd->clone);
		return 0;
	}
	__rq_for_each_bio(src, rq) {
		loff_t pos = (src->bi_iter.bi_sector << SECTOR_SHIFT) +
			     lo->b.offset;
		loff_t done = 0, left = src->bi_iter.bi_size, room = left;
		sector_t sector;

		while (left) {
			if (lo->b.pin) {
				sector = loopmq_pin_lookup(lo->b.pin,
							   pos + done, &room);
				room = min(room, left);
			} else {
				sector = src->bi_iter.bi_sector + shift;
			}
			clone = loopmq_remap_alloc(lo, rq, src, first,
						   out->nowait);
			if (!clone)
				goto fail;
			first = false;
			if (room != src->bi_iter.bi_size)
				bio_trim(clone, done >> SECTOR_SHIFT,
					 room >> SECTOR_SHIFT);
			clone->bi_iter.bi_sector = sector;
			loopmq_remap_emit(rq, out, clone);
			done += room;
			left -= room;
		}
	}
	return 0;
fail:
	while ((clone = bio_list_pop(&out->list)))
		loopmq_remap_free(rq, clone);
	return -ENOMEM;
}

/**
 * loopmq_remap_submit - send @rq to the backing device as bios
 * @lo: the device
 * @rq: the request, started, for which loopmq_remap_ok() held
 * @nowait: with REQ_NOWAIT (from queue_rq)
 *
 * The submitter holds a reference on the request until every clone is
 * submitted, so the request cannot end, nor its tag be reused, while
 * this function still looks at it; a clone may end inside
 * submit_bio_noacct().  Afterwards the caller must not touch @rq.
 *
 * Return: 0 when submitted, or -ENOMEM or -EAGAIN (a pinned file's file
 * system is frozen) when nothing was: the caller takes the file path or
 * the kthread.
 */
int loopmq_remap_submit(struct loopmq_device *lo, struct request *rq,
			bool nowait)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	struct loopmq_remap_out out = { .nowait = nowait };
	struct bio *clone;
	int err;

	if (req_op(rq) == REQ_OP_FLUSH &&
	    unlikely(READ_ONCE(loopmq_fault_drop_flush))) {
		cmd->status = BLK_STS_OK;
		loopmq_count_path(lo, LOOPMQ_PATH_REMAP);
		loopmq_complete_rq(rq);
		return 0;
	}
	if (!loopmq_remap_freeze_get(lo, rq))
		return -EAGAIN;
	bio_list_init(&out.list);
	cmd->remap_status = BLK_STS_OK;
	cmd->remap_nowait = nowait;
	atomic_set(&cmd->ref, 1);
	err = loopmq_remap_clone(lo, rq, &out);
	if (err && !out.sent) {
		loopmq_remap_freeze_put(lo, rq);
		return err;
	}
	/*
	 * Blocking allocations from the pool do not fail; should one, the
	 * request fails rather than end with a piece never written.
	 */
	if (err)
		WRITE_ONCE(cmd->remap_status, BLK_STS_RESOURCE);
	while ((clone = bio_list_pop(&out.list))) {
		atomic_inc(&cmd->ref);
		submit_bio_noacct(clone);
	}
	loopmq_remap_put(lo, rq, false);
	return 0;
}

/*
 * The last reference on a remapped request: end it, or hand it to the
 * kthread (@async: from a clone's completion, which must wake it).
 */
static void loopmq_remap_put(struct loopmq_device *lo, struct request *rq,
			     bool async)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	blk_status_t st;

	if (!atomic_dec_and_test(&cmd->ref))
		return;
	loopmq_remap_freeze_put(lo, rq);
	st = READ_ONCE(cmd->remap_status);
	if ((st == BLK_STS_AGAIN || st == BLK_STS_NOTSUPP) &&
	    cmd->remap_nowait) {
		/*
		 * The backing had no tag free, or stopped taking REQ_NOWAIT
		 * (a device-mapper table reloaded): the kthread submits
		 * again without it, and waits.
		 */
		loopmq_count_fb(lo, LOOPMQ_FB_EAGAIN);
		loopmq_kthread_queue(lo, cmd, async);
		return;
	}
	if (st == BLK_STS_NOTSUPP && (req_op(rq) == REQ_OP_DISCARD ||
				      req_op(rq) == REQ_OP_WRITE_ZEROES)) {
		/* The backing stopped zeroing: the file may write zeroes. */
		cmd->remap_off = true;
		loopmq_kthread_queue(lo, cmd, async);
		return;
	}
	cmd->status = st;
	if (!st && op_is_write(req_op(rq)) && req_op(rq) != REQ_OP_FLUSH &&
	    loopmq_remap_cached(lo, rq)) {
		/* A buffered user cached pages of the range meanwhile. */
		cmd->remap_finish = LOOPMQ_REMAP_FINISH_INVAL;
		loopmq_kthread_queue(lo, cmd, async);
		return;
	}
	if (async && (rq->rq_flags & RQF_FLUSH_SEQ)) {
		/*
		 * A request of a flush sequence ends through this queue's
		 * flush machinery, under its flush lock.  A clone can end
		 * under the backing's flush lock (the backing, another loopmq
		 * or any blk-mq device with a write cache, ended it in its own
		 * flush sequence): both locks are of one class, and lockdep
		 * reports the nesting as recursion.  The kthread ends it.
		 */
		cmd->remap_finish = LOOPMQ_REMAP_FINISH_END;
		loopmq_kthread_queue(lo, cmd, async);
		return;
	}
	loopmq_count_path(lo, LOOPMQ_PATH_REMAP);
	loopmq_complete_rq(rq);
}

/**
 * loopmq_remap_finish - the kthread's part of a remapped request
 * @lo: the device
 * @rq: a request loopmq_remap_put() queued with cmd->remap_finish set
 *
 * LOOPMQ_REMAP_FINISH_INVAL: drops the backing's cached pages of the
 * written range first, as a direct write through the file does.  Then
 * ends the request with the status loopmq_remap_put() set.
 */
void loopmq_remap_finish(struct loopmq_device *lo, struct request *rq)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	loff_t start, end;

	if (cmd->remap_finish == LOOPMQ_REMAP_FINISH_INVAL) {
		loopmq_remap_range(lo, rq, &start, &end);
		/* Busy pages: the buffered user's race, as for the file. */
		invalidate_inode_pages2_range(lo->b.file->f_mapping,
					      start >> PAGE_SHIFT, end >> PAGE_SHIFT);
	}
	loopmq_count_path(lo, LOOPMQ_PATH_REMAP);
	loopmq_complete_rq(rq);
}

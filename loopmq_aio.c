// SPDX-License-Identifier: GPL-2.0
/*
 * loopmq reads and writes as kiocbs on the backing file: async (with or
 * without IOCB_NOWAIT) and synchronous.
 */
#include <linux/slab.h>
#include <linux/uio.h>

#include "loopmq.h"

/*
 * A request made of one bio uses the bio's own bvec table; several bios
 * need a table of their own (freed when the request completes).
 */
static int loopmq_prep_bvec(struct loopmq_cmd *cmd, struct request *rq,
			    gfp_t gfp)
{
	struct req_iterator it;
	struct bio_vec bv, *p;
	unsigned int nr = 0;

	if (rq->bio == rq->biotail || cmd->bvec)
		return 0;
	rq_for_each_bvec(bv, rq, it)
		nr++;
	p = kmalloc_array(nr, sizeof(*p), gfp);
	if (!p)
		return -ENOMEM;
	cmd->bvec = p;
	cmd->nr_bvec = nr;
	rq_for_each_bvec(bv, rq, it) {
		*p = bv;
		p++;
	}
	return 0;
}

/* An iterator over the part of @rq not yet transferred. */
static void loopmq_iter_init(struct loopmq_cmd *cmd, struct request *rq,
			     struct iov_iter *iter)
{
	unsigned int dir = req_op(rq) == REQ_OP_WRITE ? ITER_SOURCE : ITER_DEST;
	unsigned int len = blk_rq_bytes(rq);

	if (cmd->bvec) {
		iov_iter_bvec(iter, dir, cmd->bvec, cmd->nr_bvec, len);
	} else {
		struct bio *bio = rq->bio;
		struct bvec_iter bi;
		struct bio_vec bv;
		unsigned int nr = 0;

		bio_for_each_bvec(bv, bio, bi)
			nr++;
		iov_iter_bvec(iter, dir,
			      __bvec_iter_bvec(bio->bi_io_vec, bio->bi_iter),
			      nr, len);
		/* The bio may start inside its first bvec. */
		iter->iov_offset = bio->bi_iter.bi_bvec_done;
	}
	if (cmd->done)
		iov_iter_advance(iter, cmd->done);
}

/*
 * A kiocb in flight holds two references on its command: the submitter's,
 * dropped when ->read_iter or ->write_iter has returned -EIOCBQUEUED, and
 * the completion's.  File systems may still touch the kiocb after queueing
 * it (6.1's ext4_dio_read_iter calls file_accessed(iocb->ki_filp) after
 * iomap_dio_rw() returned), so the request must not complete, and its tag
 * and the backing file must not be reused or dropped, before both are
 * gone.  Whoever drops the last one finishes the request.
 */
static void loopmq_aio_complete(struct kiocb *iocb, long ret)
{
	struct loopmq_cmd *cmd = container_of(iocb, struct loopmq_cmd, iocb);
	struct request *rq = blk_mq_rq_from_pdu(cmd);
	struct loopmq_device *lo = rq->q->queuedata;

	if (iocb->ki_flags & IOCB_WRITE && lo->b.is_reg)
		kiocb_end_write(iocb);
	cmd->res = ret;
	if (atomic_dec_and_test(&cmd->ref))
		loopmq_kiocb_done(lo, rq, ret, true);
}

/*
 * Freeze protection for a write through a kiocb.  A NOWAIT write must not
 * wait for a frozen backing file system: "would block", and the kthread
 * waits instead.  Async kiocbs end it in another task, so lockdep is told
 * that this one no longer holds it, as kiocb_start_write() does.
 */
static bool loopmq_kiocb_start_write(struct kiocb *iocb)
{
	struct super_block *sb = file_inode(iocb->ki_filp)->i_sb;

	if (!(iocb->ki_flags & IOCB_NOWAIT)) {
		kiocb_start_write(iocb);
		return true;
	}
	if (!sb_start_write_trylock(sb))
		return false;
	__sb_writers_release(sb, SB_FREEZE_WRITE);
	return true;
}

static void loopmq_kiocb_init(struct loopmq_device *lo, struct loopmq_cmd *cmd,
			      struct request *rq, bool nowait, bool async)
{
	struct kiocb *iocb = &cmd->iocb;

	/*
	 * Built by hand rather than from the file's flags: an O_DIRECT file
	 * must not turn buffered mode into direct I/O behind the user's back.
	 */
	memset(iocb, 0, sizeof(*iocb));
	iocb->ki_filp = lo->b.file;
	iocb->ki_pos = ((loff_t)blk_rq_pos(rq) << SECTOR_SHIFT) +
		       lo->b.offset + cmd->done;
	iocb->ki_ioprio = req_get_ioprio(rq);
	if (lo->b.use_dio)
		iocb->ki_flags |= IOCB_DIRECT;
	if (nowait)
		iocb->ki_flags |= IOCB_NOWAIT;
	/*
	 * Where the request must not block, a buffered read that misses the
	 * page cache starts no readahead either (IOCB_NOIO, as RWF_NOWAIT):
	 * readahead submits to the backing's device and may wait for it.
	 */
	if (nowait && !lo->b.use_dio && req_op(rq) == REQ_OP_READ &&
	    loopmq_sync_guard(rq) >= 0)
		iocb->ki_flags |= IOCB_NOIO;
	if (req_op(rq) == REQ_OP_WRITE) {
		iocb->ki_flags |= IOCB_WRITE;
		/* FUA: the write is durable when it completes. */
		if ((rq->cmd_flags & REQ_FUA) &&
		    likely(!READ_ONCE(loopmq_fault_drop_flush)))
			iocb->ki_flags |= IOCB_DSYNC;
		/* So is every write to a file opened or marked synchronous. */
		if (loopmq_file_dsync(lo->b.file))
			iocb->ki_flags |= IOCB_DSYNC;
		if (lo->b.file->f_flags & __O_SYNC)
			iocb->ki_flags |= IOCB_SYNC;
	}
	if (async)
		iocb->ki_complete = loopmq_aio_complete;
}

static ssize_t loopmq_call(struct loopmq_device *lo, struct kiocb *iocb,
			   struct iov_iter *iter)
{
	struct file *file = lo->b.file;

	if (iocb->ki_flags & IOCB_WRITE)
		return file->f_op->write_iter(iocb, iter);
	return file->f_op->read_iter(iocb, iter);
}

/**
 * loopmq_aio_submit - submit the rest of a read or write as an async kiocb
 * @lo: the device
 * @rq: the request, started
 * @nowait: with IOCB_NOWAIT (from queue_rq)
 *
 * Return: -EIOCBQUEUED when ->ki_complete will finish the request (which
 * may already have happened: the caller must not touch @rq then), or the
 * result of the call, for the caller to pass to loopmq_kiocb_done(): also
 * when the completion ran before the call returned.
 */
int loopmq_aio_submit(struct loopmq_device *lo, struct request *rq,
		      bool nowait)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	struct iov_iter iter;
	ssize_t ret;

	if (loopmq_prep_bvec(cmd, rq, nowait ? GFP_NOWAIT : GFP_NOIO))
		return nowait ? -EAGAIN : -ENOMEM;
	loopmq_iter_init(cmd, rq, &iter);
	loopmq_kiocb_init(lo, cmd, rq, nowait, true);
	if (cmd->iocb.ki_flags & IOCB_WRITE && lo->b.is_reg &&
	    !loopmq_kiocb_start_write(&cmd->iocb))
		return -EAGAIN;
	atomic_set(&cmd->ref, 2);
	ret = loopmq_call(lo, &cmd->iocb, &iter);
	if (ret == -EIOCBQUEUED) {
		if (!atomic_dec_and_test(&cmd->ref))
			return ret;
		/* Completed already; the completion left the end to us. */
		return cmd->res;
	}
	if (cmd->iocb.ki_flags & IOCB_WRITE && lo->b.is_reg)
		kiocb_end_write(&cmd->iocb);
	return ret;
}

/**
 * loopmq_sync_rw - transfer the rest of a read or write, blocking
 * @lo: the device
 * @rq: the request, started
 *
 * Loops over short transfers; a read that reaches the end of the file
 * fills the rest with zeroes.  A write is acknowledged only when all of it
 * was written.
 *
 * Return: 0 or a negative errno.
 */
int loopmq_sync_rw(struct loopmq_device *lo, struct request *rq)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	unsigned int len = blk_rq_bytes(rq);
	bool write = req_op(rq) == REQ_OP_WRITE;
	struct iov_iter iter;
	ssize_t ret;

	ret = loopmq_prep_bvec(cmd, rq, GFP_NOIO);
	if (ret)
		return ret;
	while (cmd->done < len) {
		loopmq_iter_init(cmd, rq, &iter);
		loopmq_kiocb_init(lo, cmd, rq, false, false);
		if (write && lo->b.is_reg)
			file_start_write(lo->b.file);
		ret = loopmq_call(lo, &cmd->iocb, &iter);
		if (write && lo->b.is_reg)
			file_end_write(lo->b.file);
		if (ret < 0)
			return ret;
		if (!ret) {
			if (write)
				return -EIO;
			iov_iter_zero(len - cmd->done, &iter);
			break;
		}
		cmd->done += ret;
	}
	return 0;
}

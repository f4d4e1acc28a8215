// SPDX-License-Identifier: GPL-2.0
/*
 * loopmq I/O path: queue_rq, the per-request choice, the kthread.
 */

/**
 * DOC: dispatch
 *
 * A loop driver turns each block request into a call on the backing file.
 * Where that call runs is the whole cost question: the stock driver always
 * hands the request to a worker, which costs about two context switches per
 * I/O; running it in queue_rq costs none, but runs the backing filesystem's
 * entire call chain on the submitter's stack and inside its context.
 *
 * The modes:
 *
 * - ``direct``: the request is executed synchronously in queue_rq.  The tag
 *   set is BLK_MQ_F_BLOCKING (in every mode), so queue_rq may sleep.
 * - ``kthread``: every request goes to the device's kthread through a
 *   lock-free list; the kthread is woken once per batch (the last request
 *   of a batch, or ->commit_rqs), never under a lock.  With direct I/O the
 *   kthread submits async kiocbs, so it does not serialise the queue.
 * - ``aio``: reads and writes are submitted from queue_rq as async kiocbs
 *   with IOCB_NOWAIT.  "Would block" (-EAGAIN returned, or delivered to
 *   the completion, or a short NOWAIT transfer) hands the request to the
 *   kthread, which finishes it without NOWAIT.
 * - ``auto``: per request.  NOWAIT aio when the backing file honours NOWAIT
 *   for that operation (it does not wait for the backing's I/O to end,
 *   and completes inline when the backing device does; a buffered read
 *   that misses the page cache still starts its readahead, but where the
 *   request must not block: see the guards); a synchronous inline call
 *   when the backing cannot block on I/O (tmpfs) or the recent peak of
 *   requests in flight is one, so blocking costs no parallelism (the
 *   decaying-maximum idea of Rusty Russell's virtio heuristic); the
 *   kthread otherwise.
 *
 * On a block-device backing with direct I/O a request is not a call on
 * the file but clones of its bios sent to the backing device (path
 * ``remap``, DOC: remap in loopmq_remap.c).  The mode and the guards
 * below choose the task that submits them as they do for the file, with
 * the backing's REQ_NOWAIT in the role of IOCB_NOWAIT; flush, discard
 * and write-zeroes are bios too, and so are not sent to the kthread.
 * So are the requests of a pinned image file, to its file system's disk
 * (DOC: pin in loopmq_pin.c).
 *
 * Guards, in every mode that would run a request inline:
 *
 * - nested: the submitter is in a NOIO scope.  loopmq's own inline calls
 *   run under memalloc_noio_save(), and so does its kthread, so a loopmq
 *   device on a file on another loopmq device sees it: the lower device
 *   then uses its kthread and the stack stops growing.
 * - journal: current->journal_info is set, or the task is in a NOFS scope:
 *   the submitter is inside a filesystem transaction, which must not leak
 *   into the backing filesystem (the 2025 jbd2 BUG).
 * - reclaim: PF_MEMALLOC or kswapd.
 * - lockdep: on lockdep kernels only, the submitter holds a mutex or rwsem
 *   (see loopmq_holds_sleeping_lock()).
 * - signal: the submitter has a signal pending.  Buffered reads and writes
 *   stop early for a fatal signal, NFS and FUSE waits for any: a request
 *   must never fail or end short because of whichever task submitted it.
 *   A signal that arrives during an inline call (-EINTR, -ERESTART*)
 *   hands the rest of the request to the kthread, which takes none
 *   (tests/guest/70-signal-storm.sh).
 * - stack: less than stack_reserve bytes of stack left.
 * - op: FLUSH, DISCARD and WRITE_ZEROES go to the kthread except in direct
 *   mode: fsync and fallocate block for long and have no NOWAIT form.
 * - adaptive: writes whose recent NOWAIT attempts mostly answered "would
 *   block" skip the attempt (a decaying estimate, probed every 16 writes;
 *   parameter nowait_adaptive=0 turns it off).
 * - nonowait: the file cannot do NOWAIT for the operation.
 * - fsize: a write through a regular file by a submitter whose
 *   RLIMIT_FSIZE is finite: the file system would apply that limit.
 *
 * Two more guards apply only to a blocking call (direct mode, auto's
 * synchronous call); NOWAIT aio, which waits for none of the file
 * system's locks (see below for what it may still wait for), is allowed,
 * and direct mode takes it for such a request when the file offers it
 * (on 6.1 every O_DIRECT write from a plugged writer reaches queue_rq
 * from kblockd: a trip through the kthread there costs far more of
 * direct mode's 512-byte write IOPS on the RAM disk than the NOWAIT call
 * does against the blocking call that kblockd used to make):
 *
 * - reqnowait: the request has REQ_NOWAIT.  blk-mq advertises NOWAIT for
 *   every blk-mq queue, and io_uring then submits from its own task
 *   expecting not to block; honoured rather than no longer advertised,
 *   since NOWAIT aio serves such requests inline without a file system
 *   wait (tests/guest/74-frozen-backing.sh).
 * - worker: queue_rq runs in a workqueue worker.  On a BLOCKING tag set
 *   every asynchronous queue run goes through kblockd (a plug flushed
 *   from schedule(), a requeue, blk_mq_run_hw_queues()); kblockd is a
 *   WQ_MEM_RECLAIM workqueue shared by every block device, and one
 *   backing fsync there would stall the rest.
 *
 * Writes on the NOWAIT path take freeze protection with a trylock: a
 * frozen backing file system answers "would block" and the kthread waits
 * for the thaw, never the submitter.  IOCB_NOWAIT alone still lets a
 * buffered read that misses the page cache start readahead, which
 * submits to the backing's device from here and may wait for a tag or
 * the file system's locks: for the two requests that must not block
 * (reqnowait, worker) a buffered NOWAIT read carries IOCB_NOIO too, as
 * RWF_NOWAIT's do, and a miss answers "would block" for the kthread to
 * read.  Any other submitter's miss reads inline: on a fast backing the
 * readahead completes there, and a trip through the kthread for each
 * miss cost 12-38% of cold random reads on a RAM disk (docs/BENCHMARKS.md,
 * "Buffered NOWAIT reads and readahead"; tests/guest/93-nowait-read-noio.sh).
 * What NOWAIT does not cover: the bios of a direct read or write through
 * iomap (xfs, ext4) carry no REQ_NOWAIT on 6.1 (iomap sets only
 * IOMAP_NOWAIT; a block device's own direct path does set it; a 2025
 * patch to propagate it was argued over, and 6.12 was not checked), so
 * submitting them may still wait for a tag, a frozen queue or a throttle
 * of the backing's device, as a stacked driver's bios may.  That wait
 * ends with the backing's own I/O, never with loopmq's queue or a lock
 * held above it.
 *
 * Inline calls save and clear the submitter's plug and bio list.  A
 * queue_rq running from blk_finish_plug() must not add requests to the plug
 * being flushed (the 2025 plug-list corruption), and bios the backing file
 * submits must reach the backing device now, not after queue_rq returns
 * to submit_bio_noacct(): a synchronous call would wait on them forever.
 * Inline calls also run under memalloc_noio_save(): blk-mq holds its SRCU
 * read lock around a blocking queue_rq, and an allocation that entered
 * fs reclaim there could wait for I/O on this very queue.  Our plug is
 * flushed before that scope ends, so lower devices see its requests as
 * nested.  Inline calls and the kthread run with PF_LOCAL_THROTTLE, as
 * the stock driver's worker: the backing file's dirty pages are how the
 * upper file system's get cleaned, so they are throttled only against
 * the backing's own writeback.
 *
 * Lifetime: a request ends only when nothing of loopmq touches it any
 * more.  A submitted kiocb holds two references on its command (see
 * loopmq_aio.c), and every "queue for the kthread, then wake it" is one
 * RCU read-side section that loopmq_thread_stop() waits for.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blk-cgroup.h>
#include <linux/falloc.h>
#include <linux/kthread.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/swap.h>

#include "loopmq.h"
#include "loopmq_compat.h"

enum loopmq_action {
	LOOPMQ_RUN_SYNC,
	LOOPMQ_RUN_AIO,
	LOOPMQ_RUN_KTHREAD,
};

/* Saved submitter state around an inline call. */
struct loopmq_inline {
	struct blk_plug		plug;		/* ours, for the inline call */
	struct blk_plug		*outer_plug;
	struct bio_list		*bio_list;
	unsigned int		noio;
	unsigned int		throttle;	/* the task's PF_LOCAL_THROTTLE */
};

/*
 * A submitter's plug is replaced by our own for the call rather than by
 * none: the scheduler may assume a plug exists while a task has cached a
 * plug timestamp (PF_BLOCK_TS).  Ours is flushed before we return.  With
 * no outer plug there is nothing to protect, and no plug is added.
 */
static void loopmq_inline_enter(struct loopmq_inline *in)
{
	in->outer_plug = current->plug;
	if (in->outer_plug) {
		current->plug = NULL;
		blk_start_plug(&in->plug);
	}
	in->bio_list = current->bio_list;
	current->bio_list = NULL;
	in->noio = memalloc_noio_save();
	/*
	 * Dirty pages of the backing file are how the upper file system's
	 * dirty pages get cleaned: throttle them against the backing's own
	 * writeback only, as the stock driver's worker does.
	 */
	in->throttle = current->flags & PF_LOCAL_THROTTLE;
	current->flags |= PF_LOCAL_THROTTLE;
}

/*
 * Undo loopmq_inline_enter() in reverse order.  Our plug is flushed while
 * the NOIO scope still holds: the requests it dispatches belong to the
 * inline call, and a lower loopmq device must see them as nested.
 */
static void loopmq_inline_exit(struct loopmq_inline *in)
{
	if (in->outer_plug)
		blk_finish_plug(&in->plug);
	current->flags = (current->flags & ~PF_LOCAL_THROTTLE) | in->throttle;
	memalloc_noio_restore(in->noio);
	current->bio_list = in->bio_list;
	if (in->outer_plug) {
		current->plug = in->outer_plug;
		loopmq_plug_forget_time(in->outer_plug);
	}
}

/*
 * The stack probe (parameter stack_probe, off by default): paint the free
 * stack below queue_rq before an inline call and find the deepest word the
 * call overwrote.  This measures what a backing filesystem's call chain
 * needs, to choose stack_reserve.  Not on KASAN kernels, whose stack
 * shadow would flag the painting.
 */
#define LOOPMQ_STACK_PAINT	0x6c6f6f706d717374UL
#define LOOPMQ_STACK_SLACK	512	/* left unpainted at both ends */

static unsigned long *loopmq_stack_paint(void)
{
	unsigned long *base = task_stack_page(current);
	unsigned long *p, *top = (unsigned long *)&base;

	if (IS_ENABLED(CONFIG_KASAN) || !READ_ONCE(loopmq_stack_probe))
		return NULL;
	top -= LOOPMQ_STACK_SLACK / sizeof(*top);
	for (p = base + LOOPMQ_STACK_SLACK / sizeof(*p); p < top; p++)
		WRITE_ONCE(*p, LOOPMQ_STACK_PAINT);
	return top;
}

static void loopmq_stack_measure(struct loopmq_device *lo, unsigned long *top)
{
	unsigned long *base = task_stack_page(current);
	unsigned long *p = base + LOOPMQ_STACK_SLACK / sizeof(*p);
	unsigned int used, entry;

	if (!top)
		return;
	while (p < top && READ_ONCE(*p) == LOOPMQ_STACK_PAINT)
		p++;
	used = (top - p) * sizeof(*p) + LOOPMQ_STACK_SLACK;
	entry = THREAD_SIZE - ((unsigned long)top - (unsigned long)base) -
		LOOPMQ_STACK_SLACK;
	if (used > READ_ONCE(lo->stack_used_max))
		WRITE_ONCE(lo->stack_used_max, used);
	if (entry > READ_ONCE(lo->stack_entry_max))
		WRITE_ONCE(lo->stack_entry_max, entry);
}

static unsigned long loopmq_stack_left(void)
{
	unsigned long base = (unsigned long)task_stack_page(current);
	unsigned long sp = (unsigned long)&base;

	if (sp < base || sp >= base + THREAD_SIZE)
		return 0;	/* not on the task stack: never go inline */
	return sp - base;
}

/*
 * Lockdep kernels only: does the submitter hold a mutex or an rwsem?  File
 * systems hold theirs across the I/O they submit (ext4 reads a block bitmap
 * under i_data_sem), and running the backing file system inline then takes
 * its locks of the same lockdep class: classes are per file system type,
 * not per superblock, so lockdep reports an upper and a lower ext4's
 * i_data_sem as recursive locking.  The order itself is not new (with the
 * kthread the upper lock is held while waiting for the lower file system,
 * where lockdep cannot see it) and cannot invert (the lower file system
 * never waits for the upper one: NOIO scope, no backing cycles).  Sending
 * these requests to the kthread keeps lockdep checking everything else.
 * With lockdep_guard=0 they run inline, for tests whose upper and lower
 * file systems are of different types, so that lockdep checks the inline
 * path that production kernels run (tests/guest/78-lockdep-inline.sh).
 */
#ifdef CONFIG_LOCKDEP
static bool loopmq_holds_sleeping_lock(void)
{
	int i;

	if (!READ_ONCE(loopmq_lockdep_guard))
		return false;
	for (i = 0; i < current->lockdep_depth; i++)
		if (current->held_locks[i].instance->wait_type_inner ==
		    LD_WAIT_SLEEP)
			return true;
	return false;
}
#else
static inline bool loopmq_holds_sleeping_lock(void)
{
	return false;
}
#endif

/* Returns the fallback reason that forbids running inline, or -1. */
static int loopmq_inline_guard(void)
{
	unsigned int flags = current->flags;

	if (flags & PF_MEMALLOC_NOIO)
		return LOOPMQ_FB_NESTED;
	if (current->journal_info || (flags & PF_MEMALLOC_NOFS))
		return LOOPMQ_FB_JOURNAL;
	if (flags & (PF_MEMALLOC | PF_KSWAPD))
		return LOOPMQ_FB_RECLAIM;
	if (loopmq_holds_sleeping_lock())
		return LOOPMQ_FB_LOCKDEP;
	/*
	 * Buffered reads and writes end early, and NFS or FUSE waits fail,
	 * when the caller has a signal pending: that is the submitter's
	 * business, never the request's.
	 */
	if (signal_pending(current))
		return LOOPMQ_FB_SIGNAL;
	if (loopmq_stack_left() < READ_ONCE(loopmq_stack_reserve))
		return LOOPMQ_FB_STACK;
	return -1;
}

/*
 * Does the submitter's RLIMIT_FSIZE apply to a write through the file?
 * A regular file's write_iter checks the calling task's limit
 * (generic_write_check_limits()): in the submitter's task a write past it
 * would end short or fail with EFBIG and send the submitter SIGXFSZ.  The
 * device's writes are no business of that limit; the kthread has none.
 */
static bool loopmq_fsize_limited(struct loopmq_device *lo)
{
	return lo->b.is_reg && rlimit(RLIMIT_FSIZE) != RLIM_INFINITY;
}

/*
 * Did an inline call end early because of the submitter's signals?  Then
 * the kthread, which takes no signals, finishes the rest.
 */
static inline bool loopmq_interrupted(long ret)
{
	if (likely(ret >= 0))
		return false;
	return ret == -EINTR || ret == -ERESTARTSYS ||
	       ret == -ERESTARTNOINTR || ret == -ERESTARTNOHAND ||
	       ret == -ERESTART_RESTARTBLOCK;
}

/*
 * The NOWAIT failure estimate of writes, 0..1024 (100%), decaying by 1/8
 * per sample.  Racy updates only blur it.
 */
#define LOOPMQ_NOWAIT_SCALE	1024

static void loopmq_nowait_sample(struct loopmq_device *lo, bool failed)
{
	unsigned int v = READ_ONCE(lo->nowait_fail);

	v -= v >> 3;
	if (failed)
		v += LOOPMQ_NOWAIT_SCALE >> 3;
	WRITE_ONCE(lo->nowait_fail, v);
}

static bool loopmq_nowait_hopeless(struct loopmq_device *lo)
{
	if (READ_ONCE(lo->nowait_fail) < LOOPMQ_NOWAIT_SCALE / 2)
		return false;
	/* Probe now and then, or the estimate could never recover. */
	return data_race(lo->sample) & 15;
}

static void loopmq_track_inflight(struct loopmq_device *lo)
{
	unsigned int cur = atomic_inc_return(&lo->inflight);

	if (unlikely(cur > READ_ONCE(lo->peak_inflight)))
		WRITE_ONCE(lo->peak_inflight, cur);
	/* A maximum that halves every 256 requests. */
	if (unlikely(!(data_race(lo->sample++) & 255)))
		WRITE_ONCE(lo->recent_peak, READ_ONCE(lo->recent_peak) >> 1);
	if (cur > READ_ONCE(lo->recent_peak))
		WRITE_ONCE(lo->recent_peak, cur);
}

/*
 * How @rq runs in @mode.  @remap: it goes to the backing device as bios
 * (loopmq_remap.c), which any operation may, and which takes REQ_NOWAIT
 * where the backing's queue does.
 */
static enum loopmq_action loopmq_choose(struct loopmq_device *lo,
					struct request *rq, int mode,
					bool remap, int *fb)
{
	enum req_op op = req_op(rq);
	bool nowait, sync_ok = false;
	int sync_fb = -1;

	*fb = -1;
	if (mode == LOOPMQ_MODE_KTHREAD)
		return LOOPMQ_RUN_KTHREAD;
	*fb = loopmq_inline_guard();
	if (*fb >= 0)
		return LOOPMQ_RUN_KTHREAD;
	if (op == REQ_OP_WRITE && !remap && loopmq_fsize_limited(lo)) {
		*fb = LOOPMQ_FB_FSIZE;
		return LOOPMQ_RUN_KTHREAD;
	}
	if (mode == LOOPMQ_MODE_DIRECT) {
		sync_fb = loopmq_sync_guard(rq);
		if (sync_fb < 0)
			return LOOPMQ_RUN_SYNC;
	}
	if (op != REQ_OP_READ && op != REQ_OP_WRITE && !remap) {
		*fb = sync_fb >= 0 ? sync_fb : LOOPMQ_FB_OP;
		return LOOPMQ_RUN_KTHREAD;
	}

	if (remap)
		nowait = lo->b.remap_nowait;
	/* Buffered FUA means an fsync in write_iter: it would block. */
	else if (op == REQ_OP_WRITE)
		nowait = lo->b.nowait_write &&
			 (lo->b.use_dio || !((rq->cmd_flags & REQ_FUA) ||
					     loopmq_file_dsync(lo->b.file)));
	else
		nowait = lo->b.nowait_read;
	/*
	 * Direct mode where it may not block (a worker, REQ_NOWAIT): a NOWAIT
	 * call still runs here without blocking anyone, as in aio mode.
	 */
	if (mode == LOOPMQ_MODE_DIRECT) {
		if (nowait)
			return LOOPMQ_RUN_AIO;
		*fb = sync_fb;
		return LOOPMQ_RUN_KTHREAD;
	}
	if (mode == LOOPMQ_MODE_AUTO &&
	    (lo->b.never_blocks || READ_ONCE(lo->recent_peak) <= 1)) {
		sync_fb = loopmq_sync_guard(rq);
		sync_ok = sync_fb < 0;
	}

	if (!remap && nowait && op == REQ_OP_WRITE &&
	    READ_ONCE(loopmq_nowait_adaptive) &&
	    loopmq_nowait_hopeless(lo)) {
		if (sync_ok)
			return LOOPMQ_RUN_SYNC;
		*fb = LOOPMQ_FB_ADAPTIVE;
		return LOOPMQ_RUN_KTHREAD;
	}
	if (nowait)
		return LOOPMQ_RUN_AIO;
	if (sync_ok)
		return LOOPMQ_RUN_SYNC;
	*fb = sync_fb >= 0 ? sync_fb : LOOPMQ_FB_NONOWAIT;
	return LOOPMQ_RUN_KTHREAD;
}

/*
 * Flush, discard and write-zeroes; blocking.  Through vfs_fsync() and
 * vfs_fallocate(), not the file's methods: those make the checks that
 * every caller of fallocate owes the file (a swap file or a pinned image
 * refuses with ETXTBSY, an append-only or immutable one with EPERM, the
 * security hook, freeze protection), and the method alone makes none of
 * them (docs/INTERFACES.md, "Calls into the backing").
 */
static int loopmq_exec_other(struct loopmq_device *lo, struct request *rq)
{
	struct file *file = lo->b.file;
	loff_t pos = ((loff_t)blk_rq_pos(rq) << SECTOR_SHIFT) + lo->b.offset;
	int mode = FALLOC_FL_KEEP_SIZE;
	bool *off = &lo->discard_off;
	int ret;

	switch (req_op(rq)) {
	case REQ_OP_FLUSH:
		if (unlikely(READ_ONCE(loopmq_fault_drop_flush)))
			return 0;
		return vfs_fsync(file, 0);
	case REQ_OP_WRITE_ZEROES:
		/* Zeroes must read back as zeroes; unmap only if allowed. */
		if (rq->cmd_flags & REQ_NOUNMAP) {
			mode |= FALLOC_FL_ZERO_RANGE;
			off = &lo->zeroes_off;
		} else {
			mode |= FALLOC_FL_PUNCH_HOLE;
		}
		break;
	case REQ_OP_DISCARD:
		mode |= FALLOC_FL_PUNCH_HOLE;
		break;
	default:
		return -EIO;
	}
	if (!file->f_op->fallocate)
		return -EOPNOTSUPP;
	ret = vfs_fallocate(file, mode, pos, blk_rq_bytes(rq));
	if (ret == -EOPNOTSUPP && !READ_ONCE(*off)) {
		/*
		 * Stop advertising what the backing cannot do: without
		 * ZERO_RANGE (tmpfs) only write-zeroes; without PUNCH_HOLE
		 * both, as write-zeroes that may unmap punches too.
		 */
		WRITE_ONCE(*off, true);
		schedule_work(&lo->discard_work);
	}
	return ret;
}

/*
 * Three ways a request ends.  loopmq_end_errno() ends it here and now with
 * the result of a synchronous call (0 or -errno): the status, then
 * loopmq_complete_rq(), blk-mq's ->complete handler, called directly.
 * loopmq_kiocb_done() takes a kiocb's result, which may not end the
 * request at all (would block, short, interrupted: the kthread goes on),
 * and from ->ki_complete completes it through blk_mq_complete_request(),
 * which calls loopmq_complete_rq() where blk-mq chooses.
 */
static void loopmq_end_errno(struct request *rq, int err)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);

	cmd->status = err ? errno_to_blk_status(err) : BLK_STS_OK;
	loopmq_complete_rq(rq);
}

/* Execute @rq synchronously: inline in direct mode, or in the kthread. */
static int loopmq_exec_sync(struct loopmq_device *lo, struct request *rq)
{
	enum req_op op = req_op(rq);

	if (op == REQ_OP_READ || op == REQ_OP_WRITE)
		return loopmq_sync_rw(lo, rq);
	return loopmq_exec_other(lo, rq);
}

/*
 * A pinned device sends no request through the file (DOC: pin): the file
 * refuses writes, and a call that bypassed a check would move blocks the
 * map still points at.  What the remap path does not take ends here:
 * discard and write-zeroes, which would have to go through fallocate,
 * with EOPNOTSUPP, as on a queue that never offered them (one can have
 * passed the block layer's limit check before the pin turned them off,
 * then waited for the pin's queue freeze to end); anything else, which
 * the map cannot hold, with EIO.  Returns true when it ended @rq.
 */
static bool loopmq_pinned_refuse(struct loopmq_device *lo, struct request *rq)
{
	enum req_op op = req_op(rq);

	if (likely(!lo->b.pin))
		return false;
	loopmq_end_errno(rq, op == REQ_OP_DISCARD || op == REQ_OP_WRITE_ZEROES ?
			 -EOPNOTSUPP : -EIO);
	return true;
}

/*
 * Waking the kthread after queueing a command races with its end: the
 * kthread may finish that command, the last one, before the waker reaches
 * wake_up_process(); the unbind freeze then completes and the kthread is
 * stopped.  Every "queue, then wake" is therefore one RCU read-side
 * section, and loopmq_thread_stop() waits for a grace period before it
 * stops the thread.  Called under rcu_read_lock().
 */
static void loopmq_kthread_wake(struct loopmq_device *lo)
{
	struct task_struct *t = READ_ONCE(lo->thread);

	if (t && wake_up_process(t))
		this_cpu_inc(lo->stats->kthread_wakeups);
}

void loopmq_kthread_queue(struct loopmq_device *lo, struct loopmq_cmd *cmd,
			  bool wake)
{
	rcu_read_lock();
	llist_add(&cmd->node, &lo->kq);
	if (wake)
		loopmq_kthread_wake(lo);
	rcu_read_unlock();
}

/*
 * Wake the kthread if anything is queued for it.  The list is part of
 * @lo, so it may be looked at outside the RCU section: only the thread
 * it might wake needs one, and the inline paths then take none.
 */
static void loopmq_kthread_kick(struct loopmq_device *lo)
{
	if (llist_empty(&lo->kq))
		return;
	rcu_read_lock();
	loopmq_kthread_wake(lo);
	rcu_read_unlock();
}

/*
 * A kiocb's result that does not end its request: the submitter's signal
 * interrupted it, a NOWAIT call would have blocked, or it was short.  Hand
 * the rest to the kthread and return true; false if @ret ends @rq.
 */
static bool loopmq_kiocb_requeue(struct loopmq_device *lo, struct request *rq,
				 long ret, bool async)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	unsigned int len = blk_rq_bytes(rq);
	bool short_rw = ret >= 0 && cmd->done + ret < len;

	if (!cmd->from_kthread && loopmq_interrupted(ret)) {
		/* The submitter's signal: the kthread does the rest. */
		cmd->nowait = false;
		loopmq_count_fb(lo, LOOPMQ_FB_INTERRUPTED);
		loopmq_kthread_queue(lo, cmd, async);
		return true;
	}
	if (cmd->nowait) {
		/*
		 * EOPNOTSUPP: the device under the file does not take
		 * REQ_NOWAIT (a device-mapper table reloaded since the
		 * bind, see loopmq_file_nowait()); it would take the I/O
		 * without.
		 */
		bool again = ret == -EAGAIN || ret == -EOPNOTSUPP || short_rw;

		if (req_op(rq) == REQ_OP_WRITE)
			loopmq_nowait_sample(lo, again);
		if (again) {
			/* Finish it where blocking is allowed. */
			if (ret > 0)
				cmd->done += ret;
			cmd->nowait = false;
			loopmq_count_fb(lo, LOOPMQ_FB_EAGAIN);
			loopmq_kthread_queue(lo, cmd, async);
			return true;
		}
	}
	if (short_rw) {
		/*
		 * Short: the kthread's synchronous loop finishes it, and fills
		 * a read that reached the end of the file with zeroes; marked
		 * so even a 0-byte one is not resubmitted as a kiocb forever.
		 * Only the kthread calling us itself may skip the wake-up:
		 * from ->ki_complete of a kiocb it submitted, it may be asleep.
		 */
		cmd->done += ret;
		cmd->finish_sync = true;
		loopmq_kthread_queue(lo, cmd, async || !cmd->from_kthread);
		return true;
	}
	return false;
}

/* Count the path a finished kiocb took and complete its request. */
static void loopmq_kiocb_complete(struct loopmq_device *lo, struct request *rq,
				  long ret, bool async)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);

	if (cmd->from_kthread)
		loopmq_count_path(lo, LOOPMQ_PATH_KTHREAD);
	else if (async)
		loopmq_count_path(lo, LOOPMQ_PATH_AIO_ASYNC);
	else
		loopmq_count_path(lo, LOOPMQ_PATH_AIO_INLINE);
	cmd->status = ret < 0 ? errno_to_blk_status(ret) : BLK_STS_OK;
	if (async)
		blk_mq_complete_request(rq);
	else
		loopmq_complete_rq(rq);
}

/*
 * The end of a read or write submitted as a kiocb: from queue_rq or the
 * kthread when the call returned, or from ->ki_complete (@async).
 */
void loopmq_kiocb_done(struct loopmq_device *lo, struct request *rq, long ret,
		       bool async)
{
	if (!loopmq_kiocb_requeue(lo, rq, ret, async))
		loopmq_kiocb_complete(lo, rq, ret, async);
}

/* The kthread's call on the backing file. */
static void loopmq_kthread_file(struct loopmq_device *lo, struct request *rq)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	enum req_op op = req_op(rq);
	int ret;

	if ((op == REQ_OP_READ || op == REQ_OP_WRITE) && lo->b.use_dio &&
	    !cmd->done && !cmd->finish_sync) {
		/* Async: the kthread must not serialise direct I/O. */
		ret = loopmq_aio_submit(lo, rq, false);
		if (ret != -EIOCBQUEUED)
			loopmq_kiocb_done(lo, rq, ret, false);
	} else {
		ret = loopmq_exec_sync(lo, rq);
		loopmq_count_path(lo, LOOPMQ_PATH_KTHREAD);
		loopmq_end_errno(rq, ret);
	}
}

/*
 * The kthread works for the submitter: its I/O is charged to the
 * submitter's block cgroup, and the page cache it allocates (buffered
 * backing I/O) to the submitter's memory cgroup, as the stock driver's
 * worker does, so that it counts against that cgroup's memory.max.
 * Returns the memory cgroup's css, held, for loopmq_cgroup_exit().
 */
static struct cgroup_subsys_state *
loopmq_cgroup_enter(struct request *rq, struct mem_cgroup **old_memcg)
{
	struct cgroup_subsys_state *blkcg = rq->bio ? bio_blkcg_css(rq->bio) : NULL;
	struct cgroup_subsys_state *memcg = NULL;

	if (!blkcg)
		return NULL;
	kthread_associate_blkcg(blkcg);
#ifdef CONFIG_MEMCG
	memcg = cgroup_get_e_css(blkcg->cgroup, &memory_cgrp_subsys);
	if (memcg)
		*old_memcg = set_active_memcg(mem_cgroup_from_css(memcg));
#endif
	return memcg;
}

static void loopmq_cgroup_exit(struct cgroup_subsys_state *memcg,
			       struct mem_cgroup *old_memcg)
{
	kthread_associate_blkcg(NULL);
#ifdef CONFIG_MEMCG
	if (memcg) {
		set_active_memcg(old_memcg);
		css_put(memcg);
	}
#endif
}

static void loopmq_kthread_run(struct loopmq_device *lo, struct loopmq_cmd *cmd)
{
	struct request *rq = blk_mq_rq_from_pdu(cmd);
	struct cgroup_subsys_state *memcg;
	struct mem_cgroup *old_memcg = NULL;

	cmd->from_kthread = true;
	if (cmd->remap_finish != LOOPMQ_REMAP_FINISH_NONE) {
		loopmq_remap_finish(lo, rq);
		return;
	}
	/* Read before the request may end below. */
	memcg = loopmq_cgroup_enter(rq, &old_memcg);
	/* Clones are submitted blocking here; after that @rq may be gone. */
	if (!cmd->done && !cmd->finish_sync && loopmq_remap_ok(lo, rq) &&
	    !loopmq_remap_submit(lo, rq, false))
		goto out;
	if (!loopmq_pinned_refuse(lo, rq))
		loopmq_kthread_file(lo, rq);
out:
	loopmq_cgroup_exit(memcg, old_memcg);
}

static int loopmq_thread_fn(void *data)
{
	struct loopmq_device *lo = data;
	struct loopmq_cmd *cmd, *next;
	struct llist_node *list;
	unsigned int noio;

	/* Our I/O must never recurse into reclaim that writes to us. */
	noio = memalloc_noio_save();
	/* See loopmq_inline_enter(): throttled only by the backing's bdi. */
	current->flags |= PF_LOCAL_THROTTLE;
	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		list = llist_del_all(&lo->kq);
		if (!list) {
			if (kthread_should_stop()) {
				__set_current_state(TASK_RUNNING);
				break;
			}
			schedule();
			continue;
		}
		__set_current_state(TASK_RUNNING);
		list = llist_reverse_order(list);
		llist_for_each_entry_safe(cmd, next, list, node)
			loopmq_kthread_run(lo, cmd);
		cond_resched();
	}
	memalloc_noio_restore(noio);
	return 0;
}

int loopmq_thread_start(struct loopmq_device *lo)
{
	struct task_struct *t;

	t = kthread_run(loopmq_thread_fn, lo, "%s%d", loopmq_disk_prefix(),
			lo->index);
	if (IS_ERR(t))
		return PTR_ERR(t);
	lo->thread = t;
	return 0;
}

/*
 * The queue is frozen: nothing is on the list or can be added to it.  A
 * waker of the last command may still hold lo->thread: see
 * loopmq_kthread_wake().
 */
void loopmq_thread_stop(struct loopmq_device *lo)
{
	struct task_struct *t = lo->thread;

	WARN_ON_ONCE(!llist_empty(&lo->kq));
	WRITE_ONCE(lo->thread, NULL);
	synchronize_rcu();
	kthread_stop(t);
}

/*
 * Run @rq in the submitter's task, as @action says: a NOWAIT kiocb
 * (LOOPMQ_RUN_AIO) or the blocking call (LOOPMQ_RUN_SYNC), or with
 * @remap its clones, with REQ_NOWAIT or without.  Between
 * loopmq_inline_enter() and loopmq_inline_exit(), with the stack probe
 * around it.  Only the stack is looked at afterwards: once the kiocb or
 * the clones are submitted, @rq may be completed and gone.
 */
static int loopmq_run_inline(struct loopmq_device *lo, struct request *rq,
			     enum loopmq_action action, bool remap)
{
	bool nowait = action == LOOPMQ_RUN_AIO;
	struct loopmq_inline in;
	unsigned long *probe;
	int ret;

	probe = loopmq_stack_paint();
	loopmq_inline_enter(&in);
	if (remap)
		ret = loopmq_remap_submit(lo, rq, nowait);
	else if (nowait)
		ret = loopmq_aio_submit(lo, rq, true);
	else
		ret = loopmq_exec_sync(lo, rq);
	loopmq_inline_exit(&in);
	loopmq_stack_measure(lo, probe);
	return ret;
}

blk_status_t loopmq_queue_rq(struct blk_mq_hw_ctx *hctx,
			     const struct blk_mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	struct loopmq_device *lo = rq->q->queuedata;
	struct loopmq_dio_map *dio_map;
	enum loopmq_action action;
	bool remap;
	int fb, ret;

	blk_mq_start_request(rq);
	cmd->done = 0;
	cmd->nowait = false;
	cmd->from_kthread = false;
	cmd->finish_sync = false;
	cmd->remap_off = false;
	cmd->remap_finish = LOOPMQ_REMAP_FINISH_NONE;
	loopmq_track_inflight(lo);

	/* Unbound (a request racing detach), or a write to a read-only one. */
	if (unlikely(!lo->b.file ||
		     (op_is_write(req_op(rq)) && lo->b.read_only))) {
		loopmq_end_errno(rq, -EIO);
		goto out;
	}

	/* direct I/O "auto": what the request does to the layout map */
	dio_map = lo->dio_map;
	if (dio_map)
		loopmq_dio_note(lo, dio_map, rq);
	remap = loopmq_remap_ok(lo, rq);
	if (!remap && loopmq_pinned_refuse(lo, rq))
		goto out;
	action = loopmq_choose(lo, rq, READ_ONCE(lo->mode), remap, &fb);
	if (remap && action != LOOPMQ_RUN_KTHREAD) {
		/* After success, @rq may be completed and gone. */
		if (loopmq_run_inline(lo, rq, action, true)) {
			/* No clone without waiting: the kthread may wait. */
			loopmq_count_fb(lo, LOOPMQ_FB_EAGAIN);
			loopmq_kthread_queue(lo, cmd, false);
		}
		goto out;
	}
	switch (action) {
	case LOOPMQ_RUN_SYNC:
		ret = loopmq_run_inline(lo, rq, action, false);
		if (loopmq_interrupted(ret)) {
			/* As in loopmq_kiocb_done(); cmd->done kept progress. */
			loopmq_count_fb(lo, LOOPMQ_FB_INTERRUPTED);
			loopmq_kthread_queue(lo, cmd, false);
			break;
		}
		loopmq_count_path(lo, LOOPMQ_PATH_INLINE);
		loopmq_end_errno(rq, ret);
		break;
	case LOOPMQ_RUN_AIO:
		cmd->nowait = true;
		ret = loopmq_run_inline(lo, rq, action, false);
		/* After -EIOCBQUEUED, @rq may be completed and gone. */
		if (ret != -EIOCBQUEUED)
			loopmq_kiocb_done(lo, rq, ret, false);
		break;
	case LOOPMQ_RUN_KTHREAD:
		if (fb >= 0)
			loopmq_count_fb(lo, fb);
		loopmq_kthread_queue(lo, cmd, false);
		break;
	}
out:
	/* One wake-up per batch, for whatever this batch queued. */
	if (bd->last)
		loopmq_kthread_kick(lo);
	return BLK_STS_OK;
}

void loopmq_commit_rqs(struct blk_mq_hw_ctx *hctx)
{
	loopmq_kthread_kick(hctx->queue->queuedata);
}

void loopmq_complete_rq(struct request *rq)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);
	struct loopmq_device *lo = rq->q->queuedata;

	kfree(cmd->bvec);
	cmd->bvec = NULL;
	if (unlikely(cmd->status != BLK_STS_OK))
		this_cpu_inc(lo->stats->errors);
	atomic_dec(&lo->inflight);
	blk_mq_end_request(rq, cmd->status);
}

int loopmq_init_request(struct blk_mq_tag_set *set, struct request *rq,
			unsigned int hctx_idx, unsigned int numa_node)
{
	struct loopmq_cmd *cmd = blk_mq_rq_to_pdu(rq);

	memset(cmd, 0, sizeof(*cmd));
	return 0;
}

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# 93-nowait-read-noio: where a request must not block, a NOWAIT read
# through the backing's page cache that misses it starts no I/O from
# queue_rq.  With IOCB_NOWAIT alone the page cache still starts readahead
# on a miss, which submits bios to the backing's device from the task
# that runs queue_rq and may wait there for a tag or the file system's
# locks.  loopmq runs the NOWAIT attempt inline also for a REQ_NOWAIT
# request (io_uring asked not to be blocked) and in a kblockd worker (DOC
# in loopmq_io.c), so there a buffered read carries IOCB_NOIO too, as
# RWF_NOWAIT's do, and a miss goes to the kthread.  Any other submitter's
# miss starts its readahead inline, which on a fast backing completes
# there (a trip through the kthread for each miss would cost 12-38% of
# cold random reads on a RAM disk: docs/BENCHMARKS.md, "Buffered NOWAIT
# reads and readahead").
#
# A written image on xfs on vda, the file system then read-only (nothing
# but the device's reads reaches vda), attached read-only with direct I/O
# off in mode aio (reads take the NOWAIT attempt inline);
# block:block_bio_queue traces each bio to vda with its task; the page
# cache is dropped before each case; 14 or 16 random 4 KiB O_DIRECT reads
# (each a miss), and 1 MiB in order:
# - dd, no I/O scheduler (queue_rq in dd's task): dd's misses start their
#   readahead (bios from dd);
# - fio with io_uring, no I/O scheduler (REQ_NOWAIT, queue_rq in fio's
#   task): no bio from fio; the NOWAIT attempt ran inline and answered
#   "would block" (fb_eagain, and no fb_lockdep: the lockdep guard is off,
#   io_uring submits holding a lock) and every bio came from the kthread;
# - dd with mq-deadline (on a blocking queue 6.1 runs every dispatch in
#   kblockd): no bio from a kworker, the same as with io_uring (skipped
#   where the kernel dispatches in dd's task, as 6.12 does);
# - dd's reads returned the image's data (short NOWAIT reads resumed by
#   the kthread);
# - no request failed; the device equals its image.
DESCRIPTION="a NOWAIT buffered read that misses the page cache starts no I/O inline"
requires() {
	require_cmd lmq-ioctl
	lmq_is_mq || skip_all "loopmq only (dispatch statistics)"
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

M=/mnt/t93
mkdir -p $M
# lockdep_guard=0: on a lockdep kernel io_uring submits holding its
# uring_lock, and the guard would send every read to the kthread
lp=
modinfo -p loopmq 2>/dev/null | grep -q '^lockdep_guard:' && lp=lockdep_guard=0
lmq_load 1 $lp || { fail "load $LMQ_MOD $lp"; stop_testing; }
D=$(lmq_dev 0)
Q=/sys/block/${D##*/}/queue/scheduler
setup() {
	mkfs.xfs -q -f /dev/vda >/dev/null && mount -o noatime /dev/vda $M &&
		dd if=/dev/urandom of=$M/img bs=1M count=32 conv=fsync status=none &&
		mount -o remount,ro $M &&
		$LOSETUP -r --direct-io=off $D $M/img && lmq_mode 0 aio &&
		{ udevadm settle 2>/dev/null; true; }
}
check_quiet "a written 32 MiB image on xfs, read-only, attached buffered, mode aio" setup ||
	stop_testing
is "$(cat $(lmq_sys 0)/loop/dio)" 0 "direct I/O off"

# traced CASE SCHED CMD...: CMD's reads with the page cache dropped, the
# I/O scheduler SCHED and the statistics reset; the bios to vda by task
# in /tmp/t93.by
traced() {
	local c=$1 sched=$2
	shift 2
	echo "$sched" >$Q 2>/dev/null
	check "$c: I/O scheduler $sched ($(cat $Q))" grep -q "\[$sched\]" $Q
	sync
	echo 3 >/proc/sys/vm/drop_caches
	echo 0 >$(lmq_sys 0)/loopmq/stats
	bio_trace_on vda || fail "$c: block_bio_queue on /dev/vda"
	check_quiet "$c: the reads" "$@"
	bio_trace_off /tmp/t93.by
	diag "$c: bios to /dev/vda by task: $(tr '\n' ';' </tmp/t93.by)"
}
# by ERE: bios to vda from tasks whose whole name matches ERE
by() {
	awk -v p="$1" '{ t = substr($2, 2, length($2) - 2) } t ~ ("^(" p ")$") { n += $1 }
		END { print n + 0 }' /tmp/t93.by
}
# ddreads MIB FILE OUT: 14 random 4 KiB reads of FILE in MiB MIB to MIB+13,
# then 1 MiB in order at MIB+14, appended to OUT (O_DIRECT from the device)
ddreads() {
	local i fl=
	[ "$2" = "$D" ] && fl=iflag=direct
	: >"$3"
	for i in 3 11 7 13 1 5 9 2 12 6 10 4 8 0; do
		dd if="$2" of="$3" bs=4k count=1 skip=$((($1 + i) * 256 + 7)) $fl \
			oflag=append conv=notrunc status=none || return 1
	done
	dd if="$2" of="$3" bs=64k count=16 skip=$((($1 + 14) * 16)) $fl \
		oflag=append conv=notrunc status=none
}
# inline CASE: the NOWAIT attempt ran inline and answered "would block",
# and every bio to vda came from the kthread
inline() {
	local e l n
	e=$(lmq_stat0 0 fb_eagain) l=$(lmq_stat0 0 fb_lockdep)
	check "$1: the NOWAIT attempt ran inline and answered 'would block' (fb_eagain $e, fb_lockdep $l)" \
		[ "$e" -gt 0 ] && [ "$l" = 0 ]
	n=$(by "$kt")
	is "$n/$(by '.*')" "$n/$n" "$1: every bio to /dev/vda came from the kthread ($n)"
	check "$1: the kthread read" [ "$n" -gt 0 ]
}
kt="$LMQ_NAME""0"

traced "plain submitter" none ddreads 0 $D /tmp/t93.got
n=$(by dd)
check "plain submitter: its misses started their readahead inline ($n bios from dd)" [ "$n" -gt 0 ]
ddreads 0 $M/img /tmp/t93.want
check "plain submitter: the reads returned the image's data" cmp /tmp/t93.got /tmp/t93.want

traced "REQ_NOWAIT (io_uring)" none \
	fio --name=u --filename=$D --ioengine=io_uring --direct=1 --rw=randread --bs=4k \
	--iodepth=1 --offset=8M --size=8M --number_ios=16 --randrepeat=1 --output-format=terse
is "$(by fio)" 0 "REQ_NOWAIT (io_uring): no bio to /dev/vda came from fio (a miss started no readahead inline)"
inline "REQ_NOWAIT (io_uring)"

traced "worker (kblockd)" mq-deadline ddreads 16 $D /tmp/t93.got
if [ "$(by dd)" -gt 0 ]; then
	# 6.12 runs a blocking queue's dispatch in the submitter's task
	skip "worker (kblockd)" "this kernel dispatched dd's requests in dd's task, not in kblockd"
else
	is "$(by 'kworker/.*')" 0 "worker (kblockd): no bio to /dev/vda came from a kworker (a miss started no readahead inline)"
	inline "worker (kblockd)"
fi
ddreads 16 $M/img /tmp/t93.want
check "worker (kblockd): the reads returned the image's data" cmp /tmp/t93.got /tmp/t93.want

is "$(lmq_stat 0 errors)" 0 "no request failed"
check "the device equals its image" cmp $D $M/img
$LOSETUP -d $D && lmq_wait_gone "$(lmq_sys 0)/loop/backing_file"
is "$?" 0 "detach"
lmq_unload
umount $M
done_testing

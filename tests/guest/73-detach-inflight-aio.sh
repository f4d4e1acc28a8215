#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# 73-detach-inflight-aio: LOOP_CHANGE_FD and detach while async direct I/O to
# the backing file is in flight.  Backing: image files on ext4 on the
# scratch disk, direct I/O on, dispatch modes aio and auto (the stock
# driver: its own).  Per mode:
#  1. read-only device, fio libaio randread iodepth 32 on it; meanwhile
#     LOOP_CHANGE_FD back and forth between two identical images, each
#     opened just for the call, so that the device holds the only reference
#     to the file it drops, and a checked O_DIRECT read after every change.
#     Then losetup -d while fio still runs: fio holds the device open, so
#     the detach waits for fio's close and fio must see no error at all.
#  2. the aio reader is the device's only opener: LOOP_CONFIGURE, 32 async
#     reads in flight, LOOP_CLR_FD through the same descriptor, reads go on
#     for a while, close; again and again.  Reads may return good data, 0
#     (a device of size 0 after the detach) or EIO (a detached device, or
#     stock loop's refusal while it runs down), never wrong data; after the
#     close the device is unbound within 5 s.
# The lower file system may still touch the kiocb after returning
# -EIOCBQUEUED (6.1's and 6.12's ext4_dio_read_iter calls
# file_accessed(iocb->ki_filp) after iomap_dio_rw returned), while the
# request completes, its tag is reused or the file is dropped by the change
# or the detach.  This test is a stress test of those paths, not a reliable
# detector of that bug: the window is a few instructions after
# iomap_dio_rw(); a reused kiocb is valid memory (nothing to report); on
# 6.1 (the debug kernel) a file is freed only after an RCU grace period,
# which cannot end while the submitter is inside that window without
# preemption; on 6.12 it is freed at once but into a SLAB_TYPESAFE_BY_RCU
# cache, where a stale read goes unnoticed without KASAN.
DESCRIPTION="LOOP_CHANGE_FD and detach with aio requests in flight"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	command -v lmq-openrace >/dev/null || skip_all "lmq-openrace not installed"
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

W=/tmp/t73 M=/mnt/t73
if [ "$LMQ_SLOW" = 1 ]; then	# debug kernel: ~10x slower
	T=${RACE_SECONDS:-4} SZ=32
else
	T=${RACE_SECONDS:-8} SZ=64
fi
mkdir -p $W $M
mkfs.ext4 -q -F /dev/vda >/dev/null && mount /dev/vda $M || { fail "ext4 on /dev/vda"; stop_testing; }
lmq-openrace mkimg $M/a $SZ && cp $M/a $M/b && sync || { fail "images"; stop_testing; }
# lockdep kernels: let the inline (queue_rq) submissions be checked too,
# where the module has the switch (no upper file system here to confuse it)
lp=
lmq_is_mq && modinfo -p loopmq 2>/dev/null | grep -q '^lockdep_guard:' && lp=lockdep_guard=0
lmq_load 1 $lp || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) S=$(lmq_sys 0)
if lmq_is_mq; then MODES=${LMQ73_MODES:-aio auto}; else MODES=stock; fi

for mode in $MODES; do
	# 1. LOOP_CHANGE_FD and a deferred detach under fio
	is "$(lmq-ioctl -r configure $D ro:$M/a 17 0)" OK "$mode: attach read-only, direct I/O"
	lmq_mode 0 $mode || fail "$mode: set mode"
	is "$(cat $S/loop/dio 2>/dev/null)" 1 "$mode: loop/dio"
	fio --name=aio --filename=$D --readonly --rw=randread --bs=4k --ioengine=libaio \
		--iodepth=32 --direct=1 --time_based --runtime=$((T + 3)) \
		--output=$W/fio.out --output-format=terse >$W/fio.err 2>&1 &
	fpid=$!
	sleep 1
	lmq-openrace changefd $D $M/a $M/b $T >$W/cf 2>&1
	rc=$?
	while read -r l; do diag "$l"; done <$W/cf
	n=$(sed -n 's/.* \([0-9]*\) changes.*/\1/p' $W/cf)
	is "$rc" 0 "$mode: LOOP_CHANGE_FD under fio: every change and every checked read OK"
	[ "${n:-0}" -ge 3 ] && pass "$mode: $n changes" || fail "$mode: only '${n:-}' changes"
	lmq_is_mq && diag "$mode: $(awk '$2 > 0 && $1 !~ /^fb_/ { printf "%s=%s ", $1, $2 }' $S/loopmq/stats)"
	check_quiet "$mode: losetup -d while fio runs" $LOSETUP -d $D
	wait $fpid
	rc=$?
	is "$rc" 0 "$mode: fio saw no error (the detach waited for its close)"
	[ $rc = 0 ] || { tail -n 5 $W/fio.err; cut -c1-200 $W/fio.out | tail -n 3; } | sed 's/^/#   /'
	check_quiet "$mode: unbound once fio closed it" lmq_wait_gone $S/loop/backing_file 50

	# 2. detach through the only opener's descriptor with reads in flight
	if lmq_is_mq; then
		# the mode stays across binds; aiodetach binds by itself
		is "$(cat $S/loopmq/mode)" $mode "$mode: mode kept while unbound"
	fi
	lmq-openrace aiodetach $D $M/a $T 32 >$W/ad 2>&1
	rc=$?
	while read -r l; do diag "$l"; done <$W/ad
	n=$(sed -n 's/.*, \([0-9]*\) cycles.*/\1/p' $W/ad)
	is "$rc" 0 "$mode: detach/reattach under aio: only good data, EOF or EIO"
	[ "${n:-0}" -ge 2 ] && pass "$mode: $n detach cycles" || fail "$mode: only '${n:-}' detach cycles"
	check_quiet "$mode: unbound at the end" lmq_wait_gone $S/loop/backing_file 50
done
cmp -s $M/a $M/b && pass "images unchanged" || fail "images differ"
umount $M || fail "umount"
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 150
# 93-nowait-read-noio: a NOWAIT read through the backing's page cache that
# misses it starts no I/O from queue_rq.  With IOCB_NOWAIT alone the page
# cache still starts readahead on a miss (synchronous readahead, and the
# asynchronous one at a readahead mark): that submits bios to the
# backing's device from the submitter's task, which may wait there for a
# tag or for the file system's locks.  The NOWAIT attempt is what loopmq
# runs inline where blocking is not allowed (a REQ_NOWAIT request, a
# kblockd worker; DOC in loopmq_io.c), and RWF_NOWAIT from user space sets
# IOCB_NOIO beside IOCB_NOWAIT for this reason: loopmq's buffered NOWAIT
# reads carry it too, so a miss answers "would block" and the kthread
# reads.
#
# A written image on xfs (noatime: reading writes nothing) on vda, attached
# with direct I/O off in mode aio (reads take the NOWAIT attempt inline),
# no I/O scheduler on the device (dd's requests reach queue_rq in dd's own
# task), the page cache dropped; block:block_bio_queue traces each bio to
# vda with its task.  Random O_DIRECT reads of the device by dd, each a
# miss, then a sequential one (readahead marks):
# - no bio to vda comes from dd, and the kthread's do (the reads were made);
# - the misses went to the kthread as "would block" (fb_eagain) and none
#   failed; the device equals the image.
DESCRIPTION="a NOWAIT buffered read that misses the page cache starts no I/O inline"
requires() {
	require_cmd lmq-ioctl
	lmq_is_mq || skip_all "loopmq only (dispatch statistics)"
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

M=/mnt/t93
mkdir -p $M
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)
setup() {
	mkfs.xfs -q -f /dev/vda >/dev/null && mount -o noatime /dev/vda $M &&
		dd if=/dev/urandom of=$M/img bs=1M count=32 conv=fsync status=none &&
		$LOSETUP --direct-io=off $D $M/img && lmq_mode 0 aio
}
check_quiet "a written 32 MiB image on xfs (noatime), attached buffered, mode aio" setup ||
	stop_testing
is "$(cat $(lmq_sys 0)/loop/dio)" 0 "direct I/O off"
echo none >/sys/block/${D##*/}/queue/scheduler 2>/dev/null
check "no I/O scheduler: queue_rq runs in dd's task ($(cat /sys/block/${D##*/}/queue/scheduler))" \
	grep -q '\[none\]' /sys/block/${D##*/}/queue/scheduler

TR=/sys/kernel/tracing EV=/sys/kernel/tracing/events/block/block_bio_queue
[ -e $TR/trace ] || mount -t tracefs nodev $TR 2>/dev/null
IFS=: read -r vmaj vmin </sys/block/vda/dev
echo "dev == $(((vmaj << 20) | vmin))" >$EV/filter || fail "block_bio_queue filter on /dev/vda"
sync
echo 3 >/proc/sys/vm/drop_caches
echo 0 >$(lmq_sys 0)/loopmq/stats
echo >$TR/trace
echo 1 >$EV/enable
# 16 random 4 KiB reads, 1 MiB apart (each a miss), then 2 MiB in order
for i in 3 17 9 25 1 30 12 21 6 28 14 19 4 23 10 27; do
	dd if=$D of=/dev/null bs=4k count=1 skip=$((i * 256 + 7)) iflag=direct status=none ||
		fail "O_DIRECT read of 4 KiB at $i MiB"
done
check "2 MiB read in order (O_DIRECT, 64 KiB at a time)" \
	dd if=$D of=/dev/null bs=64k count=32 skip=$((5 * 16)) iflag=direct status=none
echo 0 >$EV/enable
echo 0 >$EV/filter
grep -o '\[[^]]*\]$' $TR/trace | sort | uniq -c | tr -s ' ' >/tmp/t93.by
diag "bios to /dev/vda by task: $(tr '\n' ';' </tmp/t93.by)"
is "$(awk '$2 == "[dd]" { n += $1 } END { print n + 0 }' /tmp/t93.by)" 0 \
	"no bio to /dev/vda came from dd (a miss started no readahead inline)"
k=$(awk -v t="[$LMQ_NAME""0]" '$2 == t { n += $1 } END { print n + 0 }' /tmp/t93.by)
check "the kthread read from /dev/vda ($k bios)" [ "$k" -gt 0 ]
e=$(lmq_stat 0 fb_eagain)
check "the misses went to the kthread as 'would block' (fb_eagain $e, at least 16)" [ "${e:-0}" -ge 16 ]
is "$(lmq_stat 0 errors)" 0 "no request failed"
check "the device equals its image" cmp $D $M/img
$LOSETUP -d $D && lmq_wait_gone "$(lmq_sys 0)/loop/backing_file"
is "$?" 0 "detach"
lmq_unload
umount $M
done_testing

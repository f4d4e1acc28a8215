#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 150
# 76-nested-plug: requests that an inline call issues to a lower loopmq
# device must reach it as nested (fb_nested, handed to its kthread), also
# when they sat in loopmq's own plug: an inline call under an outer plug
# replaces it by its own plug, and that plug must be flushed while the
# NOIO scope still holds.  Flushed after it, the lower device sees a plain
# submitter and runs the request inline, on the stack of the upper's
# inline call.
#
# Stack: vda: ext4 -> L -> loopmq1 (lower, mode direct): ext4 without a
# journal, mounted lazytime -> U (written in full, so overwrites allocate
# nothing and, with lazytime and no journal, change no metadata) ->
# loopmq0 (upper, direct I/O on, mode aio, then auto).  With direct I/O
# the upper's NOWAIT aio write submits its bios to loopmq1 into the plug
# and returns at once (-EIOCBQUEUED): the plug is flushed by
# loopmq_inline_exit(), from_schedule false, so loopmq1's queue_rq runs
# right there, in the submitter's task.  (A synchronous call, direct mode,
# sleeps waiting for its bios, which flushes the plug from schedule() to
# kblockd: not this path, so the upper does not use direct mode.)
# Drivers with an outer plug: fio libaio with 16 iocbs per io_submit
# (io_submit plugs above 2), and buffered writes to loopmq0 then fsync
# (writeback plugs).
#
# Assertions, on the lower device's counters since a reset after set-up
# (nothing else writes to it: no journal, lazytime, no sync):
# - the upper ran requests from queue_rq (aio_inline + aio_async > 0), so
#   the path was exercised;
# - lower inline == 0: nothing ran on the lower device's synchronous
#   inline path, which is where a request from a submitter that does not
#   look nested goes in direct mode;
# - lower fb_nested > 0, and fb_nested + kblockd's share at least the
#   number of requests the upper ran from queue_rq: each of those issued
#   its bio to the lower device from inside the inline call (at least one
#   per request: each inline call has a plug of its own, so nothing merges
#   across requests), seen as nested, or, had the call slept with bios in
#   its plug, flushed from schedule() to kblockd, where direct mode takes
#   NOWAIT aio (aio_inline, aio_async; only a worker's requests can take
#   it: a nested one goes to the kthread first) or the kthread
#   (fb_worker).  Measured on 6.12: fb_nested == upper inline exactly,
#   kblockd 3 of ~4000; the old code shows the mirror image, lower inline
#   == upper inline.  The upper's kthread's lower requests are fb_nested
#   too.
# - fio and the re-read verify, no errors.
# - seen independently of loopmq's counters (block:block_bio_queue on
#   /dev/vda, with the submitting task): no bio of the lower device's
#   direct I/O comes from fio, dd or the upper's kthread, where a lower
#   request run inline would submit it.
DESCRIPTION="a lower device's bios from an inline call are counted as nested"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	lmq_is_mq || skip_all "loopmq only (dispatch statistics)"
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

debug=$LMQ_SLOW
M=/mnt/t76
mkdir -p $M/low $M/mid
lmq_load 2 || { fail "load $LMQ_MOD"; stop_testing; }
D0=$(lmq_dev 0) D1=$(lmq_dev 1)
stats() { tr '\n' ' ' <$(lmq_sys $1)/loopmq/stats; }

size=48 fsize=8M
[ $debug = 1 ] && fsize=2M
setup() {
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/vda 256M &&
		mount /dev/vda $M/low && fallocate -l 96M $M/low/l &&
		$LOSETUP --direct-io=on $D1 $M/low/l && lmq_mode 1 direct &&
		mkfs.ext4 -q -F -O ^has_journal -E lazy_itable_init=0 $D1 &&
		mount -o lazytime $D1 $M/mid &&
		dd if=/dev/zero of=$M/mid/u bs=1M count=$size oflag=direct conv=fsync status=none &&
		$LOSETUP --direct-io=on $D0 $M/mid/u
}
check_quiet "stack: ext4 (no journal, lazytime) on $LMQ_NAME""1 (direct) holding a written $size MiB image, $LMQ_NAME""0 on it (dio)" setup || stop_testing
is "$(cat $(lmq_sys 0)/loop/dio)" 1 "upper: direct I/O on"

for mode in aio auto; do
	# a fresh attach (a fresh NOWAIT estimate), no page cache of U (a NOWAIT
	# direct write over cached pages answers "would block"), the image's
	# extent map loaded (a NOWAIT write needs it cached); nothing dirty
	$LOSETUP -d $D0 && lmq_wait_gone "$(lmq_sys 0)/loop/backing_file" &&
		$LOSETUP --direct-io=on $D0 $M/mid/u || fail "$mode: re-attach the upper device"
	lmq_mode 0 $mode || fail "$mode: set mode"
	sync
	echo 1 >/proc/sys/vm/drop_caches
	dd if=$D0 of=/dev/null bs=1M iflag=direct status=none
	echo 0 >$(lmq_sys 0)/loopmq/stats
	echo 0 >$(lmq_sys 1)/loopmq/stats
	# each bio to /dev/vda with the task that submitted it
	bio_trace_on vda || fail "$mode: block_bio_queue on /dev/vda"

	check_quiet "$mode: fio libaio randwrite, 16 iocbs per io_submit, verify" \
		fio --name=plug --filename=$D0 --ioengine=libaio --direct=1 --rw=randwrite --bs=4k \
		--size=$fsize --iodepth=16 --iodepth_batch_submit=16 --iodepth_batch_complete_min=16 \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --output-format=terse --output=/tmp/t76.fio
	diag "$mode after fio: upper: $(stats 0)"
	diag "$mode after fio: lower: $(stats 1)"
	a_inl=$(lmq_stat0 1 inline) a_nest=$(lmq_stat0 1 fb_nested)
	a_wk=$(($(lmq_stat0 1 fb_worker) + $(lmq_stat0 1 aio_inline) + $(lmq_stat0 1 aio_async)))
	up_a=$(($(lmq_stat0 0 inline) + $(lmq_stat0 0 aio_inline) + $(lmq_stat0 0 aio_async)))

	head -c 4M /dev/urandom >/tmp/t76.pat
	check_quiet "$mode: buffered writes to $D0, then fsync" \
		dd if=/tmp/t76.pat of=$D0 bs=64k seek=$((24 << 4)) conv=fsync status=none
	diag "$mode after fsync: upper: $(stats 0)"
	diag "$mode after fsync: lower: $(stats 1)"
	up=$(($(lmq_stat0 0 inline) + $(lmq_stat0 0 aio_inline) + $(lmq_stat0 0 aio_async)))
	inl=$(lmq_stat0 1 inline) nest=$(lmq_stat0 1 fb_nested)
	wk=$(($(lmq_stat0 1 fb_worker) + $(lmq_stat0 1 aio_inline) + $(lmq_stat0 1 aio_async)))

	[ $up_a -gt 0 ] && pass "$mode: fio: upper ran $up_a requests from queue_rq (NOWAIT aio)" ||
		fail "$mode: fio: the upper ran nothing from queue_rq" "the test did not exercise the path"
	is "$a_inl" 0 "$mode: fio: nothing ran inline on the lower device"
	[ $a_nest -gt 0 ] && [ $((a_nest + a_wk)) -ge $up_a ] &&
		pass "$mode: fio: lower saw $a_nest nested requests (+$a_wk from kblockd), one per upper inline request ($up_a)" ||
		fail "$mode: fio: lower saw a nested request for each upper inline request" "fb_nested $a_nest + kblockd $a_wk, upper inline $up_a"
	[ $((up - up_a)) -gt 0 ] && pass "$mode: writeback: upper ran $((up - up_a)) requests from queue_rq" ||
		fail "$mode: writeback: the upper ran nothing from queue_rq" "the test did not exercise the path"
	is "$((inl - a_inl))" 0 "$mode: writeback: nothing ran inline on the lower device"
	[ $((nest - a_nest)) -gt 0 ] && [ $((nest - a_nest + wk - a_wk)) -ge $((up - up_a)) ] &&
		pass "$mode: writeback: lower saw $((nest - a_nest)) nested requests (+$((wk - a_wk)) from kblockd), one per upper inline request ($((up - up_a)))" ||
		fail "$mode: writeback: lower saw a nested request for each upper inline request" "fb_nested +$((nest - a_nest)) + kblockd +$((wk - a_wk)), upper inline +$((up - up_a))"
	echo 3 >/proc/sys/vm/drop_caches
	is "$(dd if=$D0 bs=64k skip=$((24 << 4)) count=64 iflag=direct status=none | sha256sum)" \
		"$(sha256sum </tmp/t76.pat)" "$mode: the buffered writes read back"
	is "$(lmq_stat0 0 errors) $(lmq_stat0 1 errors)" "0 0" "$mode: no errors on either device"
	bio_trace_off /tmp/t76.by
	# Seen from below, whatever loopmq counts: the lower device's direct
	# I/O reaches /dev/vda from the task that ran its request.  Never
	# fio's or dd's (the lower run inline inside the upper's inline
	# call), nor the upper's kthread (the lower run inline in it).
	diag "$mode: bios to /dev/vda by task: $(tr '\n' ';' </tmp/t76.by)"
	bad=$(grep -E "\[(fio|dd|$LMQ_NAME""0)\]" /tmp/t76.by | tr '\n' ';')
	[ -s /tmp/t76.by ] && [ -z "$bad" ] &&
		pass "$mode: no bio to /dev/vda came from fio, dd or the upper's kthread (a lower request run inline there)" ||
		fail "$mode: no bio to /dev/vda came from fio, dd or the upper's kthread" "${bad:-no bio traced at all}"
done

$LOSETUP -d $D0 && lmq_wait_gone "$(lmq_sys 0)/loop/backing_file" && umount $M/mid &&
	$LOSETUP -d $D1 && lmq_wait_gone "$(lmq_sys 1)/loop/backing_file" && umount $M/low
is "$?" 0 "tear the stack down"
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

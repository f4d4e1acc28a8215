#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# 82-remap: the remap path (loopmq_remap.c) on a block-device backing with
# direct I/O: requests go to the backing device as clones of their bios.
#
# Backing: null_blk, memory backed, one hardware queue of depth 2 with
# completions from a timer (20 us), and 32 KiB requests at most (so the
# block layer splits larger clones): a queue that runs out of tags under
# any load, so clones submitted with
# REQ_NOWAIT from queue_rq end BLK_STS_AGAIN and the request must be
# finished by the kthread; completions come from interrupt context.
# Device 0 is attached at a 1 MiB offset.
#
# - verify, in every mode: fio crc32c write-then-verify of 512 B to 128 KiB
#   requests at queue depth 16 and a randrw with verify_backlog; then the
#   device's content equals the backing's at the offset (cmp); no errors;
#   requests took the remap path (in aio mode every request is NOWAIT,
#   so the full backing queue must show up as fb_eagain);
# - limits: the device's logical block size and DMA alignment are the
#   backing's, its maximum request size is its own;
# - flush: fsync of the device is one FLUSH request, and it is remapped
#   (no kthread, no fb_op); but with a page of the backing left dirty by a
#   buffered writer (periodic write-back off), the FLUSH writes it to the
#   backing, as fsync of the backing file does, through the file path;
# - page cache: a page of the backing cached by a buffered reader must not
#   go stale by a write through the device (the write takes the file path,
#   which drops it), and a page a buffered writer left dirty must be what
#   a read through the device returns (the file path writes it back
#   first); pages cached before the attach (blkid) are dropped at attach,
#   so they do not keep the remap path off;
# - switching under load: fio verify runs while the module parameter
#   remap, LOOP_SET_DIRECT_IO, the dispatch mode and a buffered reader of
#   the backing device switch requests between the remap and the file
#   paths; no verify error, and both kinds of path were taken;
# - discard and write-zeroes become zero-outs of the backing (the scratch
#   disk, which zeroes), read back as zeroes, through the remap path.
DESCRIPTION="the remap path: data, limits, flush, page cache, switching, zeroing"
requires() {
	require_cmd lmq-ioctl fio cmp
	lmq_is_mq || skip_all "the remap path is loopmq's"
	modinfo null_blk >/dev/null 2>&1 || skip_all "no null_blk module"
}
. /tests/lib/guest.sh

W=/tmp/t82 MB=1048576 SZ=16
mkdir -p $W
[ "$LMQ_SLOW" = 1 ] && SZ=8
modprobe null_blk nr_devices=1 queue_mode=2 memory_backed=1 gb=1 \
	submit_queues=1 hw_queue_depth=2 irqmode=2 completion_nsec=20000 \
	max_sectors=64 bs=512 || { fail "modprobe null_blk"; stop_testing; }
B=/dev/nullb0
udevadm settle 2>/dev/null
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) S=$(lmq_sys 0)
P=/sys/module/loopmq/parameters/remap
is "$(cat $P)" Y "parameter remap is on by default"

attach() {	# attach TAG: device 0 on null_blk at 1 MiB, direct I/O
	is "$(lmq-ioctl configure $D $B 16 512 $MB $((SZ * MB)))" OK "$1: attach $D to $B at 1 MiB, dio" &&
	{ udevadm settle 2>/dev/null; true; } &&
	is "$(cat $S/loop/dio)" 1 "$1: direct I/O on"
}
same() {	# same TAG: the device holds what the backing holds at the offset
	cmp -s <(dd if=$D bs=1M count=$SZ iflag=direct status=none) \
		<(dd if=$B bs=1M skip=1 count=$SZ iflag=direct status=none)
	is "$?" 0 "$1: $D reads what $B holds at 1 MiB"
}
fio_verify() {	# fio_verify TAG [ARGS]: write then verify, then randrw
	local tag=$1 out
	shift
	out=$(fio --name=wv --filename=$D --ioengine=libaio --direct=1 --iodepth=16 \
		--rw=randwrite --bsrange=512-128k --size=$((SZ / 2))M --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --output-format=terse "$@" 2>&1)
	[ $? = 0 ] && pass "$tag: fio write then verify" ||
		{ fail "$tag: fio write then verify"; echo "$out" | tail -n 8 | sed 's/^/#   /'; }
	out=$(fio --name=rw --filename=$D --ioengine=libaio --direct=1 --iodepth=16 \
		--rw=randrw --bs=4k --size=$((SZ / 2))M --io_size=$((SZ / 2))M \
		--verify=crc32c --verify_backlog=32 --verify_fatal=1 \
		--output-format=terse "$@" 2>&1)
	[ $? = 0 ] && pass "$tag: fio randrw with verify_backlog" ||
		{ fail "$tag: fio randrw with verify_backlog"; echo "$out" | tail -n 8 | sed 's/^/#   /'; }
}

# ---- data, in every mode
for mode in $LMQ_MODES; do
	attach $mode || continue
	lmq_mode 0 $mode || fail "$mode: set mode"
	echo 0 >$S/loopmq/stats
	fio_verify $mode
	same $mode
	is "$(lmq_stat 0 errors)" 0 "$mode: no request failed"
	if [ $mode = kthread ]; then
		check "$mode: the kthread remapped requests" [ "$(lmq_stat 0 remap)" -gt 0 ]
	else
		check "$mode: requests took the remap path" [ "$(lmq_stat 0 remap)" -gt 0 ]
	fi
	is "$(lmq_stat 0 aio_inline) $(lmq_stat 0 aio_async) $(lmq_stat 0 inline) $(lmq_stat 0 kthread)" \
		"0 0 0 0" "$mode: no request took the file path"
	[ $mode = aio ] &&
		check "$mode: a full backing queue sent requests to the kthread" \
			[ "$(lmq_stat 0 fb_eagain)" -gt 0 ]
	is "$(lmq-ioctl clr-fd $D)" OK "$mode: detach"
done

# ---- limits, flush
attach limits
q=$S/queue bq=/sys/block/nullb0/queue
is "$(cat $q/logical_block_size) $(cat $q/dma_alignment)" \
	"$(cat $bq/logical_block_size) $(cat $bq/dma_alignment)" \
	"limits: logical block size and DMA alignment are the backing's"
check "limits: requests of up to 128 KiB, larger than the backing's $(cat $bq/max_sectors_kb) KiB" \
	[ "$(cat $q/max_sectors_kb)" -ge 128 ]
lmq_mode 0 auto
echo 0 >$S/loopmq/stats
is "$(lmq-ioctl fsync $D)" OK "flush: fsync $D"
is "$(lmq_stat 0 remap) $(lmq_stat 0 kthread) $(lmq_stat 0 fb_op)" "1 0 0" \
	"flush: one FLUSH request, remapped"

# ---- page cache
# a page of the backing cached by a buffered reader: a write to it through
# the device goes through the file, which drops the page afterwards
dd if=/dev/urandom of=$W/new bs=4096 count=1 status=none
dd if=$B of=/dev/null bs=4096 skip=$((MB / 4096 + 8)) count=1 status=none
echo 0 >$S/loopmq/stats
dd if=$W/new of=$D bs=4096 seek=8 count=1 oflag=direct conv=notrunc status=none
is "$(lmq_stat 0 remap)" 0 "page cache: the write to a cached range took the file path"
cmp -s $W/new <(dd if=$B bs=4096 skip=$((MB / 4096 + 8)) count=1 status=none)
is "$?" 0 "page cache: a buffered read of the backing sees the new data"
# a page a buffered writer of the backing left dirty: a read of it through
# the device goes through the file, which writes it back first
dd if=/dev/urandom of=$W/new2 bs=4096 count=1 status=none
dd if=$W/new2 of=$B bs=4096 seek=$((MB / 4096 + 9)) count=1 conv=notrunc status=none
echo 0 >$S/loopmq/stats
cmp -s $W/new2 <(dd if=$D bs=4096 skip=9 count=1 iflag=direct status=none)
is "$?" 0 "page cache: a read through the device sees the backing's dirty page"
is "$(lmq_stat 0 remap)" 0 "page cache: that read took the file path"
# a page a buffered writer of the backing left dirty: a FLUSH of the
# device must write it to the backing, not only flush the backing's cache;
# the periodic write-back, which would write it anyway, is off meanwhile
writeback_off
dd if=/dev/urandom of=$B bs=4096 seek=$((MB / 4096 + 10)) count=1 conv=notrunc status=none
w0=$(awk '{ print $7 }' /sys/block/nullb0/stat)
echo 0 >$S/loopmq/stats
is "$(lmq-ioctl fsync $D)" OK "page cache: fsync $D with a dirty page of $B"
w1=$(awk '{ print $7 }' /sys/block/nullb0/stat)
check "page cache: the FLUSH wrote the dirty page to $B ($((w1 - w0)) sectors written)" \
	[ $((w1 - w0)) -ge 8 ]
is "$(lmq_stat 0 remap)" 0 "page cache: that FLUSH took the file path"
writeback_on
# pages cached before the attach are dropped by it (while another opener
# keeps them: the last close of a block device drops its page cache)
is "$(lmq-ioctl clr-fd $D)" OK "page cache: detach"
exec 9<$B
dd if=$B of=/dev/null bs=1M count=4 status=none
is "$(lmq-ioctl -r cached $B $MB $((2 * MB)))" "OK n=512" \
	"page cache: reading $B cached the range the device reads next"
attach "page cache"
is "$(lmq-ioctl -r cached $B $MB $((2 * MB)))" "OK n=0" "page cache: the attach dropped them"
exec 9<&-
echo 0 >$S/loopmq/stats
dd if=$D of=/dev/null bs=64k count=32 iflag=direct status=none
check "page cache: reads of a range cached before the attach are remapped" \
	[ "$(lmq_stat 0 remap)" -ge 32 ]

# ---- switching between the paths under load
lmq_mode 0 auto
echo 0 >$S/loopmq/stats
(
	i=0
	while [ ! -e $W/stop ]; do
		i=$((i + 1))
		case $((i % 4)) in
		0) echo N >$P; sleep 0.2; echo Y >$P;;
		1) lmq-ioctl set-dio $D 0 >/dev/null; sleep 0.2
		   lmq-ioctl set-dio $D 1 >/dev/null;;
		2) for m in $LMQ_MODES auto; do lmq_mode 0 $m; sleep 0.05; done;;
		3) dd if=$B of=/dev/null bs=64k skip=$((16 + RANDOM % 128)) count=8 \
			status=none; sleep 0.2
		   echo 1 >/proc/sys/vm/drop_caches;;
		esac
	done
) &
sw=$!
fio_verify switching --runtime=$((10 + 10 * LMQ_SLOW)) --time_based=0
touch $W/stop
wait $sw
echo Y >$P
lmq-ioctl set-dio $D 1 >/dev/null
same switching
is "$(lmq_stat 0 errors)" 0 "switching: no request failed"
other=$(($(lmq_stat 0 aio_inline) + $(lmq_stat 0 aio_async) + $(lmq_stat 0 inline) + $(lmq_stat 0 kthread)))
check "switching: requests took the remap path ($(lmq_stat 0 remap))" [ "$(lmq_stat 0 remap)" -gt 0 ]
check "switching: and the file path ($other)" [ "$other" -gt 0 ]
is "$(lmq-ioctl clr-fd $D)" OK "switching: detach"

# ---- discard and write-zeroes, on the scratch disk
if [ -b "$LMQ_SCRATCH" ] && [ "$(sysv "$LMQ_SCRATCH" queue/write_zeroes_max_bytes)" -gt 0 ] 2>/dev/null; then
	umount /mnt/lmq-ext4 /mnt/lmq-xfs 2>/dev/null
	is "$(lmq-ioctl configure $D $LMQ_SCRATCH 16 512 $MB $((4 * MB)))" OK \
		"zeroing: attach $D to $LMQ_SCRATCH at 1 MiB, dio"
	head -c $((4 * MB)) /dev/urandom >$W/rand
	dd if=$W/rand of=$D bs=1M oflag=direct status=none
	echo 0 >$S/loopmq/stats
	is "$(lmq-ioctl discard $D 0 $MB)" OK "zeroing: BLKDISCARD of the first MiB"
	is "$(lmq-ioctl zeroout $D $MB $MB)" OK "zeroing: BLKZEROOUT of the second MiB"
	check "zeroing: remapped" [ "$(lmq_stat 0 remap)" -gt 0 ]
	is "$(lmq_stat 0 kthread) $(lmq_stat 0 inline) $(lmq_stat 0 errors)" "0 0 0" \
		"zeroing: not through the file, no error"
	cmp -s <(head -c $((2 * MB)) /dev/zero) \
		<(dd if=$LMQ_SCRATCH bs=1M skip=1 count=2 iflag=direct status=none)
	is "$?" 0 "zeroing: the backing reads zeroes there"
	cmp -s <(tail -c $((2 * MB)) $W/rand) \
		<(dd if=$D bs=1M skip=2 count=2 iflag=direct status=none)
	is "$?" 0 "zeroing: the rest is untouched"
	is "$(lmq-ioctl clr-fd $D)" OK "zeroing: detach"
else
	skip "zeroing" "$LMQ_SCRATCH cannot write zeroes"
fi

# ---- a flush through two loopmq devices
# loopmq1 remaps to loopmq0, which has a write cache (a file): there a
# FLUSH or FUA clone is a flush sequence, which loopmq0's kthread ends
# under loopmq0's flush lock.  loopmq1 must not end its own flush-sequence
# request in that context (same lock class: lockdep reports recursive
# locking, and the harness fails the test on the debug kernel).
lmq_unload
lmq_load 2 || { fail "load $LMQ_MOD with 2 devices"; stop_testing; }
D0=$(lmq_dev 0) D1=$(lmq_dev 1) S1=$(lmq_sys 1)
truncate -s $((16 * MB)) $W/lower.img
is "$(losetup --direct-io=off $D0 $W/lower.img 2>&1)" "" "stacked: $D0 on a file"
lmq_mode 0 kthread
is "$(losetup --direct-io=on $D1 $D0 2>&1)" "" "stacked: $D1 on $D0, direct I/O"
lmq_mode 1 auto
echo 0 >$S1/loopmq/stats
head -c $MB /dev/urandom >$W/rand
dd if=$W/rand of=$D1 bs=4k oflag=direct,dsync status=none
is "$?" 0 "stacked: O_DSYNC writes to $D1"
for i in 1 2 3 4; do lmq-ioctl fsync $D1 >/dev/null; done
is "$(lmq-ioctl fsync $D1)" OK "stacked: fsync $D1"
check "stacked: remapped ($(lmq_stat 1 remap))" [ "$(lmq_stat 1 remap)" -ge 261 ]
is "$(lmq_stat 1 kthread) $(lmq_stat 1 errors)" "0 0" "stacked: not through the file, no error"
cmp -s $W/rand <(dd if=$D0 bs=1M count=1 iflag=direct status=none)
is "$?" 0 "stacked: $D0 holds what was written"
losetup -d $D1; losetup -d $D0

lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
modprobe -r null_blk
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 88-submitter-limits: checks the kernel makes for the task that writes
# apply to the device's writes as to the backing, never to whichever task
# submitted them.
#
# 1. RLIMIT_FSIZE: a regular file's write_iter holds a write to the calling
#    task's file size limit (a short write, or EFBIG and SIGXFSZ).  A task
#    with a 4 KiB limit writes 4 KiB at offset 0 of a device whose backing
#    starts 1 MiB into its file (lo_offset), in every mode: the write must
#    succeed, the task live, and the data land at 1 MiB in the file.
#    Inline in the submitter's task, the backing write would meet the
#    task's limit.
# 2. An immutable backing file: discards fail and free no block, as
#    fallocate(2) on it does (vfs_fallocate()'s check).
# 3. A block-device backing made read-only (blockdev --setro) or used for
#    swap after the bind: the remap path must refuse writes as
#    blkdev_write_iter() does (EPERM, ETXTBSY), and leave the disk as it
#    was, in every mode.
DESCRIPTION="the submitter's RLIMIT_FSIZE; writes to a read-only or swap backing device"
requires() {
	require_cmd lmq-ioctl fio blockdev cmp mkswap swapon swapoff xfs_io
	[ -b /dev/vda ] || skip_all "no /dev/vda"
	lmq_is_mq || skip_all "loopmq's dispatch modes"
}
. /tests/lib/guest.sh

W=/tmp/t88 MB=1048576
mkdir -p $W
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)
F=$(lmq_backing ext4 8M) || { fail "backing file"; stop_testing; }
dd if=/dev/zero of=$F bs=1M count=8 conv=fsync status=none

# ---- 1. RLIMIT_FSIZE
is "$(lmq-ioctl configure $D $F 16 0 $MB)" OK "attach at offset 1 MiB, direct I/O"
n=0
for dio in 1 0; do
	is "$(lmq-ioctl set-dio $D $dio)" OK "direct I/O $dio"
	for mode in $LMQ_MODES; do
		t="dio $dio, $mode"
		lmq_mode 0 $mode || fail "$t: mode"
		n=$((n + 1))
		c=$(printf '%02x' $((0x40 + n)))
		head -c 4096 /dev/zero | tr '\0' "\\$(printf '%03o' $((0x40 + n)))" >$W/blk
		f0=$(lmq_stat 0 fb_fsize)
		# io_uring: on 6.1 a plugged O_DIRECT write(2) to a block
		# device reaches queue_rq from kblockd, io_uring's from the
		# submitter's own task
		bash -c "ulimit -f 8 && exec fio --name=w --filename=$D --ioengine=io_uring \
			--direct=1 --rw=write --bs=4k --size=4k --offset=0 \
			--buffer_pattern=0x$c --output-format=terse" >$W/fio.out 2>&1
		is "$?" 0 "$t: a task with a 4 KiB file size limit writes 4 KiB"
		grep -v '^3;' $W/fio.out | head -n 2 | sed 's/^/# /'
		cmp -s <(dd if=$F bs=4k skip=256 count=1 iflag=direct status=none) $W/blk
		is "$?" 0 "$t: the data is at 1 MiB in the file"
		[ "$mode" = kthread ] ||
			isnt "$(lmq_stat 0 fb_fsize)" "$f0" "$t: counted as fb_fsize"
	done
done
is "$(lmq-ioctl clr-fd $D)" OK "detach"
lmq_wait_gone $(lmq_sys 0)/loop/backing_file || fail "still bound"

# ---- 2. an immutable backing file: fallocate(2)'s checks hold for the
# device's discards too (vfs_fallocate() makes them, the method does not)
dd if=/dev/urandom of=$F bs=1M count=8 conv=fsync status=none
is "$(lmq-ioctl configure $D $F 16 0)" OK "attach, direct I/O"
xfs_io -c "chattr +i" $F || fail "chattr +i"
blocks=$(stat -c %b $F)
for mode in $LMQ_MODES; do
	lmq_mode 0 $mode || fail "$mode: mode"
	isnt "$(word1 "$(lmq-ioctl discard $D $MB $MB)")" OK "$mode: a discard on an immutable backing fails"
	is "$(stat -c %b $F)" "$blocks" "$mode: the immutable backing keeps its blocks"
done
xfs_io -c "chattr -i" $F
is "$(lmq-ioctl clr-fd $D)" OK "detach"
lmq_wait_gone $(lmq_sys 0)/loop/backing_file || fail "still bound"
umount /mnt/lmq-ext4

# ---- 3. a read-only or swap block device under a bound device
R=$(lmq_backing raw) || { fail "raw backing"; stop_testing; }
dd if=/dev/urandom of=$W/old bs=1M count=1 status=none
dd if=$W/old of=$R bs=1M count=1 oflag=direct status=none
is "$(lmq-ioctl configure $D $R 16 0)" OK "attach $R with direct I/O (the remap path)"
for mode in $LMQ_MODES; do
	lmq_mode 0 $mode || fail "$mode: mode"
	blockdev --setro $R
	is "$(word1 "$(lmq-ioctl pwrite $D 0 4096 direct)")" EIO "$mode: a write to $R made read-only fails"
	blockdev --setrw $R
	cmp -s <(dd if=$R bs=1M count=1 iflag=direct status=none) $W/old
	is "$?" 0 "$mode: $R is as it was"
done
# the backing device becomes swap (swapon sets S_SWAPFILE on its inode)
mkswap $R >/dev/null 2>&1 && swapon $R 2>/dev/null && {
	for mode in $LMQ_MODES; do
		lmq_mode 0 $mode || fail "$mode: mode"
		is "$(word1 "$(lmq-ioctl pwrite $D $((32 * MB)) 4096 direct)")" EIO \
			"$mode: a write to $R while it is swap fails"
	done
	swapoff $R
} || skip "swap on $R" "mkswap or swapon failed"
is "$(lmq-ioctl clr-fd $D)" OK "detach"
done_testing

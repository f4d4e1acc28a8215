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
# 4. A tmpfs backing: no ZERO_RANGE, but PUNCH_HOLE.  The first zero-out
#    that cannot keep its blocks turns off write-zeroes only (the kernel
#    writes zeroes itself then); discard stays and still frees blocks.
# 5. The backing's gfp mask (mapping_set_gfp_mask()): while a device is
#    bound, the backing's page cache allocates without __GFP_IO and
#    __GFP_FS, so that reclaim from it cannot recurse into the device;
#    also while a second device shares the backing after the first is
#    detached; and the mask the file had comes back after the last.
#    Observed where the page cache asks: a kprobe on
#    __filemap_get_folio() records the mask a buffered write's
#    write_begin passes, which is the mapping's.
DESCRIPTION="the submitter's RLIMIT_FSIZE; an immutable, read-only, swap or tmpfs backing; the backing's gfp mask"
requires() {
	require_cmd lmq-ioctl fio blockdev cmp mkswap swapon swapoff xfs_io
	[ -b /dev/vda ] || skip_all "no /dev/vda"
	lmq_is_mq || skip_all "loopmq's dispatch modes"
}
. /tests/lib/guest.sh

W=/tmp/t88 MB=1048576
mkdir -p $W
lmq_load 2 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) D1=$(lmq_dev 1)
F=$(lmq_backing ext4 8M) || { fail "backing file"; stop_testing; }
dd if=/dev/zero of=$F bs=1M count=8 conv=fsync status=none

# ---- 1. RLIMIT_FSIZE
if part fsize; then
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
fi

# ---- 2. an immutable backing file: fallocate(2)'s checks hold for the
# device's discards too (vfs_fallocate() makes them, the method does not)
if part immutable; then
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
fi

# ---- 3. a read-only or swap block device under a bound device
if part rodev; then
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
	lmq_wait_gone $(lmq_sys 0)/loop/backing_file || fail "still bound"
fi

# ---- 4. a tmpfs backing: no ZERO_RANGE, so no write-zeroes; discard stays
if part tmpfs; then
	Q=$(lmq_sys 0)/queue
	mkdir -p $W/tmpfs
	mount -t tmpfs -o size=32m tmpfs $W/tmpfs || { fail "mount tmpfs"; stop_testing; }
	T=$W/tmpfs/image
	head -c $((8 * MB)) /dev/urandom >$T
	is "$(lmq-ioctl configure $D $T 0 0)" OK "tmpfs: attach"
	lmq_mode 0 kthread || fail "tmpfs: mode"
	isnt "$(cat $Q/write_zeroes_max_bytes)" 0 "tmpfs: write-zeroes offered at first"
	# BLKZEROOUT asks to keep the blocks (REQ_NOUNMAP: ZERO_RANGE), which
	# tmpfs refuses; the kernel then writes zeroes itself
	is "$(lmq-ioctl zeroout $D $MB $MB)" OK "tmpfs: a zero-out succeeds"
	cmp -s <(dd if=$D bs=1M skip=1 count=1 iflag=direct status=none) <(head -c $MB /dev/zero)
	is "$?" 0 "tmpfs: the device reads zeroes where zeroed"
	wz_off() { [ "$(cat $Q/write_zeroes_max_bytes)" = 0 ]; }
	for ((i = 0; i < 50; i++)); do wz_off && break; sleep 0.1; done
	is "$(cat $Q/write_zeroes_max_bytes)" 0 "tmpfs: write-zeroes is turned off after tmpfs refused ZERO_RANGE"
	isnt "$(cat $Q/discard_max_bytes)" 0 "tmpfs: discard is still offered"
	b0=$(stat -c %b $T)
	is "$(lmq-ioctl discard $D $((4 * MB)) $((2 * MB)))" OK "tmpfs: a discard succeeds"
	is "$((b0 - $(stat -c %b $T)))" $((2 * MB / 512)) "tmpfs: the discard freed its 2 MiB"
	cmp -s <(dd if=$D bs=1M skip=4 count=2 iflag=direct status=none) <(head -c $((2 * MB)) /dev/zero)
	is "$?" 0 "tmpfs: the device reads zeroes where discarded"
	is "$(lmq-ioctl clr-fd $D)" OK "tmpfs: detach"
	lmq_wait_gone $(lmq_sys 0)/loop/backing_file || fail "still bound"
	umount $W/tmpfs
fi

# ---- 5. the backing's gfp mask
if part gfp; then
	TR=/sys/kernel/tracing
	[ -e $TR/kprobe_events ] || mount -t tracefs nodev $TR 2>/dev/null
	# a buffered write's write_begin: __filemap_get_folio(mapping, index,
	# FGP_WRITEBEGIN (FGP_WRITE is 0x8), mapping_gfp_mask(mapping))
	if echo 'p:lmq88/getfolio __filemap_get_folio map=%di:x64 fl=%dx:x32 gfp=%cx:x32' \
		>$TR/kprobe_events; then
		pass "gfp: a kprobe on __filemap_get_folio"
	else
		fail "gfp: a kprobe on __filemap_get_folio" "no kprobe events in $(uname -r)"
		stop_testing
	fi
	F5=$(lmq_backing ext4 8M) || { fail "gfp: backing file"; stop_testing; }
	dd if=/dev/zero of=$F5 bs=1M count=8 conv=fsync status=none
	# probed CMD...: run CMD with the probe on; print "MAP GFP" of each
	# write_begin it caused (FGP_WRITE set), one line per distinct pair
	probed() {
		local m f g
		echo >$TR/trace
		echo 1 >$TR/events/lmq88/getfolio/enable
		"$@"
		echo 0 >$TR/events/lmq88/getfolio/enable
		grep -o 'map=0x[0-9a-f]* fl=0x[0-9a-f]* gfp=0x[0-9a-f]*' $TR/trace |
			while read -r m f g; do
				(( ${f#fl=} & 0x8 )) && echo "${m#map=} ${g#gfp=}"
			done | sort -u
	}
	# a 4 KiB write at 1 MiB, through the file or through a device
	wfile() { dd if=/dev/urandom of=$F5 bs=4k count=1 seek=256 conv=notrunc,fsync status=none; }
	wdev() { dd if=/dev/urandom of=$1 bs=4k count=1 seek=256 oflag=direct status=none; }
	gfp_seen=$(probed wfile)
	read -r M G0 <<<"$gfp_seen"
	is "$(wc -l <<<"$gfp_seen")" 1 "gfp: one mapping written through the file" "$gfp_seen"
	[ -n "$G0" ] && (( G0 & 0xc0 )) && pass "gfp: the file's own mask has __GFP_IO and __GFP_FS ($G0)" ||
		fail "gfp: the file's own mask has __GFP_IO and __GFP_FS" "'$G0'"
	G1=$(printf '0x%x' $(( ${G0:-0} & ~0xc0 )))
	is "$(lmq-ioctl configure $D $F5 0 0)" OK "gfp: attach $D, buffered"
	lmq_mode 0 kthread || fail "gfp: mode"
	is "$(probed wdev $D)" "$M $G1" "gfp: bound, the backing's page cache allocates without __GFP_IO and __GFP_FS"
	is "$(lmq-ioctl configure $D1 $F5 0 0)" OK "gfp: attach $D1 to the same file"
	lmq_mode 1 kthread || fail "gfp: mode of $D1"
	is "$(probed wdev $D1)" "$M $G1" "gfp: two devices bound, the mask is reduced"
	is "$(lmq-ioctl clr-fd $D)" OK "gfp: detach $D"
	lmq_wait_gone $(lmq_sys 0)/loop/backing_file || fail "still bound"
	is "$(probed wdev $D1)" "$M $G1" "gfp: $D detached, $D1 still bound: the mask stays reduced"
	is "$(lmq-ioctl clr-fd $D1)" OK "gfp: detach $D1"
	lmq_wait_gone $(lmq_sys 1)/loop/backing_file || fail "still bound"
	is "$(probed wfile)" "$M $G0" "gfp: both detached, the file has its own mask back"
	echo '-:lmq88/getfolio' >>$TR/kprobe_events
fi
done_testing

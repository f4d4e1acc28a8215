#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 53-short-backing-read: a direct-I/O read that its backing answers short,
# asynchronously.  Device 0 is backed by device 1 (a block device: its
# direct I/O completes from an interrupt-like context), with direct I/O;
# then device 1 shrinks to 4 MiB under device 0, which still has 8 MiB, and
# 8 KiB reads of device 0 across the 4 MiB mark get 4 KiB back from the
# backing.  Each such read must complete (the rest is past the end of the
# backing: loopmq reads zeroes there, the stock driver answers EIO), and
# so must 4 KiB reads wholly past the end (the backing answers 0 bytes), in
# every dispatch mode; the zeroes must be the driver's (xfs_io reads
# into a buffer it filled with 0xab).  The ioctl fuzzer of 50-ioctl-fuzz
# found the hang this checks for: a short completion of a kiocb the
# kthread had submitted was queued back to the kthread without waking it;
# and one of 0 bytes made the kthread submit the same kiocb again, forever.
DESCRIPTION="direct-I/O reads that the backing device answers short complete"
requires() {
	require_cmd lmq-ioctl lmq-stats fio xfs_io
}
. /tests/lib/guest.sh

W=/tmp/t53 MB=1048576
mkdir -p $W
lmq_load 2 || { fail "load $LMQ_MOD"; stop_testing; }
D0=$(lmq_dev 0) D1=$(lmq_dev 1)
head -c $((8 * MB)) /dev/urandom >$W/img
dd if=$W/img of=$W/want bs=4096 skip=$((4 * MB / 4096 - 1)) count=1 status=none
head -c 4096 /dev/zero >>$W/want
head -c 4096 /dev/zero >$W/zero
# nonzero OFFSET LENGTH: "N L", N the bytes past the 4 MiB mark that are
# not zero in an O_DIRECT read of device 0, L the 16-byte lines read.
# xfs_io reads into a buffer it filled with 0xab first, so a tail that the
# driver left as the buffer was shows (dd's fresh buffer is zero anyway).
nonzero() {
	local skip=0
	[ $1 -lt $((4 * MB)) ] && skip=$(((4 * MB - $1) / 16))
	xfs_io -d -r -c "pread -v $1 $2" $D0 | awk -v skip=$skip '
	/^[0-9a-f]+:  / { if (++k > skip) for (i = 2; i <= 17; i++) if ($i != "00") n++ }
	END { print n + 0, k + 0 }'
}
kick() {	# a read through device 0's kthread wakes it up
	lmq_mode 0 kthread
	dd if=$D0 of=/dev/null bs=4096 count=1 iflag=direct status=none
}

for mode in $LMQ_MODES; do
	is "$(lmq-ioctl set-fd $D1 $W/img)" OK "$mode: attach $D1 to an 8 MiB file"
	# LO_FLAGS_DIRECT_IO (16): direct I/O on the backing block device
	is "$(lmq-ioctl configure $D0 $D1 16 0)" OK "$mode: attach $D0 to $D1 with direct I/O"
	is "$(cat $(lmq_sys 0)/loop/dio)" 1 "$mode: $D0 uses direct I/O"
	[ "$mode" = stock ] || { lmq_mode 0 $mode && lmq_mode 1 $mode; } ||
		fail "$mode: set mode"
	is "$(lmq-ioctl set-status $D1 0 $((4 * MB)) 0)" OK "$mode: shrink $D1 to 4 MiB"
	is "$(blockdev --getsize64 $D1) $(blockdev --getsize64 $D0)" "$((4 * MB)) $((8 * MB))" \
		"$mode: sizes of $D1 and $D0"
	# read OFFSET LENGTH WANT: 10 direct reads of device 0; counts
	read10() {
		local i t p
		stuck=0 done=0 good=0 errs=0
		for i in $(seq 10); do
			rm -f $W/got
			dd if=$D0 of=$W/got bs=$2 count=1 skip=$1 \
				iflag=direct,skip_bytes status=none 2>$W/err &
			p=$!
			for t in $(seq 100); do kill -0 $p 2>/dev/null || break; sleep 0.1; done
			if kill -0 $p 2>/dev/null; then
				stuck=$((stuck + 1))
				kick
				for t in $(seq 100); do kill -0 $p 2>/dev/null || break; sleep 0.1; done
				kill -0 $p 2>/dev/null &&
					{ fail "$mode: a read of $2 at $1 never ends"; stop_testing; }
			fi
			wait $p && done=$((done + 1)) || errs=$((errs + 1))
			cmp -s $W/got $3 && good=$((good + 1))
		done
	}
	# 8 KiB across the end: the backing answers 4 KiB, asynchronously
	read10 $((4 * MB - 4096)) 8192 $W/want
	is "$stuck" 0 "$mode: 10 reads across the end of the backing, none stuck for 10 s"
	if lmq_is_mq; then
		is "$done $good" "10 10" "$mode: each read 4 KiB of data and 4 KiB of zeroes"
	else
		is "$((done + errs))" 10 "$mode: each read ended (stock loop: $errs EIO)"
	fi
	# 4 KiB wholly past the end: the backing answers 0 bytes
	read10 $((6 * MB)) 4096 $W/zero
	is "$stuck" 0 "$mode: 10 reads past the end of the backing, none stuck for 10 s"
	if lmq_is_mq; then
		is "$done $good" "10 10" "$mode: each read 4 KiB of zeroes"
	else
		is "$((done + errs))" 10 "$mode: each read ended (stock loop: $errs EIO)"
	fi
	if lmq_is_mq; then
		is "$(nonzero $((4 * MB - 4096)) 8192)" "0 512" \
			"$mode: a read across the end: the driver zeroes what is past it"
		is "$(nonzero $((6 * MB)) 4096)" "0 256" \
			"$mode: a read past the end: the driver zeroes all of it"
	fi
	is "$(lmq-ioctl clr-fd $D0)" OK "$mode: detach $D0"
	is "$(lmq-ioctl clr-fd $D1)" OK "$mode: detach $D1"
done
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
# 84-pin-races: requests that race a pin or an unpin (loopmq_pin.c, DOC:
# pin) never go through the file.
#
# A discard or write-zeroes that passed the block layer's limit check
# before the pin turned them off waits for the pin's queue freeze to end,
# then reaches the driver on a pinned device.  Here the window is held
# open for certain, not hoped for: the image's file system is frozen while
# a write to the device is in flight, so the pin's queue freeze waits for
# that write; the discard (BLKDISCARD) or zero-out (BLKZEROOUT) is issued
# then by a task that opened the device before the pin, and is seen
# waiting; the thaw lets the write end, the pin happen,
# and the discard arrive.  Checked: the pin succeeded (so the discard came
# after it), the image keeps every block (a hole punched under the map is
# what let a later write land in another file), and a zero-out leaves the
# extents written and zeroes where both the device and the file read them
# (ZERO_RANGE through the file would make them unwritten: the file would
# read zeroes, the device the old data).  In kthread and aio modes.
#
# Then writes and a discard racing an unpin, the window held open for a
# second: the unpin waits for the image's inode lock, which a direct
# reader holds while dm-delay holds its read.  No write may fail (one
# dispatched after the queue ran again but before the pin's protection
# was cleared met ETXTBSY), and a discard issued as soon as the device
# offers discard again must succeed: an unpin that let requests through
# the file before clearing the protection fails it every time.
DESCRIPTION="discard, zero-out racing a pin; writes racing an unpin"
requires() {
	require_cmd lmq-ioctl fio fsfreeze cmp filefrag blockdev dmsetup
	lmq_is_mq || skip_all "pinning is loopmq's"
}
. /tests/lib/guest.sh

W=/tmp/t84 MB=1048576 SZ=32
mkdir -p $W
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) S=$(lmq_sys 0)
_lmq_fs ext4 || { fail "ext4 on the scratch disk"; stop_testing; }
M=/mnt/lmq-ext4 F=/mnt/lmq-ext4/image
head -c $((SZ * MB)) /dev/urandom >$W/data

# wait_for COND [TENTHS]: poll COND (a command) until it holds
wait_for() {
	local i
	for ((i = 0; i < ${2:-100}; i++)); do "$1" && return 0; sleep 0.1; done
	return 1
}
write_inflight() { [ "$(awk '{ print $2 }' $S/inflight)" -ge 1 ]; }
unwritten() { filefrag -v "$F" | grep -c unwritten; }
# the set-remap process waits in the queue freeze (where wchan shows it)
freezing() {
	local w
	w=$(cat /proc/$ppid/wchan 2>/dev/null)
	case $w in *freeze*) return 0;; ""|0) sleep 1; return 0;; esac
	return 1
}

if part pin; then
	for mode in kthread aio; do
		for op in discard zeroout; do
			t="$mode $op"
			dd if=$W/data of=$F bs=1M conv=fsync status=none
			blocks=$(stat -c %b $F)
			is "$(lmq-ioctl configure $D $F 16 0)" OK "$t: attach with direct I/O"
			lmq_mode 0 $mode || fail "$t: mode $mode"
			# the discard's opener opens the device now, before the pin
			# holds the device's mutex, and calls once told to
			rm -f $W/go
			lmq-ioctl -w $W/go $op $D $((8 * MB)) $((4 * MB)) >$W/op.out 2>&1 &
			opid=$!
			fsfreeze --freeze $M
			# rewrites the image's own first block: the data stays
			dd if=$W/data of=$D bs=4k count=1 oflag=direct conv=notrunc status=none &
			wpid=$!
			wait_for write_inflight || fail "$t: a write in flight on $D"
			lmq-ioctl set-remap $D 1 >$W/pin.out 2>&1 &
			ppid=$!
			wait_for freezing 50 || diag "$t: set-remap in $(cat /proc/$ppid/wchan 2>/dev/null)"
			touch $W/go
			sleep 1
			alive $opid && alive $ppid && pass "$t: $op and pin wait for the frozen write" ||
				fail "$t: $op and pin wait for the frozen write" "the window was missed"
			fsfreeze --unfreeze $M
			wait $wpid
			is "$?" 0 "$t: the frozen write completes"
			wait $ppid
			is "$(cat $W/pin.out)" OK "$t: the pin succeeds"
			wait $opid
			opr=$(word1 "$(cat $W/op.out)")
			is "$(cat $S/loopmq/pinned)" 1 "$t: pinned"
			is "$(stat -c %b $F)" "$blocks" "$t: the image keeps all its blocks"
			is "$(unwritten)" 0 "$t: no extent of the image became unwritten"
			if [ $op = discard ]; then
				# 6.1 passes the EOPNOTSUPP on, 6.12's BLKDISCARD calls it done
				case $opr in OK|EOPNOTSUPP) pass "$t: the discard ends: $opr";;
				*) fail "$t: the discard ends" "$opr";; esac
				cmp -s <(dd if=$D bs=1M count=$SZ iflag=direct status=none) $W/data
				is "$?" 0 "$t: the device reads what was written"
			else
				is "$opr" OK "$t: the zero-out succeeds"
				cmp -s <(dd if=$D bs=1M skip=8 count=4 iflag=direct status=none) \
					<(head -c $((4 * MB)) /dev/zero)
				is "$?" 0 "$t: the device reads zeroes where zeroed"
			fi
			cmp -s <(dd if=$D bs=1M count=$SZ iflag=direct status=none) $F
			is "$?" 0 "$t: the file reads what the device reads"
			is "$(lmq-ioctl set-remap $D 0)" OK "$t: unpin"
			is "$(lmq-ioctl clr-fd $D)" OK "$t: detach"
			lmq_wait_gone $S/loop/backing_file || fail "$t: still bound"
		done
	done
fi

# ---- writes racing an unpin
# The unpin clears the pin's protection under the image's inode lock.  A
# direct read of the image holds that lock (shared) until its I/O ends,
# and here the disk under the image's file system is a dm-delay device
# that holds reads for a second: the unpin waits for the lock that long.
# Writes go on meanwhile; none may fail (done after the queue runs again,
# the unpin would leave them a second of ETXTBSY through the file).
if part unpin; then
	N=3
	modprobe dm-delay 2>/dev/null
	if ! grep -qw delay <(dmsetup targets 2>/dev/null); then
		skip "unpin race" "no dm-delay in this kernel"
		stop_testing
	fi
	umount $M
	SECT=$(blockdev --getsz /dev/vda)
	dms create t84 <<<"0 $SECT delay /dev/vda 0 0 /dev/vda 0 0" || { fail "dm-delay over /dev/vda"; stop_testing; }
	DM=/dev/mapper/t84
	mount $DM $M || { fail "mount $DM"; stop_testing; }
	delay() {	# delay MS: reads through the disk under the image take MS
		dms suspend --nolockfs t84 && dms load t84 <<<"0 $SECT delay /dev/vda 0 $1 /dev/vda 0 0" &&
			dms resume t84
	}
	dd if=$W/data of=$F bs=1M conv=fsync status=none
	is "$(lmq-ioctl configure $D $F 16 0)" OK "unpin race: attach with direct I/O"
	lmq_mode 0 aio
	errors0=$(lmq_stat 0 errors)
	fio --name=w --filename=$D --ioengine=libaio --direct=1 --iodepth=4 \
		--rw=randwrite --bs=4k --size=$((SZ * MB)) --time_based --runtime=600 \
		--verify=crc32c --do_verify=0 >$W/fio.out 2>&1 &
	fpid=$!
	# unpin_cycle [discard]: pin, hold a direct read of the image for a
	# second, unpin meanwhile; with "discard", discard 1 MiB as soon as the
	# device offers discard again (the unpin turns it back on at its end)
	unpin_cycle() {
		local r off= j upid rpid opid
		r=$(lmq-ioctl set-remap $D 1)
		[ "$r" = OK ] || { diag "unpin race: pin: $r"; return; }
		sleep 0.3
		delay 1000 || fail "unpin race: dm-delay of 1 s"
		dd if=$F of=/dev/null bs=4k count=1 skip=$((RANDOM % 256)) iflag=direct status=none &
		rpid=$!
		sleep 0.2
		alive $rpid && held=$((held + 1))
		if [ "${1:-}" = discard ]; then
			# opened now: an open waits for the device's mutex, which
			# the unpin holds
			off=$((RANDOM % SZ))
			rm -f $W/go
			lmq-ioctl -w $W/go discard $D $((off * MB)) $MB >$W/op.out 2>&1 &
			opid=$!
		fi
		lmq-ioctl set-remap $D 0 >$W/unpin.out 2>&1 &
		upid=$!
		if [ "${1:-}" = discard ]; then
			for ((j = 0; j < 300; j++)); do
				[ "$(cat $S/queue/discard_max_bytes)" != 0 ] && break
				sleep 0.01
			done
			touch $W/go
			wait $opid
			r=$(cat $W/op.out)
			[ "$r" = OK ] && discards=$((discards + 1)) || diag "unpin race: discard: $r"
			diag "unpin race: discard after $j polls; then the reader $(alive $rpid && echo still held || echo no longer held) the inode lock, the unpin $(alive $upid && echo still ran || echo was done)"
		fi
		wait $upid
		[ "$(cat $W/unpin.out)" = OK ] && cycles=$((cycles + 1))
		wait $rpid
		delay 0 || fail "unpin race: dm-delay back to 0"
		# the next pin needs every block of the image allocated
		[ -n "$off" ] && dd if=/dev/zero of=$D bs=1M count=1 seek=$off oflag=direct status=none
		sleep 0.3
	}
	cycles=0 held=0
	for ((i = 0; i < N; i++)); do unpin_cycle; done
	alive $fpid && pass "unpin race: fio wrote through every cycle" ||
		fail "unpin race: fio wrote through every cycle" "$(tail -n 5 $W/fio.out)"
	kill $fpid 2>/dev/null
	wait $fpid
	is "$cycles" $N "unpin race: $N pins and unpins under writes"
	is "$held" $N "unpin race: each unpin met a reader holding the image's inode lock"
	is "$(lmq_stat 0 errors)" "$errors0" "unpin race: no request failed"
	# A discard, with nothing else queued: through the file, vfs_fallocate()
	# refuses a swap file (ETXTBSY) at once, without the inode lock, so one
	# that ran before the unpin cleared the pin's protection fails for
	# certain (the writes above wait for the inode lock behind the unpin,
	# and only sometimes get there first).  In kthread mode, which runs
	# discards; idle, as the writes above are done.
	lmq_mode 0 kthread || fail "unpin race: mode kthread"
	cycles=0 held=0 discards=0
	for ((i = 0; i < 2; i++)); do unpin_cycle discard; done
	is "$cycles" 2 "unpin race: 2 more pins and unpins, a discard each"
	is "$held" 2 "unpin race: each of them met a reader holding the image's inode lock"
	is "$discards" 2 "unpin race: a discard issued once the unpin offers it again succeeds"
	is "$(lmq_stat 0 errors)" "$errors0" "unpin race: still no request failed"
	fio --name=w --filename=$D --ioengine=libaio --direct=1 --iodepth=16 \
		--rw=randwrite --bs=4k --size=$((4 * MB)) --verify=crc32c --do_verify=1 \
		--verify_fatal=1 >$W/fio2.out 2>&1
	is "$?" 0 "unpin race: fio write then verify afterwards"
	is "$(lmq-ioctl clr-fd $D)" OK "unpin race: detach"
	lmq_wait_gone $S/loop/backing_file || fail "still bound"
	umount $M
	dms remove t84 || fail "dmsetup remove"
fi
done_testing

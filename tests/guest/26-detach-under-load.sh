#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# 26-detach-under-load: detach while fio runs on the device.  As the stock
# driver does, LOOP_CLR_FD on a device that others hold open succeeds and
# only marks it LO_FLAGS_AUTOCLEAR: fio keeps running without errors, the
# device unbinds when the last opener closes.  Also: detach of a mounted
# device (autoclear on umount), module unload refused while in use and
# accepted afterwards, and a detach racing a mode switch.  Every mode.
# Parts (LMQ_PART): load (every mode, and the race with mode switches),
# rundown (the sole opener's detach).
DESCRIPTION="detach while fio runs, while mounted, and racing a mode switch: autoclear"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
}
. /tests/lib/guest.sh

W=/tmp/t26
mkdir -p $W /mnt/t26
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) S=$(lmq_sys 0)
FIO=(fio --name=load --filename=$D --rw=randrw --bs=4k --ioengine=libaio --iodepth=16
	--direct=1 --size=16M --time_based --runtime=4 --verify=crc32c --verify_backlog=64
	--output-format=terse)
bound() { [ -e $S/loop/backing_file ]; }

part load && for mode in $LMQ_MODES; do
	# 1. A holder keeps the device open across fio's own close/reopen of its
	#    files (fio closes and reopens between passes; with no other opener
	#    the autoclear would legitimately fire in that gap).
	rm -f $W/img; truncate -s 16M $W/img
	$LOSETUP $D $W/img || { fail "$mode: attach"; continue; }
	lmq_mode 0 $mode || fail "$mode: set mode"
	exec {hold}<$D
	"${FIO[@]}" >$W/fio.out 2>&1 &
	pid=$!
	sleep 1.5
	check_quiet "$mode: losetup -d while fio runs" $LOSETUP -d $D
	fl=$(lmq-ioctl get-status $D | sed -n 's/.* flags=\([0-9]*\).*/\1/p')
	[ -n "$fl" ] && [ $((fl & 4)) = 4 ] && pass "$mode: still bound, LO_FLAGS_AUTOCLEAR set (flags=$fl)" ||
		fail "$mode: after losetup -d under load: flags='$fl'"
	is "$(cat $S/loop/autoclear 2>/dev/null)" 1 "$mode: sysfs loop/autoclear"
	if lmq_is_mq && kill -0 $pid 2>/dev/null; then
		if modprobe -r $LMQ_MOD 2>/dev/null; then
			fail "$mode: module unloaded while in use"; lmq_load 1
		else pass "$mode: module unload refused while in use"; fi
	fi
	wait $pid
	rc=$?
	is "$rc" 0 "$mode: fio (verifying) finished without error after the detach"
	[ $rc = 0 ] || grep -v '^3;' $W/fio.out | tail -n 8 | sed 's/^/#   /'
	bound && pass "$mode: still bound while the holder has it open" ||
		fail "$mode: unbound although still open"
	exec {hold}<&-
	lmq_wait_gone $S/loop/backing_file 30 && pass "$mode: device unbound after the last close" ||
		fail "$mode: device still bound after the last close"
	is "$(lmq-ioctl get-status $D)" ENXIO "$mode: LOOP_GET_STATUS64 after autoclear"

	# 2. No holder: fio may see errors once its own reopen finds the device
	#    gone, or finish; either way the device ends unbound and reusable.
	rm -f $W/img; truncate -s 16M $W/img
	$LOSETUP $D $W/img || { fail "$mode: attach"; continue; }
	lmq_mode 0 $mode || fail "$mode: set mode"
	"${FIO[@]}" >$W/fio.out 2>&1 &
	pid=$!
	sleep 1.5
	check_quiet "$mode: losetup -d while fio (sole opener) runs" $LOSETUP -d $D
	wait $pid
	diag "$mode: fio exit $? ($(grep -o 'error=[^,]*' $W/fio.out | head -n 1))"
	lmq_wait_gone $S/loop/backing_file 30 && pass "$mode: unbound once fio closed it" ||
		fail "$mode: still bound after fio exited"

	# mounted: detach, keep using the filesystem, umount clears it
	rm -f $W/img; truncate -s 32M $W/img
	$LOSETUP $D $W/img && lmq_mode 0 $mode && mkfs.ext4 -q -F $D && mount $D /mnt/t26 ||
		{ fail "$mode: ext4 on the device"; continue; }
	check_quiet "$mode: losetup -d of a mounted device" $LOSETUP -d $D
	check_quiet "$mode: fio on the mounted fs after detach" fio --name=fs --directory=/mnt/t26 \
		--rw=randwrite --bs=4k --size=4M --fsync=16 --verify=crc32c --output-format=terse
	bound && pass "$mode: still bound while mounted" || fail "$mode: unbound while mounted"
	umount /mnt/t26
	lmq_wait_gone $S/loop/backing_file 30 && pass "$mode: unbound after umount" ||
		fail "$mode: still bound after umount"

done

# The sole opener's detach: from LOOP_CLR_FD until its close unbinds the
# device, it is running down and an open is refused (ENXIO), as the stock
# driver does since 6.11; an open let in would hold the unbind back.
if part rundown; then
	rm -f $W/img; truncate -s 16M $W/img
	if $LOSETUP $D $W/img; then
		kv=$(uname -r | awk -F. '{ print $1 * 100 + $2 }')
		r=$(lmq-ioctl clr-fd-reopen $D)
		if lmq_is_mq || [ "$kv" -ge 611 ]; then
			is "$r" "OK ENXIO" "LOOP_CLR_FD by the sole opener: an open before its close is refused"
		else
			diag "stock driver before 6.11 (unbinds in the ioctl): LOOP_CLR_FD, open: $r"
		fi
		lmq_wait_gone $S/loop/backing_file 30 && pass "unbound once the sole opener closed it" ||
			fail "still bound after the sole opener's LOOP_CLR_FD and close"
	else
		fail "attach for the sole opener's detach"
	fi
fi

# A detach racing mode switches (loopmq only): the switches cycle through
# every mode themselves, so this runs once, not once per mode above.
if lmq_is_mq && part load; then
	rm -f $W/img; truncate -s 16M $W/img
	if $LOSETUP $D $W/img; then
		exec {hold}<$D
		"${FIO[@]}" >$W/fio.out 2>&1 &
		pid=$!
		( for i in $(seq 12); do for m in $LMQ_MODES; do
			echo $m >$S/loopmq/mode 2>/dev/null; sleep 0.05; done; done ) &
		sw=$!
		sleep 1
		$LOSETUP -d $D
		wait $pid; rc=$?
		wait $sw
		exec {hold}<&-
		is "$rc" 0 "fio during detach + mode switches"
		lmq_wait_gone $S/loop/backing_file 30 && pass "unbound after switches" ||
			fail "still bound after detach + mode switches"
	else
		fail "attach for detach + mode switches"
	fi
fi
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
check_quiet "no $LMQ_MOD left in /proc/modules" sh -c "! grep -q '^$LMQ_MOD ' /proc/modules"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 23-partitions: partitions of the backing image appear as <dev>p1, <dev>p2
# with LO_FLAGS_PARTSCAN (losetup -P, LOOP_CONFIGURE) and with max_part=,
# carry the right data at the right offsets, and vanish on detach.  Without
# either, no partition nodes appear.  A udev-like opener of the disk that
# answers each change uevent at once (lmq-uevents, SCHED_FIFO on the
# attaching task's CPU) never sees a partition vanish and come back: one
# scan per attach, not the opener's lazy scan and then ours (the stock
# driver's race, fixed upstream in 7.1; systemd PR 41425 works around it).
DESCRIPTION="partitions appear with partscan or max_part, carry the right data, vanish on detach"
requires() {
	require_cmd lmq-ioctl lmq-stats lmq-uevents fio taskset chrt
}
. /tests/lib/guest.sh

W=/tmp/t23
mkdir -p $W
truncate -s 32M $W/img
# MBR: p1 = sectors 2048..18431 (8 MiB), p2 = 18432..51199 (16 MiB), type 83
sfdisk_mbr() {
	printf '\x80\x00\x00\x00\x83\x00\x00\x00\x00\x08\x00\x00\x00\x40\x00\x00' |
		dd of=$W/img bs=1 seek=446 conv=notrunc status=none
	printf '\x00\x00\x00\x00\x83\x00\x00\x00\x00\x48\x00\x00\x00\x80\x00\x00' |
		dd of=$W/img bs=1 seek=462 conv=notrunc status=none
	printf '\x55\xaa' | dd of=$W/img bs=1 seek=510 conv=notrunc status=none
}
sfdisk_mbr
echo P1DATA__ | dd of=$W/img bs=512 seek=2048 conv=notrunc status=none
echo P2DATA__ | dd of=$W/img bs=512 seek=18432 conv=notrunc status=none

# check NAME DEV HOW: partitions present with the right size and data
check_parts() {
	local tag=$1 d=$2 n=${2##*/}
	local i
	for ((i = 0; i < 30; i++)); do [ -b ${d}p2 ] && break; sleep 0.1; done
	check_quiet "$tag: ${d}p1 and ${d}p2 exist" test -b ${d}p1 -a -b ${d}p2
	is "$(cat /sys/block/$n/${n}p1/size 2>/dev/null)" 16384 "$tag: p1 size (sectors)"
	is "$(cat /sys/block/$n/${n}p2/size 2>/dev/null)" 32768 "$tag: p2 size (sectors)"
	is "$(head -c 8 ${d}p1 2>/dev/null)" P1DATA__ "$tag: p1 data"
	is "$(head -c 8 ${d}p2 2>/dev/null)" P2DATA__ "$tag: p2 data"
	# a write to p2 lands at the partition's offset in the image
	echo WRITTEN_ | dd of=${d}p2 bs=512 seek=1 oflag=direct conv=fsync status=none 2>/dev/null
	is "$(dd if=$W/img bs=512 skip=18433 count=1 status=none | head -c 8)" WRITTEN_ \
		"$tag: write to p2 lands at sector 18433 of the image"
}
check_gone() {
	local tag=$1 d=$2
	lmq_wait_gone ${d}p1 && lmq_wait_gone ${d}p2 && pass "$tag: partitions gone after detach" ||
		fail "$tag: ${d}p1 or ${d}p2 still there after detach"
}

# 1. no partscan, max_part=0: no partitions
lmq_load 2 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) N=$LMQ_NAME
$LOSETUP $D $W/img || fail "attach without -P"
sleep 0.5
[ ! -e ${D}p1 ] && pass "no partitions without partscan" || fail "${D}p1 exists without partscan"
is "$(cat $(lmq_sys 0)/loop/partscan)" 0 "loop/partscan is 0"
$LOSETUP -d $D

# 2. losetup -P
$LOSETUP -P $D $W/img || fail "losetup -P"
is "$(cat $(lmq_sys 0)/loop/partscan)" 1 "loop/partscan is 1 with -P"
check_parts "losetup -P" $D
$LOSETUP -d $D
check_gone "losetup -P" $D

# 3. LOOP_CONFIGURE with LO_FLAGS_PARTSCAN on device 1
sfdisk_mbr; echo P2DATA__ | dd of=$W/img bs=512 seek=18432 conv=notrunc status=none
D1=$(lmq_dev 1)
is "$(lmq-ioctl configure $D1 $W/img 8 0)" OK "LOOP_CONFIGURE with LO_FLAGS_PARTSCAN"
check_parts "LOOP_CONFIGURE partscan" $D1
is "$(lmq-ioctl clr-fd $D1)" OK "LOOP_CLR_FD"
check_gone "LOOP_CONFIGURE partscan" $D1

# 4. LOOP_SET_STATUS64 adding LO_FLAGS_PARTSCAN later rescans
echo P2DATA__ | dd of=$W/img bs=512 seek=18432 conv=notrunc status=none
$LOSETUP $D $W/img && sleep 0.3
is "$(lmq-ioctl set-status $D 0 0 8)" OK "LOOP_SET_STATUS64 sets LO_FLAGS_PARTSCAN"
check_parts "SET_STATUS64 partscan" $D
$LOSETUP -d $D
check_gone "SET_STATUS64 partscan" $D

# 5. udev-like openers racing the partition scan, CYCLES attach + detach:
# lmq-uevents opens the disk on each change uevent; lmq-openrace opens and
# closes it in a loop, so that an open waits in ->open while the attach
# holds the device, and goes on the moment it lets go
CYCLES=$((40 / (1 + 3 * LMQ_SLOW)))
if [ ! -e /proc/net/netlink ]; then
	# the debug kernel is built without CONFIG_NET: no uevents to count
	skip "partition scan racing udev-like openers" "no netlink uevents in this kernel (CONFIG_NET off)"
else
	lmq-uevents ${D##*/} 600 0 >$W/uevents &
	upid=$!
	for ((i = 0; i < 50; i++)); do grep -q ready $W/uevents && break; sleep 0.1; done
	lmq-openrace partopen $D 600 1 >$W/opener 2>&1 &
	opid=$!
	ok=0
	for ((c = 0; c < CYCLES; c++)); do
		taskset -c 0 chrt -i 0 $LOSETUP -P $D $W/img || break
		$LOSETUP -d $D || break
		# the opener's last close detaches
		for ((i = 0; i < 50; i++)); do [ -e $(lmq_sys 0)/loop ] || break; sleep 0.1; done
		ok=$((ok + 1))
	done
	is "$ok" "$CYCLES" "$CYCLES cycles of losetup -P and -d, racing the openers"
	kill -TERM $opid; wait $opid
	is "$?" 0 "the looping opener saw only expected outcomes"
	sleep 0.5
	kill -TERM $upid; wait $upid
	res=$(grep '^lmq-uevents' $W/uevents)
	diag "$res"
	like "$res" " $((2 * CYCLES)) partition add, $((2 * CYCLES)) partition remove\$" \
		"one add and one remove per partition and cycle: no partition vanished and came back"
	like "$res" "change, [1-9][0-9]* opens" "the opener opened the disk on change events"
fi
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"

# 6. max_part= without partscan flag
echo P2DATA__ | dd of=$W/img bs=512 seek=18432 conv=notrunc status=none
lmq_load 1 max_part=7 || { fail "load $LMQ_MOD max_part=7"; stop_testing; }
$LOSETUP $D $W/img || fail "attach with max_part=7"
check_parts "max_part=7" $D
$LOSETUP -d $D
check_gone "max_part=7" $D
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
# 86-detach-partitions: what a detach leaves of a device's partitions.
#
# 1. Partitions added with BLKPG (partx --add) to a device attached without
#    partition scanning are dropped by the detach, as upstream's stock
#    driver does (blktests loop/013): a reused device shows none.
# 2. A failed partition scan is reported in the stock driver's words,
#    "partition scan of <dev> failed (rc=N)", which blktests and tools grep
#    for: a scan of a device whose partition is held open fails with EBUSY.
# 3. blktests loop/010's shape: attached with partscan, blkid probing p1
#    over and over while another task detaches and attaches the image
#    again.  Opens of p1 while the device is detached fail (no partition);
#    a request fails only when an opener that found p1 just before the
#    detach dropped it opens it just after.  loopmq drops the partitions
#    first thing in the detach, which leaves that window as short as the
#    stock driver's: its failed requests (the kernel's I/O errors on the
#    device) are no more than the stock driver's in the same boot.  The
#    race is counted: the cycles and the probes of p1 that found it there
#    and that did not.
DESCRIPTION="BLKPG partitions dropped on detach; stock scan message; loop/010 errors"
requires() {
	require_cmd lmq-ioctl partx blkid
	lmq_is_mq || skip_all "loopmq's detach (the stock driver on these kernels keeps BLKPG partitions)"
}
. /tests/lib/guest.sh

W=/tmp/t86
mkdir -p $W
truncate -s 32M $W/img
# MBR: p1 = sectors 2048..18431 (8 MiB), type 83, holding an ext2 file system
printf '\x80\x00\x00\x00\x83\x00\x00\x00\x00\x08\x00\x00\x00\x40\x00\x00' |
	dd of=$W/img bs=1 seek=446 conv=notrunc status=none
printf '\x55\xaa' | dd of=$W/img bs=1 seek=510 conv=notrunc status=none
truncate -s 8M $W/p1
mkfs.ext2 -q -F $W/p1 >/dev/null 2>&1 || mkfs.ext4 -q -F $W/p1 >/dev/null
dd if=$W/p1 of=$W/img bs=512 seek=2048 conv=notrunc status=none
truncate -s 32M $W/blank

lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) N=$LMQ_NAME

# ---- 1. BLKPG partitions
is "$(lmq-ioctl configure $D $W/img 0 0)" OK "attach without partscan"
[ ! -e ${D}p1 ] && pass "no partition scanned" || fail "${D}p1 exists without partscan"
partx -a $D 2>$W/partx.err
for ((i = 0; i < 30; i++)); do [ -b ${D}p1 ] && break; sleep 0.1; done
check_quiet "partx --add makes ${D}p1" test -b ${D}p1
is "$(lmq-ioctl clr-fd $D)" OK "detach"
lmq_wait_gone /sys/block/${N}0/loop/backing_file || fail "still bound"
lmq_wait_gone /sys/block/${N}0/${N}0p1 && pass "the BLKPG partition is gone with the detach" ||
	fail "the BLKPG partition is gone with the detach" "$(ls /sys/block/${N}0)"
is "$(lmq-ioctl configure $D $W/blank 0 0)" OK "reuse the device for another image"
[ ! -e /sys/block/${N}0/${N}0p1 ] && pass "the reused device shows no partition" ||
	fail "the reused device shows a stale partition"
is "$(lmq-ioctl clr-fd $D)" OK "detach"
lmq_wait_gone /sys/block/${N}0/loop/backing_file || fail "still bound"

# ---- 2. the scan message
# the kernel log since MARK (the harness reads it too: never cleared)
# (marked with this run's own tag: the same test may have run earlier in
# this boot, and its lines must not count)
TAG=$$.$RANDOM
mark() { echo "t86 $TAG: $1" >/dev/kmsg; }
since() { dmesg | sed -n "/t86 $TAG: $1\$/,\$p"; }
is "$(lmq-ioctl configure $D $W/img 0 0)" OK "attach without partscan"
partx -a $D 2>$W/partx.err
for ((i = 0; i < 30; i++)); do [ -b ${D}p1 ] && break; sleep 0.1; done
exec 7<${D}p1
mark scan
is "$(word1 "$(lmq-ioctl set-status $D 0 0 8)")" OK "LOOP_SET_STATUS turns partscan on while p1 is open"
like "$(since scan)" "partition scan of ${N}0 failed .rc=-16." "the scan failure in the stock driver's words"
exec 7<&-
is "$(lmq-ioctl clr-fd $D)" OK "detach"
lmq_wait_gone /sys/block/${N}0/loop/backing_file || fail "still bound"

# ---- 3. loop/010: blkid on p1 while the device is detached and attached
CYCLES=40
[ "$LMQ_SLOW" = 1 ] && CYCLES=15
probe() {	# probe DEV's p1 until told to stop; count what blkid found
	local hit=0 miss=0
	while [ ! -e $W/stop ]; do
		if blkid -p ${1}p1 >/dev/null 2>&1; then hit=$((hit + 1)); else miss=$((miss + 1)); fi
	done
	echo "$hit $miss" >$W/probe.out
}
# race TAG DEV: the race on DEV; sets errs (I/O errors the kernel logged
# for DEV), after checking that every cycle ran and p1 was probed both
# attached and detached
race() {
	local tag=$1 dev=$2 ppid cycles=0 c i hit miss
	mark "race $tag"
	rm -f $W/stop
	probe $dev &
	ppid=$!
	for ((c = 0; c < CYCLES; c++)); do
		[ "$(lmq-ioctl configure $dev $W/img 8 0)" = OK ] || break
		for ((i = 0; i < 20; i++)); do [ -b ${dev}p1 ] && break; sleep 0.05; done
		sleep 0.$((RANDOM % 3))
		lmq-ioctl clr-fd $dev >/dev/null
		for ((i = 0; i < 100; i++)); do bound $dev || break; sleep 0.05; done
		bound $dev && break
		cycles=$((cycles + 1))
	done
	touch $W/stop
	wait $ppid
	read -r hit miss <$W/probe.out
	errs=$(since "race $tag" | grep -c "I/O error, dev ${dev##*/}")
	diag "loop/010 shape, $tag: $cycles cycles, blkid found p1 $hit times, not $miss times; $errs failed requests"
	is "$cycles" $CYCLES "$tag: $CYCLES detach/attach cycles"
	[ "$hit" -gt 0 ] && [ "$miss" -gt 0 ] && pass "$tag: the race was run: p1 probed both attached and detached" ||
		fail "$tag: the race was run: p1 probed both attached and detached" "hit=$hit miss=$miss"
}
# The stock driver's count in this boot is the reference where it can
# load beside loopmq.  It depends on the kernel: 20 in 40 cycles on 6.1,
# where an opener that found p1 before the detach dropped it opens it
# afterwards (it keeps its size) and reads an unbound device; 0 on 6.12
# (both measured 2026-12-06).  In replace mode, where it cannot load,
# loopmq may fail one request in 20 cycles.
stock=
if [ "$LMQ_DRIVER" = loopmq ] && modprobe loop max_loop=1 2>/dev/null && [ -b /dev/loop0 ]; then
	race "stock loop" /dev/loop0
	stock=$errs
	modprobe -r loop
fi
race loopmq $D
if [ -n "$stock" ]; then
	[ "$errs" -le "$stock" ] && pass "$errs failed requests on ${N}0, the stock driver $stock" ||
		fail "no more failed requests than the stock driver" "${N}0 $errs, stock $stock"
else
	[ "$errs" -le $((CYCLES / 20)) ] && pass "$errs failed requests on ${N}0 in $CYCLES cycles" ||
		fail "at most $((CYCLES / 20)) failed requests in $CYCLES cycles" "$errs"
fi
[ "$errs" = 0 ] || since "race loopmq" | grep "I/O error, dev ${N}0" | head -n 4 | sed 's/^/#   /'
done_testing

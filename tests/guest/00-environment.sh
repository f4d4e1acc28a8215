#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Smoke test of the guest environment that tests/README.md promises: real
# tools ahead of busybox, the scratch disk, fio's I/O engines, filesystems
# on the scratch disk, the tests/lib helpers.
# timeout: 240
DESCRIPTION="the guest environment tests/README.md promises, and the library's helpers"
. /tests/lib/guest.sh

for t in bash fio losetup blockdev fallocate mkfs.ext4 e2fsck mkfs.xfs xfs_io \
	dmsetup dd sha256sum cmp stat truncate timeout jq modprobe; do
	p=$(type -P "$t")
	if [ -n "$p" ] && [ "$(readlink -f "$p")" != /usr/bin/busybox ]; then
		pass "$t is a real program ($p)"
	else
		fail "$t is a real program" "${p:-missing}"
	fi
done
like "$(losetup --version)" 'util-linux' "losetup is util-linux"
is "$(readlink -f /bin/sh)" /usr/bin/bash "/bin/sh is bash"
check "loopmq.ko is in extra/" test -f "/lib/modules/$(uname -r)/extra/loopmq.ko"
check_fail "loopmq not loaded at start" grep -q '^loopmq ' /proc/modules
check "tests at /tests" test -r /tests/lib/guest.sh
check "/dev/vda is a block device" test -b /dev/vda
is "$(blockdev --getsize64 /dev/vda)" 2147483648 "/dev/vda is 2 GiB"
is "$(dd if=/dev/vda bs=1M count=4 2>/dev/null | tr -d '\0' | wc -c)" 0 "/dev/vda starts zeroed"
check "/dev/shm is tmpfs" bash -c 'grep -q " /dev/shm tmpfs " /proc/mounts'
check "debugfs mounted" test -d /sys/kernel/debug/block
# in replace mode the stock driver must stay out of major 7
mods="brd null_blk dm-mod dm-flakey ext4 xfs configfs"
[ "$LMQ_DRIVER" = replace ] || mods="loop $mods"
for m in $mods; do
	check "modprobe $m" modprobe "$m"
done

# fio prints notes on stdout ahead of the JSON: write the JSON to a file
for e in psync libaio io_uring; do
	qd=4
	[ $e = psync ] && qd=1
	fio --name=t --filename=/dev/vda --direct=1 --rw=randread --bs=4k --size=16M \
		--io_size=4M --ioengine=$e --iodepth=$qd --output-format=json \
		--output=/tmp/fio.json >/dev/null 2>&1
	ios=$(jq '.jobs[0].read.total_ios' /tmp/fio.json 2>/dev/null)
	is "$ios" 1024 "fio $e: 1024 direct reads of 4k from /dev/vda"
done

for fs in ext4 xfs; do
	f=$(lmq_backing "$fs" 32M)
	is "$(stat -c %s "$f" 2>/dev/null)" 33554432 "lmq_backing $fs makes a 32M file"
	check "O_DIRECT write on $fs" dd if=/dev/zero of="$f" bs=4k count=16 oflag=direct conv=notrunc status=none
done
f=$(lmq_backing tmpfs 8M)
is "$(stat -c %s "$f")" 8388608 "lmq_backing tmpfs"
is "$(lmq_backing raw 1M)" /dev/vda "lmq_backing raw is the scratch disk"
check_fail "no filesystem left mounted by raw" mountpoint -q /mnt/lmq-xfs

expect_errno ENOENT "expect_errno sees ENOENT" cat /nonexistent
expect_errno EINVAL "expect_errno sees EINVAL" blockdev --setbsz 3 /dev/vda
if lmq_load 2>/dev/null; then
	pass "lmq_load"
	check "$(lmq_dev 0) exists" test -b "$(lmq_dev 0)"
	check "lmq_unload" lmq_unload
	check_fail "$LMQ_MOD unloaded" grep -q "^$LMQ_MOD " /proc/modules
elif grep -q "^$LMQ_MOD " /proc/modules; then
	skip "lmq_load" "this $LMQ_MOD.ko has no $LMQ_CTL yet"
else
	fail "lmq_load" "modprobe $LMQ_MOD failed"
fi
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# 89-remap-pool (debug kernel: needs failslab): the remap path's clones
# come from a bio_set whose pool holds two bios.  A blocking allocation
# from it waits for a bio of the pool to end, so a task that holds
# unsubmitted bios of the pool while it allocates more could wait for
# ever once the slab fails.  Here every slab allocation of the device's
# kthread fails (failslab, task filter, make-it-fail on the kthread, also
# for allocations that may wait): it lives on the pool's two reserved
# bios.  A pinned image fragmented on purpose (32 KiB pieces) makes each
# 1 MiB request need some 32 clones.  fio writes then verifies, in
# kthread mode: every request must complete with the data right (and no
# hung task), and failslab must have failed the kthread's allocations.
DESCRIPTION="remap clones with the slab failing: the bio pool alone carries every request"
requires() {
	[ -d /sys/kernel/debug/failslab ] || skip_all "no failslab (not the debug kernel)"
	require_cmd lmq-ioctl fio xfs_io filefrag fallocate
	lmq_is_mq || skip_all "pinning is loopmq's"
}
. /tests/lib/guest.sh

FS=/sys/kernel/debug/failslab W=/tmp/t89 MB=1048576 SZ=8
mkdir -p $W
lmq_load 1 mode=kthread || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) S=$(lmq_sys 0)
# A 64 MiB RAM disk with ext4, filled up, then freed in 32 KiB holes one
# 64 KiB step apart: the image can only take the holes, an extent each
# (an allocator's preallocation keeps a file written in pieces together).
[ -b /dev/ram0 ] || modprobe brd rd_nr=1 rd_size=65536 || { fail "brd"; stop_testing; }
M=/mnt/t89 F=/mnt/t89/image
mkdir -p $M
mkfs.ext4 -q -F /dev/ram0 >/dev/null && mount /dev/ram0 $M || { fail "ext4 on /dev/ram0"; stop_testing; }
# the filler takes what is available, then 256 KiB more at a time until
# nothing more fits (xfs_io goes on after a command fails)
read -r avail bsz < <(stat -f -c '%a %S' $M)
big=$((avail * bsz / 65536 * 65536))
args=(-f -c "falloc 0 $big")
for ((off = big; off < big + 8 * MB; off += 256 * 1024)); do args+=(-c "falloc $off 256k"); done
xfs_io "${args[@]}" $M/filler >/dev/null 2>&1
[ -s $M/filler ] || { fail "filler"; stop_testing; }
args=()
for ((off = 0; off < 2 * SZ * MB + MB; off += 64 * 1024)); do
	args+=(-c "fpunch $off 32k")
done
xfs_io "${args[@]}" $M/filler && sync || { fail "holes in the filler"; stop_testing; }
dd if=/dev/urandom of=$F bs=1M count=$SZ oflag=direct status=none && sync ||
	{ fail "fragmented image"; stop_testing; }
n=$(filefrag $F | sed -n 's/.*: \([0-9]*\) extents\{0,1\} found/\1/p')
[ "${n:-0}" -ge $((SZ * 16)) ] && pass "the image has $n extents" || fail "the image has $n extents"
is "$(lmq-ioctl configure $D $F 16 0)" OK "attach with direct I/O"
is "$(lmq-ioctl set-remap $D 1)" OK "pin"
lmq_mode 0 kthread || fail "kthread mode"
kt=
for c in /proc/[0-9]*/comm; do
	read -r name <$c 2>/dev/null && [ "$name" = "${LMQ_NAME}0" ] && { kt=${c#/proc/}; kt=${kt%/comm}; break; }
done
[ -n "$kt" ] || { fail "no kthread ${LMQ_NAME}0"; stop_testing; }

echo Y >$FS/task-filter; echo N >$FS/ignore-gfp-wait; echo 0 >$FS/verbose
echo 1 >$FS/interval; echo 1000000 >$FS/times; echo 100 >$FS/probability
echo 1 >/proc/$kt/make-it-fail
timeout 300 fio --name=pool --filename=$D --ioengine=libaio --direct=1 --iodepth=8 \
	--rw=write --bs=1M --size=$((SZ * MB)) --verify=crc32c --do_verify=1 \
	--verify_fatal=1 --output-format=terse >$W/fio.out 2>&1
rc=$?
echo 0 >/proc/$kt/make-it-fail
echo 0 >$FS/probability
read -r left <$FS/times
echo -1 >$FS/times
[ "$left" -lt 1000000 ] && pass "failslab failed $((1000000 - left)) of the kthread's allocations" ||
	fail "failslab failed none of the kthread's allocations"
is "$rc" 0 "1 MiB writes over $n extents, then verify, with the kthread's slab failing"
[ $rc = 0 ] || grep -v '^3;' $W/fio.out | tail -n 5 | sed 's/^/#   /'
remap=$(lmq_stat 0 remap)
[ "${remap:-0}" -gt 0 ] && pass "requests remapped: $remap" || fail "no request was remapped"
is "$(lmq_stat 0 errors)" 0 "no request failed"
is "$(lmq-ioctl set-remap $D 0)" OK "unpin"
is "$(lmq-ioctl clr-fd $D)" OK "detach"
umount $M
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 91-reclaim-swap: swap on the device, memory reclaim as the submitter.
#
# The device (direct mode, a fully written file on ext4 with direct I/O)
# is the only swap.  A task in a cgroup v2 group with memory.high=32M
# copies 96 MiB of random data into a tmpfs: the group's reclaim swaps
# the tmpfs pages out through the device, in the copying task with
# PF_MEMALLOC set (the memcg's reclaim above memory.high), and kswapd may
# join.  memory.high, not memory.max: the kthread that takes the
# fallen-back requests works in the submitter's memory cgroup, as the
# stock driver's worker does, so what the backing allocates for them
# (with a preallocated file: the journal's extent conversions) is the
# group's too, and at a hard limit that can end in the group's OOM
# killer; over memory.high it is only reclaimed and throttled.  The file
# is written in full before the attach, so the swap writes overwrite
# blocks and allocate nothing.  A task in reclaim must
# not run the backing file system inline (it would allocate, and may wait
# on the very memory being freed): such requests fall back for reclaim
# (fb_reclaim).  Then, from outside the group, the copy is compared with
# the data: every page comes back in from the swap.  Asserted: the group
# swapped (memory.swap.current past 8 MiB after the copy),
# fb_reclaim > 0 (loopmq), the copy equals the data, no request failed,
# swapoff brings everything back and the device detaches.
DESCRIPTION="swap on the device under memcg reclaim: reclaim never runs the backing inline, data comes back"
requires() {
	require_cmd lmq-ioctl cmp mkswap swapon swapoff
	grep -qw cgroup2 /proc/filesystems || skip_all "no cgroup2 in this kernel"
	grep -q '^SwapTotal:' /proc/meminfo || skip_all "no swap in this kernel"
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

W=/tmp/t91 CG=/sys/fs/cgroup T=/mnt/t91 MB=1048576 SZ=96 MAX=32
mkdir -p $W $CG $T
mountpoint -q $CG || mount -t cgroup2 none $CG || { fail "mount cgroup2"; stop_testing; }
grep -qw memory $CG/cgroup.controllers || skip_all "no memory controller"
echo "+memory" >$CG/cgroup.subtree_control || { fail "enable memory"; stop_testing; }
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)
cleanup() {
	swapoff $D 2>/dev/null
	mountpoint -q $T && umount $T
	rmdir $CG/t91 2>/dev/null
}
trap cleanup EXIT
F=$(lmq_backing ext4 128M) || { fail "backing file"; stop_testing; }
dd if=/dev/zero of=$F bs=1M count=128 oflag=direct conv=fsync status=none || { fail "write the backing file"; stop_testing; }
head -c $((SZ * MB)) /dev/urandom >$W/data
is "$(lmq-ioctl configure $D $F 16 0)" OK "attach, direct I/O"
lmq_is_mq && { lmq_mode 0 direct || fail "direct mode"; }
mkswap $D >/dev/null 2>&1 && swapon $D || { fail "swap on $D"; stop_testing; }
pass "swap on $D"
mount -t tmpfs -o size=$(((SZ + 16) * MB)) tmpfs $T || { fail "tmpfs"; stop_testing; }
mkdir $CG/t91 || { fail "make the group"; stop_testing; }
echo $((MAX * MB)) >$CG/t91/memory.high
lmq_is_mq && echo 0 >$(lmq_sys 0)/loopmq/stats
# the copy's tmpfs pages are charged to the group, which must swap them
sh -c "echo \$\$ >$CG/t91/cgroup.procs && exec cp $W/data $T/copy"
is "$?" 0 "a task in the group copies $SZ MiB into tmpfs"
sw=$(cat $CG/t91/memory.swap.current 2>/dev/null)
diag "group: memory.swap.current $sw bytes, memory.events high $(awk '$1 == "high" { print $2 }' $CG/t91/memory.events), oom $(awk '$1 == "oom" { print $2 }' $CG/t91/memory.events)"
check "the group swapped through $D (memory.swap.current=$sw)" test "${sw:-0}" -gt $((8 * MB))
cmp -s $W/data $T/copy
is "$?" 0 "the copy equals the data (swapped back in)"
if lmq_is_mq; then
	diag "stats: $(awk '$2 > 0 { printf "%s=%s ", $1, $2 }' $(lmq_sys 0)/loopmq/stats)"
	fr=$(lmq_stat 0 fb_reclaim)
	check "requests submitted from reclaim fell back (fb_reclaim=$fr)" test "${fr:-0}" -gt 0
	is "$(lmq_stat 0 errors)" 0 "no request failed"
fi
umount $T || fail "umount tmpfs"
swapoff $D
is "$?" 0 "swapoff $D"
rmdir $CG/t91 || fail "remove the group"
is "$(lmq-ioctl clr-fd $D)" OK "detach"
done_testing

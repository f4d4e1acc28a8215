#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 87-memcg: page cache the kthread allocates for a submitter is charged to
# the submitter's memory cgroup, as with the stock driver's worker.
#
# A task in a cgroup v2 group with the io and memory controllers and a
# memory.max writes, with O_DIRECT (no page cache of its own) and O_DSYNC
# (each write FUA, so the backing's pages are written back and the
# group's reclaim can drop them: dirty ones, which the kthread's own
# dirtying does not throttle against the group, would make the group run
# out of memory, as with the stock driver), through a device in kthread
# mode whose backing I/O is buffered (a file on ext4):
# every byte of page cache it causes is the backing file's, allocated by
# the kthread.  That page cache must show in the group's memory.stat
# ("file"), and, as it exceeds memory.max, the group must hit its limit
# (memory.events "max") and stay within it.  Charged to the kthread's
# root group instead, the group's "file" stays near zero and its limit is
# never hit.  The data reads back.
DESCRIPTION="the kthread's page cache is charged to the submitter's memory cgroup"
requires() {
	require_cmd lmq-ioctl cmp
	grep -qw cgroup2 /proc/filesystems || skip_all "no cgroup2 in this kernel"
}
. /tests/lib/guest.sh

W=/tmp/t87 CG=/sys/fs/cgroup MB=1048576 SZ=96 MAX=32
mkdir -p $W $CG
mountpoint -q $CG || mount -t cgroup2 none $CG || { fail "mount cgroup2"; stop_testing; }
grep -qw memory $CG/cgroup.controllers || skip_all "no memory controller"
grep -qw io $CG/cgroup.controllers || skip_all "no io controller"
echo "+memory +io" >$CG/cgroup.subtree_control || { fail "enable memory and io"; stop_testing; }
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)
F=$(lmq_backing ext4 ${SZ}M) || { fail "backing file"; stop_testing; }
head -c $((SZ * MB)) /dev/urandom >$W/data
is "$(lmq-ioctl configure $D $F 0 0)" OK "attach with buffered backing I/O"
is "$(cat $(lmq_sys 0)/loop/dio)" 0 "direct I/O off"
lmq_mode 0 kthread || fail "kthread mode"
sync; echo 3 >/proc/sys/vm/drop_caches
mkdir $CG/t87 || { fail "make the group"; stop_testing; }
echo $((MAX * MB)) >$CG/t87/memory.max
# the writer joins the group, then writes without a page cache of its own
sh -c "echo \$\$ >$CG/t87/cgroup.procs && exec dd if=$W/data of=$D bs=1M oflag=direct,dsync status=none"
is "$?" 0 "a writer in the group writes $SZ MiB with O_DIRECT"
file=$(awk '$1 == "file" { print $2 }' $CG/t87/memory.stat)
maxev=$(awk '$1 == "max" { print $2 }' $CG/t87/memory.events)
peak=$(cat $CG/t87/memory.peak 2>/dev/null || cat $CG/t87/memory.current)
diag "group: file $file bytes, memory.events max $maxev, peak $peak"
[ "${file:-0}" -ge $((4 * MB)) ] && pass "the backing's page cache is charged to the group" ||
	fail "the backing's page cache is charged to the group" "memory.stat file=$file"
[ "${maxev:-0}" -gt 0 ] && pass "the group hit its memory.max" ||
	fail "the group hit its memory.max" "memory.events max=$maxev"
[ "$peak" -le $((MAX * MB)) ] && pass "the group stayed within memory.max" ||
	fail "the group stayed within memory.max" "peak $peak"
cmp -s <(dd if=$D bs=1M count=$SZ iflag=direct status=none) $W/data
is "$?" 0 "the data reads back"
is "$(lmq-ioctl clr-fd $D)" OK "detach"
rmdir $CG/t87 2>/dev/null
done_testing

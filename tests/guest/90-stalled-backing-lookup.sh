#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
# 90-stalled-backing-lookup: a bind that must look up a path on a file
# system that stopped answering stalls only itself.
#
# Binding walks the chain of devices under the new backing, so that a
# device never ends up under itself; a stock loop device on the way is
# followed through its backing_file path.  Here that path is on a FUSE
# file system (tests/progs/lmq-fuse) whose lookups stall on demand, as an
# NFS or FUSE server that stops answering: ext4 on a stock loop device
# whose image is the FUSE file, and loopmq bound to a file on that ext4.
# While that bind waits in the lookup, binding, using and detaching
# other loopmq devices must go on (the lookup once ran under the mutex
# every bind and unbind takes, and unbind runs from the last close, so
# even closes of unrelated devices hung); once the server answers, the
# stalled bind completes.  Each step has a time limit.
DESCRIPTION="a bind stalled in a lookup on a stalled FUSE server stalls nothing else"
requires() {
	require_cmd lmq-ioctl lmq-fuse timeout
	lmq_is_mq || skip_all "loopmq's bind"
	lmq_needs_stock_loop
	modprobe fuse 2>/dev/null
	[ -c /dev/fuse ] || skip_all "no FUSE in this kernel"
	modprobe loop max_loop=1 2>/dev/null && [ -b /dev/loop0 ] || skip_all "no stock loop driver"
}
. /tests/lib/guest.sh

W=/tmp/t90 MB=1048576
FM=/mnt/t90-fuse EM=/mnt/t90-ext4
mkdir -p $W $FM $EM
rm -f $W/stall
truncate -s 32M $W/fuse-backing
lmq-fuse $FM $W/fuse-backing $W/stall &
fpid=$!
for ((i = 0; i < 50; i++)); do [ -e $FM/img ] && break; sleep 0.1; done
check_quiet "the FUSE file system serves img" test -e $FM/img || stop_testing
lmq_load 3 || { fail "load $LMQ_MOD"; stop_testing; }
D0=$(lmq_dev 0) D1=$(lmq_dev 1) D2=$(lmq_dev 2)
is "$(word1 "$(timeout 60 lmq-ioctl set-fd /dev/loop0 $FM/img)")" OK "stock loop0 on the FUSE file"
timeout 120 mkfs.ext4 -q -F /dev/loop0 >/dev/null 2>&1 && timeout 60 mount /dev/loop0 $EM ||
	{ fail "ext4 on loop0"; stop_testing; }
truncate -s 4M $EM/inner
truncate -s 4M $W/a
truncate -s 4M $W/b
is "$(timeout 60 lmq-ioctl configure $D1 $W/a 0 0)" OK "$D1 bound to a tmpfs file before the stall"

# the stall: the bind of $D0 to a file on ext4 on loop0 follows loop0 to
# its backing_file on the FUSE file system and waits in the lookup
touch $W/stall
lmq-ioctl configure $D0 $EM/inner 0 0 >$W/bind.out 2>&1 &
bpid=$!
sleep 2
alive $bpid && pass "the bind of $D0 waits in the stalled lookup" ||
	fail "the bind of $D0 waits in the stalled lookup" "it ended: $(cat $W/bind.out)"
# within SECS CMD...: CMD's output if it ends within SECS, else "STUCK"
# (a task waiting for a mutex cannot be killed: it is left to end later)
within() {
	local secs=$1 pid i
	shift
	"$@" >$W/within.out 2>&1 &
	pid=$!
	for ((i = 0; i < secs * 10; i++)); do
		alive $pid || { wait $pid; cat $W/within.out; return; }
		sleep 0.1
	done
	echo STUCK
}
is "$(word1 "$(within 30 lmq-ioctl configure $D2 $W/b 0 0)")" OK "meanwhile $D2 binds"
is "$(word1 "$(within 30 lmq-ioctl pread $D2 0 4096)")" OK "meanwhile $D2 reads"
is "$(word1 "$(within 30 lmq-ioctl clr-fd $D2)")" OK "meanwhile $D2 detaches"
is "$(word1 "$(within 30 lmq-ioctl clr-fd $D1)")" OK "meanwhile $D1 detaches (its last close unbinds it)"
for ((i = 0; i < 100; i++)); do bound $D1 || break; sleep 0.1; done
unbound $D1 "meanwhile $D1 is unbound"
alive $bpid && pass "the bind of $D0 still waits" || fail "the bind of $D0 still waits"
rm -f $W/stall
for ((i = 0; i < 300; i++)); do alive $bpid || break; sleep 0.1; done
alive $bpid && fail "the bind of $D0 completes once the server answers" "still waiting" ||
	is "$(word1 "$(cat $W/bind.out)")" OK "the bind of $D0 completes once the server answers"
wait $bpid 2>/dev/null
is "$(word1 "$(timeout 30 lmq-ioctl clr-fd $D0)")" OK "detach $D0"
for ((i = 0; i < 100; i++)); do bound $D0 || break; sleep 0.1; done
timeout 60 umount $EM || fail "umount ext4"
timeout 60 lmq-ioctl clr-fd /dev/loop0 >/dev/null
for ((i = 0; i < 50; i++)); do [ -e /sys/block/loop0/loop/backing_file ] || break; sleep 0.1; done
timeout 60 umount $FM || fail "umount the FUSE file system"
wait $fpid
modprobe -r loop 2>/dev/null
done_testing

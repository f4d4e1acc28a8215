#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 19-stack-usage: measure the stack that an inline call into each backing
# (a file on ext4, on xfs, the raw device; direct I/O and buffered) takes,
# with loopmq's stack probe, and check that the default stack_reserve
# covers it: a request is only run inline when at least stack_reserve
# bytes are left, so every measured call must need less than that.
# Prints one "stack:" line per backing for the closing notes.
# timeout: 400
DESCRIPTION="the stack an inline call takes stays below stack_reserve"
requires() {
	lmq_is_mq || skip_all "loopmq only: the stack probe"
	require_cmd fio losetup
	# loopmq ignores stack_probe under KASAN (its redzones inflate every frame)
	grep -q ' kasan_report$' /proc/kallsyms &&
		skip_all "stack probe is off on KASAN kernels"
}
. /tests/lib/guest.sh

check "load loopmq with the stack probe" lmq_load stack_probe=1
reserve=$(cat /sys/module/loopmq/parameters/stack_reserve)
diag "stack_reserve $reserve"

# run BACKING DIO MODE: small random writes with fsync, then reads
run() {
	local backing=$1 dio=$2 mode=$3 f dev st used entry tsz
	f=$(lmq_backing "$backing" 64M) || { fail "$backing: backing"; return; }
	dev=$(lmq_dev 0)
	losetup --direct-io="$dio" "$dev" "$f" ||
		{ fail "$backing dio=$dio: attach"; return; }
	echo "$mode" >/sys/block/${dev#/dev/}/loopmq/mode
	echo 0 >/sys/block/${dev#/dev/}/loopmq/stats
	fio --name=st --filename="$dev" --direct=1 --rw=randrw --bsrange=4k-128k \
	    --ioengine=psync --size=16M --io_size=24M --fsync=8 --thread \
	    --output=/dev/null --eta=never ||
		fail "$backing dio=$dio $mode: fio"
	st=$(cat /sys/block/${dev#/dev/}/loopmq/stack)
	used=$(awk '$1 == "used_max" { print $2 }' <<<"$st")
	entry=$(awk '$1 == "entry_max" { print $2 }' <<<"$st")
	tsz=$(awk '$1 == "thread_size" { print $2 }' <<<"$st")
	echo "stack: $(uname -r) backing=$backing dio=$dio mode=$mode used_max=$used entry_max=$entry thread_size=$tsz"
	check "$backing dio=$dio $mode: the probe saw inline calls" test "$used" -gt 0
	check "$backing dio=$dio $mode: needs less than stack_reserve ($used < $reserve)" \
		test "$used" -lt "$reserve"
	losetup -d "$dev"
}

for mode in direct aio; do
	run ext4 on $mode
	run ext4 off $mode
	run xfs on $mode
	run xfs off $mode
	run raw on $mode
done

# The guard itself: with stack_reserve at the whole stack no call has that
# much left, so nothing may run inline; every request the submitter would
# have run falls back for the stack (fb_stack) and goes to the kthread
P=/sys/module/loopmq/parameters/stack_reserve
tsz=$(awk '$1 == "thread_size" { print $2 }' /sys/block/${LMQ_NAME}0/loopmq/stack)
f=$(lmq_backing ext4 64M) && losetup --direct-io=on $(lmq_dev 0) "$f" ||
	{ fail "stack guard: attach"; stop_testing; }
echo direct >$(lmq_sys 0)/loopmq/mode
echo 0 >$(lmq_sys 0)/loopmq/stats
if echo "$tsz" >$P; then
	fio --name=sg --filename=$(lmq_dev 0) --direct=1 --rw=randrw --bs=4k --ioengine=psync \
	    --size=4M --io_size=2M --output=/dev/null --eta=never || fail "stack guard: fio"
	echo "$reserve" >$P
	is "$(lmq_stat 0 inline)" 0 "stack_reserve=$tsz (the whole stack): nothing ran inline"
	fbs=$(lmq_stat 0 fb_stack)
	check "stack_reserve=$tsz: the requests fell back for the stack (fb_stack=$fbs)" \
		test "${fbs:-0}" -gt 0
else
	fail "stack_reserve=$tsz refused"
fi
is "$(cat $P)" "$reserve" "stack_reserve restored"
losetup -d $(lmq_dev 0)
lmq_cleanup
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# boot: preempt=full
# 71-remove-open-race: LOOP_CTL_REMOVE racing opens of the same unbound device
# (udev's blkid opening a device while a tool removes it).  A remover
# thread removes and re-adds the device; an opener opens it, asks
# LOOP_GET_STATUS64 / BLKGETSIZE64 / BLKGETDISKSEQ and closes.  The remove
# that checks for openers after ->open returned but before the block layer
# counted the opener (blkdev_get_whole) removes the device under that open:
# legal (stock loop allows it too), but the opener still calls ->ioctl and
# ->release, so the device must not be freed before its disk is (loopmq
# freed it in LOOP_CTL_REMOVE: use-after-free, KASAN on the debug kernel;
# on the other kernels the freed memory is usually the next device's, and
# LOOP_SET_FD on the stale descriptor bound or crashed that one).  Such a
# stale descriptor must answer LOOP_GET_STATUS64 with ENXIO and refuse
# LOOP_SET_FD.  lmq-openrace remove times each remove against each open
# and adapts the delay to land in that window (see its comment).  The
# window is a few dozen instructions wide:
#  - where the kernel preempts fully (boot with preempt=full: the Debian
#    kernels are PREEMPT_DYNAMIC), the remover is a SCHED_FIFO thread on
#    the opener's CPU that a timer wakes in the middle of the open; it hits
#    the window every 3-4 s under TCG.  (Switching the preemption model at
#    run time is no option: under TCG the static-call patching it does
#    crashes the guest now and then, int3 oopses in irqentry_exit.)
#  - otherwise (voluntary preemption: the Debian kernels' default, the
#    debug kernel) nothing can preempt the opener inside the window, and
#    the remover, spinning on the other virtual CPU, hits it only when both
#    happen to run at once: about once in 1000 rounds, ~25 s on 6.12 and
#    ~100 s on the debug kernel under TCG on a shared host.
#  The harness boots this test with preempt=full ("# boot:" above), and
#  then the storm runs until the window was hit HITS times (10; the free
#  opener's storm 2), with a cap of 150 s; fewer hits fail the test.  The
#  debug kernel is built without PREEMPT_DYNAMIC and ignores preempt=full:
#  there the storm runs 90 s (6 s with the free opener) and its hits are
#  reported, not required.
#  - opens of a device that is gone run request_module("block-major-..")
#    (CONFIG_BLOCK_LEGACY_AUTOLOAD), a modprobe of ~1 s under TCG: during
#    the storm the kernel's modprobe is /bin/true (restored at the end).
# Then a shorter storm with a second opener running freely.  Only
# documented errnos; afterwards the index can be added and removed again,
# device 0 attaches, the module unloads.
DESCRIPTION="LOOP_CTL_REMOVE racing opens of the same unbound device"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	command -v lmq-openrace >/dev/null || skip_all "lmq-openrace not installed"
}
. /tests/lib/guest.sh

W=/tmp/t71
mkdir -p $W
PRE=/sys/kernel/debug/sched/preempt
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
full=
grep -q '(full)' $PRE 2>/dev/null && full=1
if [ -n "$full" ]; then
	T=150 T2=150 HITS=10 HITS2=2
elif [ "$LMQ_SLOW" = 1 ]; then	# debug kernel: see above
	T=${RACE_SECONDS:-45} T2=4 HITS=0 HITS2=0
else
	T=${RACE_SECONDS:-30} T2=6 HITS=0 HITS2=0
fi
IDX=5
modprobe_was=$(cat /proc/sys/kernel/modprobe)
restore() { echo "$modprobe_was" >/proc/sys/kernel/modprobe; }
trap restore EXIT
trap 'restore; exit 1' INT TERM
echo /bin/true >/proc/sys/kernel/modprobe
diag "preemption: $(cat $PRE 2>/dev/null || echo 'not switchable (no PREEMPT_DYNAMIC)')"

lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
exec 7<$LMQ_CTL		# holds the module

# storm TAG DESC SECONDS OPENERS HITS: run lmq-openrace remove until the
# window was hit HITS times (SECONDS the cap), or for SECONDS with HITS 0
storm() {
	local rc rm_ok open_ok stale secs
	LMQ_OPENRACE_HITS=$5 lmq-openrace remove $LMQ_CTL $LMQ_PREFIX $IDX $3 $4 >$W/out.$1 2>$W/err.$1 &
	wait $!
	rc=$?
	while read -r l; do diag "$l"; done <$W/out.$1
	[ -s $W/err.$1 ] && head -n 12 $W/err.$1 | sed 's/^/#   /'
	is "$rc" 0 "$2 ($4 opener(s)): only expected errnos, no removed device usable"
	rm_ok=$(sed -n 's/^lmq-openrace remove: LOOP_CTL_REMOVE ok=\([0-9]*\).*/\1/p' $W/out.$1)
	open_ok=$(sed -n 's/^lmq-openrace remove: open ok=\([0-9]*\).*/\1/p' $W/out.$1)
	stale=$(sed -n 's/^lmq-openrace remove: .* stale=\([0-9]*\).*/\1/p' $W/out.$1)
	secs=$(sed -n 's/^lmq-openrace remove: \([0-9.]*\) s, stale=.*/\1/p' $W/out.$1)
	[ "${rm_ok:-0}" -ge 1 ] && [ "${open_ok:-0}" -ge 1 ] &&
		pass "$2: $rm_ok removes, $open_ok opens" ||
		fail "$2: removes and opens happened" "'${rm_ok:-}' removes, '${open_ok:-}' opens"
	if [ "$5" -gt 0 ]; then
		[ "${stale:-0}" -ge "$5" ] &&
			pass "$2: the window was hit $stale times in $secs s (a device removed under its opener)" ||
			fail "$2: the window was hit $5 times" "only '${stale:-}' in $secs s (cap $3 s)"
	else
		diag "$2: the window was hit ${stale:-?} times in $secs s (not required: preemption is not full)"
	fi
}
storm sync "remove/open storm" $T 1 $HITS
storm free "remove/open storm, free opener" $T2 2 $HITS2
restore

check_quiet "$LMQ_PREFIX$IDX is gone after the storm" lmq_wait_gone /sys/block/$LMQ_NAME$IDX 30
is "$(lmq-ioctl ctl-add $LMQ_CTL $IDX)" OK "LOOP_CTL_ADD $IDX after the storm"
is "$(lmq-ioctl ctl-remove $LMQ_CTL $IDX)" OK "LOOP_CTL_REMOVE $IDX after the storm"
truncate -s 4M $W/f
D=$(lmq_dev 0)
is "$(lmq-ioctl set-fd $D $W/f)$(lmq-ioctl clr-fd $D)" OKOK "$D attaches and detaches"
exec 7<&-
lmq_wait_gone $(lmq_sys 0)/loop/backing_file 50
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

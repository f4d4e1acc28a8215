#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# 75-dirty-throttle: sustained buffered writes to a file system on the
# device, over a buffered backing file, keep making progress under tight
# dirty limits (vm.dirty_bytes 4 MiB, vm.dirty_background_bytes 1 MiB).
#
# The dirty pages of the backing file are how the upper file system's
# dirty pages get cleaned.  balance_dirty_pages() counts pages under
# writeback too, and the upper file system's pages in flight to the device
# (up to the queue depth of requests waiting for the kthread) can alone
# exceed the global limit; a task writing the backing file and throttled
# against the global limit then waits for pages only it can clean.  The
# stock driver's worker runs with PF_LOCAL_THROTTLE (throttled against the
# backing device's own writeback only), and loopmq's kthread and inline
# calls must too.
#
# Stack: vda: ext4 -> sparse 256 MiB image -> the device, direct I/O off
# -> ext4, made afresh for every mode, so that every mode starts alike.
# In every mode (the debug kernel: direct and kthread, 4 MiB per writer):
# four dd write 32 MiB each (conv=fsync) while a reader re-reads an 8 MiB
# file with O_DIRECT.
# Four writers, not one: more of the upper file system's pages are then
# under writeback at once, which is what fills the global limit.
# Asserted:
# - progress: every 5 s (10 s on the debug kernel) the writers' wchar plus
#   the device's completed write sectors grow by at least 1 MiB (a crawl
#   counts as a stall: unthrottled, the 4 x 32 MiB take under 5 s, so
#   a writer held to less than 200 KiB/s is stuck, not slow); 3 intervals
#   in a row below that is a stall (then the dirty limits are lifted,
#   which ends the throttling, so the test can go on and clean up);
# - the writers finish (exit 0) and so does the reader, without errors;
# - no hung task: kernel.hung_task_timeout_secs is lowered to 45 s for the
#   test (not on the debug kernel), so a task stuck in D state panics the
#   guest within the test's time.
# Diagnostics: throughput, and how many 1 s samples found a driver thread
# (kthread or queue_rq) inside balance_dirty_pages.
# All sysctls are restored at the end.
#
# The old code (5a6ccec, no PF_LOCAL_THROTTLE), on 6.12: in direct mode,
# with one 64 MiB writer, a stall twice out of two after 7-11 MiB:
# nr_dirty + nr_writeback = the 4 MiB limit, the kthread (taking the upper
# journal's writes) sleeps in balance_dirty_pages holding the image's
# i_rwsem, the flusher runs writeback inline from queue_rq and sleeps in
# ext4_buffered_write_iter (the top frame: by all appearances on that
# i_rwsem), the writer is throttled: no progress until the limits are
# lifted.  One writer did not stall kthread mode, whose kthread sat in
# balance_dirty_pages in 5 of 5 and 7 of 8 samples (64 MiB in 8 and 12 s;
# the fixed code: 0 of 1, 3 s); with four writers kthread mode stalled
# too, after 2 MiB: nr_writeback 3340 KiB + nr_dirty 996 KiB, the kthread
# alone in balance_dirty_pages, the pure case.
DESCRIPTION="writers over tight dirty limits make progress in every mode"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

debug=$LMQ_SLOW
NWR=4 W=32 IVL=5 MODES=$LMQ_MODES
# the debug kernel: smaller writes, and only direct and kthread mode (over
# buffered ext4, aio and auto send writes to the kthread too)
if [ $debug = 1 ]; then
	W=4 IVL=10
	lmq_is_mq && MODES="direct kthread"
fi
M=/mnt/t75
mkdir -p $M/low $M/up
VM=/proc/sys/vm HT=/proc/sys/kernel/hung_task_timeout_secs
o_db=$(cat $VM/dirty_bytes) o_dr=$(cat $VM/dirty_ratio)
o_dbb=$(cat $VM/dirty_background_bytes) o_dbr=$(cat $VM/dirty_background_ratio)
o_ht=$(cat $HT 2>/dev/null)
# dirty_bytes and dirty_ratio exclude each other: writing one zeroes the other
limits_default() {
	if [ "$o_db" != 0 ]; then echo $o_db >$VM/dirty_bytes; else echo $o_dr >$VM/dirty_ratio; fi
	if [ "$o_dbb" != 0 ]; then echo $o_dbb >$VM/dirty_background_bytes
	else echo $o_dbr >$VM/dirty_background_ratio; fi
}
limits_tight() {
	echo $((4 << 20)) >$VM/dirty_bytes && echo $((1 << 20)) >$VM/dirty_background_bytes
}
restore() {
	limits_default
	[ -n "$o_ht" ] && echo $o_ht >$HT
	rm -f /tmp/t75.stop
}
trap restore EXIT
[ $debug = 0 ] && [ -n "$o_ht" ] && echo 45 >$HT

lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)
low() { mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/vda 1G && mount /dev/vda $M/low; }
check_quiet "ext4 on vda" low || stop_testing
# per mode, a fresh sparse image, so that every mode starts alike: the
# backing file system allocates as it goes, and the upper one is new
up() {	# up MODE
	truncate -s 256M $M/low/img &&
		$LOSETUP --direct-io=off $D $M/low/img && lmq_mode 0 $1 &&
		[ "$(cat $(lmq_sys 0)/loop/dio)" = 0 ] &&
		mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 $D && mount $D $M/up &&
		dd if=/dev/urandom of=$M/up/rfile bs=1M count=8 conv=fsync status=none
}
down() {
	umount $M/up && $LOSETUP -d $D && lmq_wait_gone "$(lmq_sys 0)/loop/backing_file" &&
		rm $M/low/img
}

wchar() { local k v; while read -r k v; do [ "$k" = wchar: ] && { echo $v; return; }; done </proc/$1/io; echo 0; } 2>/dev/null
devw() { local a; read -r -a a <$(lmq_sys 0)/stat; echo $((a[6] * 512)); }
# driver threads (our kthread, or a task in our queue_rq) in balance_dirty_pages
in_bdp() {
	grep -H '' /proc/[0-9]*/task/[0-9]*/stack 2>/dev/null | awk -v d="${LMQ_NAME}_" '
	{ i = index($0, ":"); n = substr($0, 1, i - 1) }
	n != f { if (b && l) c++; f = n; b = l = 0 }
	/balance_dirty_pages/ { b = 1 }
	index($0, "] " d) { l = 1 }
	END { if (b && l) c++; print c + 0 }'
}
vmstat() { awk '$1 == "nr_dirty" || $1 == "nr_writeback" { printf "%s %d KiB ", $1, $2 * 4 }' /proc/vmstat; }

any_alive() { local p; for p; do alive $p && return 0; done; return 1; }
MINPROG=$((1 << 20))	# bytes per interval below which an interval counts as stalled
# progress: PROG = what the writers have written (their wchar, the last
# value read while they lived) plus what the device has completed
progress() {
	local i v sum=0
	for ((i = 0; i < NWR; i++)); do
		v=$(wchar ${WP[i]})
		[ "$v" -gt "${WC[i]:-0}" ] && WC[i]=$v
		sum=$((sum + ${WC[i]:-0}))
	done
	PROG=$((sum + $(devw)))
}

for mode in $MODES; do
	check_quiet "$mode: ext4 on $LMQ_NAME""0 (direct I/O off) on a fresh sparse image" up $mode || break
	sync
	lmq_is_mq && echo 0 >$(lmq_sys 0)/loopmq/stats
	limits_tight || fail "$mode: set dirty limits"
	rm -f /tmp/t75.stop
	( n=0; while [ ! -e /tmp/t75.stop ]; do
		dd if=$M/up/rfile of=/dev/null bs=256k iflag=direct status=none || exit 1
		n=$((n + 1)); echo $n >/tmp/t75.reads
	done ) &
	rpid=$!
	t0=$SECONDS WP=() WC=()
	for ((i = 0; i < NWR; i++)); do
		dd if=/dev/zero of=$M/up/wfile$i bs=1M count=$W conv=fsync status=none &
		WP[i]=$!
	done
	progress
	last=$PROG zero=0 stall=0 bdp=0 samples=0 prog=()
	while any_alive "${WP[@]}"; do
		for ((k = 0; k < IVL; k++)); do
			sleep 1
			any_alive "${WP[@]}" || break
			bdp=$((bdp + $(in_bdp))) samples=$((samples + 1))
		done
		any_alive "${WP[@]}" || break
		progress
		now=$PROG
		prog+=($(((now - last) >> 10)))
		if [ $((now - last)) -ge $MINPROG ]; then zero=0; else zero=$((zero + 1)); fi
		last=$now
		if [ $zero -ge 3 ] && [ $stall = 0 ]; then
			stall=1
			diag "$mode: stalled: $(vmstat)"
			for t in /proc/[0-9]*; do
				grep -q "${LMQ_NAME}_\|balance_dirty" $t/stack 2>/dev/null || continue
				diag "  $(cat $t/comm): $(sed 's/^\[<[0-9a-f]*>\] //; s/+0x.*//' $t/stack | tr '\n' '<' | cut -c1-240)"
			done
			limits_default	# lift the limits: the throttled tasks run again
		fi
		[ $((SECONDS - t0)) -gt 600 ] && break
	done
	secs=$((SECONDS - t0))
	diag "$mode: KiB of progress per ${IVL} s: ${prog[*]}"
	diag "$mode: $NWR x $W MiB in $secs s; driver threads in balance_dirty_pages in $bdp of $samples samples"
	[ $stall = 0 ] && pass "$mode: the writers never stalled (3 x $IVL s under $((MINPROG >> 10)) KiB each)" ||
		fail "$mode: the writers never stalled" "under $((MINPROG >> 10)) KiB of progress in each of 3 x $IVL s"
	for ((i = 0; i < NWR; i++)); do
		for ((k = 0; k < 1200; k++)); do alive ${WP[i]} || break; sleep 0.1; done
		if alive ${WP[i]}; then
			fail "$mode: writer $i finishes" "still running"
			kill -9 ${WP[i]}
		else
			wait ${WP[i]}
			is "$?" 0 "$mode: writer $i finishes ($W MiB, fsync)"
		fi
	done
	touch /tmp/t75.stop
	for ((k = 0; k < 600; k++)); do alive $rpid || break; sleep 0.1; done
	if alive $rpid; then
		fail "$mode: the reader finishes" "still running"
		kill -9 $rpid
	else
		wait $rpid
		is "$?" 0 "$mode: the reader finishes without errors ($(cat /tmp/t75.reads 2>/dev/null || echo 0) passes)"
	fi
	limits_default
	lmq_is_mq && { diag "$mode stats: $(tr '\n' ' ' <$(lmq_sys 0)/loopmq/stats)"
		is "$(lmq_stat 0 errors)" 0 "$mode: no errors counted"; }
	check_quiet "$mode: unmount, detach" down || break
done
umount $M/low
is "$?" 0 "tear down"
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# 73-detach-inflight-aio: LOOP_CHANGE_FD and detach while async direct I/O to
# the backing file is in flight.  Backing: image files on ext4 on the
# scratch disk, direct I/O on, dispatch modes aio and auto (the stock
# driver: its own).  Per mode:
#  1. read-only device, fio libaio randread iodepth 32 on it; meanwhile
#     LOOP_CHANGE_FD back and forth between two identical images, each
#     opened just for the call, so that the device holds the only reference
#     to the file it drops, and a checked O_DIRECT read after every change.
#     Then losetup -d while fio still runs: fio holds the device open, so
#     the detach waits for fio's close and fio must see no error at all.
#  2. the aio reader is the device's only opener: LOOP_CONFIGURE, 32 async
#     reads in flight, LOOP_CLR_FD through the same descriptor, reads go on
#     for a while, close; again and again.  Reads may return good data, 0
#     (a device of size 0 after the detach) or EIO (a detached device, or
#     stock loop's refusal while it runs down), never wrong data; after the
#     close the device is unbound within 5 s.
# The lower file system may still touch the kiocb after returning
# -EIOCBQUEUED (6.1's and 6.12's ext4_dio_read_iter calls
# file_accessed(iocb->ki_filp) after iomap_dio_rw returned), while the
# request completes, its tag is reused or the file is dropped by the change
# or the detach.  Parts 1 and 2 stress those paths; what a reused kiocb
# does is not visible there (valid memory; a file freed after an RCU grace
# period, or into a SLAB_TYPESAFE_BY_RCU cache).  So part 3 watches the
# window itself, with kprobes (loopmq, kernels with kprobe events; the
# debug kernel has none and skips it):
#  3. fio randread on the device, on ext4_file_read_iter's entry and
#     return, loopmq_aio_complete (the kiocb's completion) and
#     loopmq_kiocb_done (the request's end); per mode, until the window
#     was hit WIN73 times (default 3 on 6.1, at most 60 s; on 6.12, which
#     was never seen to hit it, 10 s and no count required): a kiocb
#     completed while the ext4_file_read_iter that queued it had not yet
#     returned.  Asserted: it was hit (6.1), and no request ended while
#     the call that queued its kiocb was still running (the submitter's
#     reference holds the end back).
DESCRIPTION="LOOP_CHANGE_FD and detach with aio requests in flight"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	command -v lmq-openrace >/dev/null || skip_all "lmq-openrace not installed"
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

W=/tmp/t73 M=/mnt/t73
if [ "$LMQ_SLOW" = 1 ]; then	# debug kernel: ~10x slower
	T=${RACE_SECONDS:-4} SZ=32
else
	T=${RACE_SECONDS:-8} SZ=64
fi
mkdir -p $W $M
mkfs.ext4 -q -F /dev/vda >/dev/null && mount /dev/vda $M || { fail "ext4 on /dev/vda"; stop_testing; }
lmq-openrace mkimg $M/a $SZ && cp $M/a $M/b && sync || { fail "images"; stop_testing; }
# lockdep kernels: let the inline (queue_rq) submissions be checked too,
# where the module has the switch (no upper file system here to confuse it)
lp=
lmq_is_mq && modinfo -p loopmq 2>/dev/null | grep -q '^lockdep_guard:' && lp=lockdep_guard=0
lmq_load 1 $lp || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) S=$(lmq_sys 0)
if lmq_is_mq; then MODES=${LMQ73_MODES:-aio auto}; else MODES=stock; fi

# parts: stress (1 and 2), window (3)
if part stress; then
for mode in $MODES; do
	# 1. LOOP_CHANGE_FD and a deferred detach under fio
	is "$(lmq-ioctl -r configure $D ro:$M/a 17 0)" OK "$mode: attach read-only, direct I/O"
	lmq_mode 0 $mode || fail "$mode: set mode"
	is "$(cat $S/loop/dio 2>/dev/null)" 1 "$mode: loop/dio"
	fio --name=aio --filename=$D --readonly --rw=randread --bs=4k --ioengine=libaio \
		--iodepth=32 --direct=1 --time_based --runtime=$((T + 3)) \
		--output=$W/fio.out --output-format=terse >$W/fio.err 2>&1 &
	fpid=$!
	sleep 1
	lmq-openrace changefd $D $M/a $M/b $T >$W/cf 2>&1
	rc=$?
	while read -r l; do diag "$l"; done <$W/cf
	n=$(sed -n 's/.* \([0-9]*\) changes.*/\1/p' $W/cf)
	is "$rc" 0 "$mode: LOOP_CHANGE_FD under fio: every change and every checked read OK"
	[ "${n:-0}" -ge 3 ] && pass "$mode: $n changes" || fail "$mode: only '${n:-}' changes"
	lmq_is_mq && diag "$mode: $(awk '$2 > 0 && $1 !~ /^fb_/ { printf "%s=%s ", $1, $2 }' $S/loopmq/stats)"
	check_quiet "$mode: losetup -d while fio runs" $LOSETUP -d $D
	wait $fpid
	rc=$?
	is "$rc" 0 "$mode: fio saw no error (the detach waited for its close)"
	[ $rc = 0 ] || { tail -n 5 $W/fio.err; cut -c1-200 $W/fio.out | tail -n 3; } | sed 's/^/#   /'
	check_quiet "$mode: unbound once fio closed it" lmq_wait_gone $S/loop/backing_file 50

	# 2. detach through the only opener's descriptor with reads in flight
	if lmq_is_mq; then
		# the mode stays across binds; aiodetach binds by itself
		is "$(cat $S/loopmq/mode)" $mode "$mode: mode kept while unbound"
	fi
	lmq-openrace aiodetach $D $M/a $T 32 >$W/ad 2>&1
	rc=$?
	while read -r l; do diag "$l"; done <$W/ad
	n=$(sed -n 's/.*, \([0-9]*\) cycles.*/\1/p' $W/ad)
	is "$rc" 0 "$mode: detach/reattach under aio: only good data, EOF or EIO"
	[ "${n:-0}" -ge 2 ] && pass "$mode: $n detach cycles" || fail "$mode: only '${n:-}' detach cycles"
	check_quiet "$mode: unbound at the end" lmq_wait_gone $S/loop/backing_file 50
done
fi

# 3. the window, watched (see the header)
if part window; then
TR=/sys/kernel/tracing
[ -e $TR/kprobe_events ] || mount -t tracefs nodev $TR 2>/dev/null
probes() {	# set the four probes up (0) or fail
	echo >$TR/kprobe_events 2>/dev/null
	echo 'p:lmq73/rd ext4_file_read_iter iocb=%di:x64' >>$TR/kprobe_events &&
		echo 'r:lmq73/rdret ext4_file_read_iter ret=$retval:s64' >>$TR/kprobe_events &&
		echo "p:lmq73/cb $LMQ_MOD:loopmq_aio_complete iocb=%di:x64" >>$TR/kprobe_events &&
		echo "p:lmq73/done $LMQ_MOD:loopmq_kiocb_done rq=%si:x64 async=%cx:u8" >>$TR/kprobe_events
}
# window: from a trace, "HITS ENDS-INSIDE COMPLETIONS": kiocbs completed
# inside the read_iter call that queued them, and of those, the ones
# whose request ended right there (the event after a completion on its
# CPU is the request's end, async=1, when the completion finishes it)
window() {
	awk '
	function val(k,   i) { for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
	{
		pid = $1; cpu = $2
		if ($0 ~ / rd: /) { it = val("iocb"); top[pid] = it; open[it] = 1 }
		else if ($0 ~ / rdret: /) { if (pid in top) { delete open[top[pid]]; delete top[pid] } }
		else if ($0 ~ / done: /) { if (win[cpu] && val("async") == 1) bad++ }
		win[cpu] = 0
		if ($0 ~ / cb: /) { ncb++; if (val("iocb") in open) { hits++; win[cpu] = 1 } }
	}
	END { print hits + 0, bad + 0, ncb + 0 }' "$@"
}
if ! lmq_is_mq; then
	diag "3: the stock driver: no probes of loopmq's functions"
elif [ ! -e $TR/kprobe_events ]; then
	skip "3: the kiocb window" "no kprobe events in $(uname -r)"
elif ! probes; then
	fail "3: kprobes on ext4_file_read_iter, $LMQ_MOD:loopmq_aio_complete, loopmq_kiocb_done"
else
	echo global >$TR/trace_clock
	echo 8192 >$TR/buffer_size_kb
	# 6.1 hits the window about once per 3000 completions; 6.12 did
	# not once in 300000 (60 s per mode, on 2026-12-06): there the
	# hits are reported, not required, and the watch lasts 10 s
	if [ "$(uname -r | cut -d. -f1-2)" = 6.1 ]; then want=3 cap=60; else want=0 cap=10; fi
	WANT=${WIN73:-$want}
	for mode in $MODES; do
		is "$(lmq-ioctl -r configure $D ro:$M/a 17 0)" OK "3 $mode: attach read-only, direct I/O"
		lmq_mode 0 $mode || fail "3 $mode: set mode"
		hits=0 bad=0 ncb=0 t=0
		while { [ $hits -lt $WANT ] || [ $WANT = 0 ]; } && [ $t -lt $cap ]; do
			echo >$TR/trace
			echo 1 >$TR/events/lmq73/enable
			fio --name=w --filename=$D --readonly --rw=randread --bs=4k --ioengine=libaio \
				--iodepth=32 --direct=1 --time_based --runtime=2 \
				--output-format=terse >$W/fio3.out 2>&1 || fail "3 $mode: fio"
			echo 0 >$TR/events/lmq73/enable
			read -r h b c < <(window $TR/trace)
			hits=$((hits + h)) bad=$((bad + b)) ncb=$((ncb + c)) t=$((t + 2))
			[ "$b" -gt 0 ] && break
		done
		diag "3 $mode: $ncb kiocb completions in ${t} s of fio, $hits inside the read_iter call that queued them"
		# what went wrong first: a request that ended in the window
		# stops the watch, before the hits it asks for
		is "$bad" 0 "3 $mode: no request ended while the call that queued its kiocb still ran"
		if [ $WANT -gt 0 ]; then
			check "3 $mode: the window was hit ($hits of $WANT times; a kiocb completed before ext4_file_read_iter returned)" \
				[ $hits -ge $WANT ]
		fi
		is "$(lmq-ioctl clr-fd $D)" OK "3 $mode: detach"
		lmq_wait_gone $S/loop/backing_file 50 || fail "3 $mode: still bound"
	done
	echo >$TR/kprobe_events
fi
fi

cmp -s $M/a $M/b && pass "images unchanged" || fail "images differ"
umount $M || fail "umount"
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

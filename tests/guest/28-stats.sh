#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# 28-stats: the per-path counters account for every request.  In each fixed
# mode, N O_DIRECT reads and writes issued one at a time by dd (no merging,
# no splitting) and a fio libaio run are counted from /sys/block/<dev>/stat
# (requests the driver completed) and must equal
# inline + aio_inline + aio_async + kthread, in sysfs and in LOOPMQ_GET_STATS
# alike.  A mode's own path must carry the requests: direct -> inline,
# kthread -> kthread, aio -> aio_* unless a fallback sent them to the
# kthread; every fallback is a kthread request.  In direct mode dd's reads
# run inline; on 6.1 its writes sit in the plug blkdev_write_iter() holds,
# which schedule() flushes to kblockd, and a request dispatched from a worker
# may not block there: it takes NOWAIT aio (the backing is a dio file) or,
# if that would block, the kthread (fb_worker or fb_eagain).  So
# inline + aio + kthread = 2N and the kthread ran only counted fallbacks.  Against the stock loop
# driver only the counting method (stat deltas vs dd/fio counts) is checked.
DESCRIPTION="the per-path counters account for every request"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

mkfs.ext4 -q -F /dev/vda && mkdir -p /mnt/t28 && mount /dev/vda /mnt/t28 || { fail "ext4"; stop_testing; }
F=/mnt/t28/img
dd if=/dev/urandom of=$F bs=1M count=16 conv=fsync status=none  # allocated: NOWAIT need not block
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) S=$(lmq_sys 0)
$LOSETUP --direct-io=on $D $F || { fail "attach"; stop_testing; }
N=200

rq() { awk '{ print $1 + $5 }' $S/stat; }	# reads + writes completed
merges() { awk '{ print $2 + $6 }' $S/stat; }
paths() { lmq-stats $D | awk '$1 ~ /^(inline|aio_inline|aio_async|kthread)$/ { s += $2 } END { print s + 0 }'; }
ioc() { lmq-stats $D | awk -v k=$1 '$1 == k { print $2 }'; }
fbsum() { lmq-stats $D | awk '$1 ~ /^fb_/ { s += $2 } END { print s + 0 }'; }
reset() { lmq_is_mq && echo 0 >$S/loopmq/stats; }

modes=$LMQ_MODES
lmq_is_mq && modes="direct kthread aio auto"
for mode in $modes; do
	lmq_mode 0 $mode || fail "$mode: set mode"
	sync; sleep 0.2
	reset
	r0=$(rq)
	dd if=$D of=/dev/null bs=4k count=$N iflag=direct status=none
	dd if=/dev/urandom of=$D bs=4k count=$N seek=100 oflag=direct status=none
	r1=$(rq)
	is "$((r1 - r0))" $((2 * N)) "$mode: dd: /sys/block stat counts $((2 * N)) requests"
	if lmq_is_mq; then
		is "$(paths)" $((r1 - r0)) "$mode: dd: path counters sum to the requests"
		st=$(lmq-stats $D); rc=$?
		is "$rc" 0 "$mode: LOOPMQ_GET_STATS (reserved fields zero)"
		sy=$(cat $S/loopmq/stats)
		# peak_inflight may only differ if it was sampled between reads; none ran
		is "$(echo "$st" | head -n $(echo "$sy" | wc -l) | md5sum)" "$(echo "$sy" | md5sum)" \
			"$mode: ioctl stats equal sysfs stats"
		is "$(echo "$st" | awk '$1 == "mode" { print $2 }')" $mode "$mode: ioctl reports the mode"
		# as many as sysfs lists: fb_* lines, and paths = the rest but
		# kthread_wakeups, peak_inflight and errors
		is "$(echo "$st" | awk '$1 == "nr_paths" { p = $2 } $1 == "nr_fallbacks" { f = $2 } END { print p, f }')" \
			"$(awk '$1 ~ /^fb_/ { f++; next } { n++ } END { print n - 3, f }' $S/loopmq/stats)" \
			"$mode: nr_paths nr_fallbacks"
		case $mode in
		direct)  is "$(($(ioc inline) + $(ioc aio_inline) + $(ioc aio_async) + $(ioc kthread)))" $((2 * N)) \
				"direct: inline + aio + kthread"
			 [ "$(ioc inline)" -ge $N ] && pass "direct: the $N reads ran inline ($(ioc inline))" ||
				fail "direct: only $(ioc inline) requests ran inline, want >= $N"
			 is "$(ioc kthread)" "$(($(ioc fb_worker) + $(ioc fb_eagain)))" \
				"direct: the kthread ran only worker and would-block fallbacks" ;;
		kthread) is "$(ioc kthread)" $((2 * N)) "kthread: every dd request went to the kthread"
			 [ "$(ioc kthread_wakeups)" -gt 0 ] && pass "kthread: wakeups counted" ||
				fail "kthread: kthread_wakeups is 0" ;;
		aio)     is "$(($(ioc aio_inline) + $(ioc aio_async) + $(ioc kthread)))" $((2 * N)) \
				"aio: aio_inline + aio_async + kthread"
			 is "$(ioc inline)" 0 "aio: nothing ran on the plain inline path"
			 [ $(($(ioc aio_inline) + $(ioc aio_async))) -gt 0 ] && pass "aio: some requests took the aio path" ||
				fail "aio: no request took an aio path (backing: dio file on ext4)" ;;
		esac
		[ "$(fbsum)" -le "$(ioc kthread)" ] && pass "$mode: fallbacks ($(fbsum)) <= kthread requests ($(ioc kthread))" ||
			fail "$mode: fallbacks $(fbsum) > kthread $(ioc kthread)"
		is "$(ioc errors)" 0 "$mode: no errors"
		diag "$mode dd stats: $(echo $st)"
	fi

	# fio, queue depth 8: fio's ios = completed requests + merges
	reset
	r0=$(rq) m0=$(merges)
	j=$(fio --name=st --filename=$D --rw=randrw --bs=4k --direct=1 --ioengine=libaio \
		--iodepth=8 --size=8M --io_size=4M --output-format=json 2>/dev/null)
	is "$?" 0 "$mode: fio ran"
	r1=$(rq) m1=$(merges)
	ios=$(echo "$j" | jq '.jobs[0].read.total_ios + .jobs[0].write.total_ios')
	is "$ios" 1024 "$mode: fio issued 1024 ios"
	is "$((r1 - r0 + m1 - m0))" "$ios" "$mode: fio: stat requests + merges = fio ios"
	if lmq_is_mq; then
		is "$(paths)" $((r1 - r0)) "$mode: fio: path counters sum to the requests"
		case $mode in
		direct)  is "$(ioc inline)" $((r1 - r0)) "direct: fio requests all inline" ;;
		kthread) is "$(ioc kthread)" $((r1 - r0)) "kthread: fio requests all on the kthread" ;;
		esac
		pk=$(ioc peak_inflight)
		[ "$pk" -ge 1 ] && [ "$pk" -le 1024 ] && pass "$mode: peak_inflight $pk" || fail "$mode: peak_inflight $pk"
		diag "$mode fio stats: $(lmq-stats $D | tr '\n' ' ')"
	fi
done

if lmq_is_mq; then
	dd if=$D of=/dev/null bs=4k count=10 iflag=direct status=none
	echo 0 >$S/loopmq/stats
	is "$(paths) $(ioc errors)" "0 0" "writing 0 to sysfs stats resets them"
	dd if=$D of=/dev/null bs=4k count=10 iflag=direct status=none
	lmq-stats --reset $D
	is "$(paths)" 0 "LOOPMQ_RESET_STATS resets them"
fi
$LOSETUP -d $D
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
if lmq_is_mq; then	# the mode= module parameter sets new devices' mode
	for m in kthread direct; do
		lmq_load 1 mode=$m || { fail "modprobe $LMQ_MOD mode=$m"; continue; }
		is "$(cat $S/loopmq/mode)" $m "mode=$m: sysfs mode"
		$LOSETUP --direct-io=on $D $F && echo 0 >$S/loopmq/stats
		dd if=$D of=/dev/null bs=4k count=50 iflag=direct status=none
		want=kthread; [ $m = direct ] && want=inline
		is "$(ioc $want)" 50 "mode=$m: 50 reads on the $want path"
		$LOSETUP -d $D
		lmq_unload
	done
	modprobe loopmq mode=bogus 2>/dev/null && { fail "modprobe mode=bogus accepted"; lmq_unload; } ||
		pass "modprobe mode=bogus refused"
fi
umount /mnt/t28
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 2400
# Experiment (not a test): where the time goes when writes to a loop image
# allocate (a sparse image on xfs) or copy on write (a reflink copy on xfs),
# the backings xfs-sparse and xfs-reflink of make bench.  Per cell a fresh
# image (bench/guest/lib.sh: setup_fresh, fresh_image), one random-write
# workload for RUN seconds through stock loop or loopmq, with direct I/O on
# and off, then sync: the cell's IOPS, and IOPS counting the writeback that
# sync did afterwards (its guest time added to fio's run time), xfs
# transactions and context switches per write over fio and sync, the dirty
# data left, and loopmq's non-zero path counters.  Run it with
#   tests/vm/run --kernel 6.12 --cpus 1 --mem 2048 --icount \
#       --append hugepages=48 bench/experiments/fresh-images.sh
# and read the "# cell ..." lines in the console log.  KINDS, WLS, TARGETS
# and RUN in the guest's environment narrow it.
exec 2>&1
RAW_MB=512 REPS=1
# shellcheck source=bench/guest/lib.sh
. /bench/guest/lib.sh
OUT=/tmp/fresh-images; mkdir -p $OUT; LOG=$OUT/log
RUN=${RUN:-1}
KINDS=${KINDS:-reflink sparse}
WLS=${WLS:-w4k-qd32 w512-qd1}
TARGETS=${TARGETS:-loop:off loop:on loopmq:direct:off loopmq:kthread:off loopmq:auto:off loopmq:direct:on loopmq:auto:on}
xfs_trans() {	# transactions committed, all kinds (sync, async, empty)
	awk '$1 == "trans" { print $2 + $3 + $4 }' /proc/fs/xfs/stat
}
ctxt() { awk '$1 == "ctxt" { print $2 }' /proc/stat; }
n=0 want=0
cell() {	# kind target(loop:dio | loopmq:mode:dio) workload
	local dev="" t m dio bs eng qd j ios iops ms s0 s1 c0 c1 t0 t1 d stats=""
	IFS=: read -r t m dio <<<"$2"
	[ "$t" = loop ] && { dio=$m; m=""; }
	want=$((want + 1))
	fresh_image "$2" || return 1
	if [ "$t" = loop ]; then
		dev=$(loop_up "$BACKDEV" "$dio") || return 1
	else
		losetup --direct-io="$dio" /dev/loopmq0 "$BACKDEV" || return 1
		echo "$m" >/sys/block/loopmq0/loopmq/mode || return 1
		dev=/dev/loopmq0
		echo 0 >/sys/block/loopmq0/loopmq/stats 2>/dev/null
	fi
	set_sched_none "$dev" >/dev/null
	case $3 in
	w4k-qd32) bs=4k eng=libaio qd=32;;
	w512-qd1) bs=512 eng=sync qd=1;;
	esac
	s0=$(xfs_trans); c0=$(ctxt)
	j=$(fio --name=c --filename="$dev" --rw=randwrite --bs=$bs --ioengine=$eng \
		--iodepth=$qd --direct=1 --size="${SIZE_MB}M" --randrepeat=1 --norandommap \
		--time_based --runtime="$RUN" --mem=shmhuge --output-format=json 2>/dev/null)
	ios=$(jq '.jobs[0].write.total_ios' <<<"$j")
	iops=$(jq '.jobs[0].write.iops | floor' <<<"$j")
	ms=$(jq '.jobs[0].job_runtime' <<<"$j")
	d=$(awk '$1 == "Dirty:" { print $2 }' /proc/meminfo)
	t0=$(date +%s%N); sync; t1=$(date +%s%N)
	s1=$(xfs_trans); c1=$(ctxt)
	[ "$t" = loopmq ] && stats=$(awk '$2 != 0 && $1 !~ /peak|mode/ { printf "%s=%s ", $1, $2 }' \
		/sys/block/loopmq0/loopmq/stats)
	printf '# cell %-7s %-18s %-8s iops %6s  incl-writeback %6s  writes %6d  fio %5d ms  sync %5d ms  dirty %6d KiB  per write: trans %.2f ctxsw %.2f  %s\n' \
		"$1" "$2" "$3" "$iops" \
		"$(awk -v n="$ios" -v r="$ms" -v s="$((t1 - t0))" 'BEGIN { printf "%d", n / (r / 1e3 + s / 1e9) }')" \
		"$ios" "$ms" $(( (t1 - t0) / 1000000 )) "$d" \
		"$(awk -v a="$s1" -v b="$s0" -v n="$ios" 'BEGIN { print (a - b) / n }')" \
		"$(awk -v a="$c1" -v b="$c0" -v n="$ios" 'BEGIN { print (a - b) / n }')" "$stats"
	losetup -d "$dev"
	[ "$iops" -gt 0 ] 2>/dev/null && n=$((n + 1))
}
setup_raw ram || exit 1
modprobe loopmq nr_devices=1 || exit 1
for k in $KINDS; do
	GROUP=xfs-$k
	setup_fresh "$k" || exit 1
	echo "# $k: image ${SIZE_MB} MiB"
	for w in $WLS; do
		for tg in $TARGETS; do cell "$k" "$tg" "$w"; done
	done
	rm -f "$BACKDEV" "$ORIG"; umount $MNT
	FRESH="" ORIG=""
done
grep -E 'fresh image|only' $LOG | sed 's/^/# /' | head -n 4
rmmod loopmq; teardown
if [ $n = $want ]; then echo "ok 1 $n cells measured"; echo "1 passed, 0 failed"
else echo "not ok 1 $n of $want cells measured"; echo "0 passed, 1 failed"; exit 1; fi

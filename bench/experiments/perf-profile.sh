#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# Experiment (not a test): perf profiles of 512 B sync randwrite and 4k psync
# randread on dm-linear, loopmq direct and stock loop (dio on), all over brd.
# Needs perf in the initramfs; reports land in DIR:
#   LOOPMQ_EXTRA_PROGS=perf tests/vm/run --kernel 6.12 --cpus 1 --icount \
#       --outdir DIR bench/experiments/perf-profile.sh
# Note: under TCG a sample lands on a translation-block boundary, so per-symbol
# shares are skewed; see docs/BENCHMARKS.md before reading much into them.
exec 2>&1
echo 0 >/proc/sys/kernel/kptr_restrict
echo -1 >/proc/sys/kernel/perf_event_paranoid
# brd of 256 MiB, its first 200 MiB written with O_DIRECT (prefill): a
# buffered fill leaves the backing's page cache populated and every loop
# write then pays for invalidating it (a separate experiment).
GROUP=perf-profile RAW_MB=256 SIZE_MB=200
# shellcheck source=bench/guest/lib.sh
. /bench/guest/lib.sh
setup_raw ram && prefill "$RAWDEV" || exit 1
DM=$(dm_linear_up "$RAWDEV") || exit 1
modprobe loopmq nr_devices=1 ${LMQ_ARGS:-} || exit 1
losetup --direct-io=on /dev/loopmq0 "$RAWDEV" || exit 1
echo direct >/sys/block/loopmq0/loopmq/mode
LOOP=$(loop_up "$RAWDEV" on) || exit 1
for d in loopmq0 "$(basename "$LOOP")" "$(basename "$(readlink -f "$DM")")"; do echo none >/sys/block/$d/queue/scheduler 2>/dev/null; done
mkdir -p /out
prof() {	# name dev rw bs
	local n=$1 d=$2
	fio --name=$n --filename=$d --rw=$3 --bs=$4 --ioengine=psync --direct=1 --size=200M \
		--time_based --runtime=2 --output-format=terse --terse-version=3 >/dev/null
	perf record -q -a -F 5000 -g -o /tmp/$n.data -- fio --name=$n --filename=$d --rw=$3 --bs=$4 \
		--ioengine=psync --direct=1 --size=200M --time_based --runtime=3 \
		--output-format=terse --terse-version=3 >/tmp/$n.fio
	awk -F';' '{ print "'$n' read_iops", $8, "write_iops", $49 }' /tmp/$n.fio | tee -a /out/summary.txt
	perf report -i /tmp/$n.data --stdio --no-children --sort sym -g none --percent-limit 0.3 >/out/$n.sym.txt 2>/dev/null
	perf report -i /tmp/$n.data --stdio --children --sort sym -g none --percent-limit 1 >/out/$n.children.txt 2>/dev/null
	grep -c . /out/$n.sym.txt
}
for w in "w512 randwrite 512" "r4k randread 4k"; do
	set -- $w
	prof dm-$1 $DM $2 $3
	prof lmq-$1 /dev/loopmq0 $2 $3
	prof loop-$1 $LOOP $2 $3
done
teardown
n=$(ls /out/*.sym.txt 2>/dev/null | wc -l)
if [ "$n" = 6 ]; then echo "ok 1 six profiles in /out"; echo "1 passed, 0 failed"
else echo "not ok 1 six profiles in /out (got $n)"; echo "0 passed, 1 failed"; exit 1; fi

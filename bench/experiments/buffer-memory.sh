#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1500
# Experiment (not a test): why the 256k x 4-job cells did not repeat across
# boots.  fio 256k randread, libaio, QD64, 4 jobs on null_blk (no data copy),
# with fio's buffers from malloc under THP always / never, and from hugetlb
# pages (mem=shmhuge), three runs each, all in one icount boot:
#   tests/vm/run --kernel 6.12 --cpus 1 --icount bench/experiments/buffer-memory.sh
# The "# label IOPS" lines are in the run's console log.
exec 2>&1
# null_blk: blk-mq, no memory backing, completions inline, 4 GiB, 512 B blocks
GROUP=buffer-memory
# shellcheck source=bench/guest/lib.sh
. /bench/guest/lib.sh
setup_nullb_module && D=$(nullb_new bufmem 0 0 0 4096) && udev_wait "$D" || exit 1
: >/tmp/bufmem.iops
run() {	# label [fio args]
	fio --name="$1" --filename=$D --rw=randread --bs=256k --ioengine=libaio \
		--iodepth=64 --numjobs=4 --group_reporting --direct=1 --size=1G \
		--time_based --runtime=1000ms --output-format=terse --terse-version=3 \
		${2:-} | awk -F';' '{ printf "# %-20s %s\n", "'"$1"'", $8 }' |
		tee -a /tmp/bufmem.iops
}
for thp in always never; do
	echo $thp >/sys/kernel/mm/transparent_hugepage/enabled
	for i in 1 2 3; do run "thp-$thp-malloc"; done
done
echo 64 >/proc/sys/vm/nr_hugepages
grep HugePages_Total /proc/meminfo
for i in 1 2 3; do run "thp-never-shmhuge" --mem=shmhuge; done
echo always >/sys/kernel/mm/transparent_hugepage/enabled
for i in 1 2 3; do run "thp-always-shmhuge" --mem=shmhuge; done
echo 0 >/proc/sys/vm/nr_hugepages
teardown
# every fio above printed its line; a failed one printed nothing
n=$(grep -c ' [0-9][0-9]*$' /tmp/bufmem.iops)
if [ "$n" = 12 ]; then echo "ok 1 12 runs measured"; echo "1 passed, 0 failed"
else echo "not ok 1 12 runs measured (got $n)"; echo "0 passed, 1 failed"; exit 1; fi

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# Experiment (not a test): IOPS of loopmq direct and dm-linear over brd with
# queue knobs toggled (wbt, iostats, nomerges), all in one icount boot:
#   tests/vm/run --kernel 6.12 --cpus 1 --icount bench/experiments/queue-knobs.sh
# The "# label IOPS" lines are in the run's console log.
exec 2>&1
# brd of 256 MiB, its first 200 MiB written, dm-linear over all of it
GROUP=queue-knobs RAW_MB=256 SIZE_MB=200
# shellcheck source=bench/guest/lib.sh
. /bench/guest/lib.sh
setup_raw ram && prefill "$RAWDEV" || exit 1
dm_linear_up "$RAWDEV" >/dev/null || exit 1
DM=/dev/$(dmsetup info -c --noheadings -o blkdevname $DM_NAME)
modprobe loopmq nr_devices=1 ${LMQ_ARGS:-} || exit 1
losetup --direct-io=on /dev/loopmq0 "$RAWDEV" || exit 1
echo direct >/sys/block/loopmq0/loopmq/mode
Q=/sys/block/loopmq0/queue
for f in scheduler wbt_lat_usec iostats add_random nomerges rq_affinity io_poll; do echo "# loopmq0 $f: $(cat $Q/$f 2>&1)"; done
for f in iostats add_random; do echo "# ram0 $f: $(cat /sys/block/ram0/queue/$f 2>&1)"; echo "# $DM $f: $(cat /sys/block/${DM#/dev/}/queue/$f 2>&1)"; done
run() {	# label dev rw bs
	fio --name=$1 --filename=$2 --rw=$3 --bs=$4 --ioengine=psync --direct=1 --size=200M \
		--time_based --runtime=1 --output-format=terse >/dev/null
	fio --name=$1 --filename=$2 --rw=$3 --bs=$4 --ioengine=psync --direct=1 --size=200M \
		--time_based --runtime=3 --output-format=terse --terse-version=3 |
		awk -F';' '{ printf "# %-28s %s\n", "'$1'", ($8 > $49 ? $8 : $49) }' | tee -a /tmp/knobs.iops
}
for w in "w512 randwrite 512" "r4k randread 4k"; do
	set -- $w
	run dm-$1 $DM $2 $3
	run lmq-$1 /dev/loopmq0 $2 $3
	echo 0 >$Q/wbt_lat_usec; run lmq-nowbt-$1 /dev/loopmq0 $2 $3
	echo 0 >$Q/iostats; run lmq-nowbt-noio-$1 /dev/loopmq0 $2 $3
	echo 2 >$Q/nomerges; run lmq-nowbt-noio-nomrg-$1 /dev/loopmq0 $2 $3
	echo 1 >$Q/iostats; echo 0 >$Q/nomerges
	echo 0 >/sys/block/${DM#/dev/}/queue/iostats; run dm-noio-$1 $DM $2 $3; echo 1 >/sys/block/${DM#/dev/}/queue/iostats
	echo 0 >/sys/block/ram0/queue/iostats; run lmq-nowbt-ramnoio-$1 /dev/loopmq0 $2 $3; run dm-ramnoio-$1 $DM $2 $3
	echo 1 >/sys/block/ram0/queue/iostats
done
teardown
# every fio above printed its line; a failed one printed nothing
n=$(grep -c . /tmp/knobs.iops 2>/dev/null)
if [ "$n" = 16 ]; then echo "ok 1 16 cells measured"; echo "1 passed, 0 failed"
else echo "not ok 1 16 cells measured (got $n)"; echo "0 passed, 1 failed"; exit 1; fi

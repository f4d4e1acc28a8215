#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1500
# Experiment (not a test): what IOCB_NOIO on loopmq's NOWAIT buffered reads
# costs a plain submitter.  With IOCB_NOWAIT alone a read that misses the
# page cache starts readahead inline, which on a RAM disk completes there;
# with IOCB_NOIO the miss answers "would block" and the kthread reads.
# loopmq with direct I/O off over a written 256 MiB image on xfs on brd,
# the page cache dropped before each cell, no I/O scheduler; fio O_DIRECT
# reads of the device for 1 s: 4 KiB random at QD32 (libaio) and QD1
# (psync), 64 KiB in order at QD8; modes aio and auto; each cell twice,
# alternating the module under test (loopmq as installed) with another
# build of it (/files/other.ko).  Run it as
#   git worktree add /tmp/other REV && (cd /tmp/other &&
#     scripts/build-module.sh /lib/modules/RELEASE/build /tmp/other-ko)
#   mkdir -p /tmp/f && cp /tmp/other-ko/loopmq.ko /tmp/f/other.ko
#   tests/vm/run --kernel K --cpus 1 --icount --rev REV2 --files /tmp/f \
#     bench/experiments/nowait-noio.sh
# and read the "# cell ..." lines in the console log: IOPS, then the
# device's counters (aio_inline: served inline; kthread, fb_eagain: the
# misses that went to the kthread).
exec 2>&1
[ -r /files/other.ko ] || { echo "not ok 1 no /files/other.ko"; echo "0 passed, 1 failed"; exit 1; }
modprobe brd rd_nr=1 rd_size=$((640 * 1024)) max_part=0 || exit 1
for i in $(seq 50); do [ -b /dev/ram0 ] && break; sleep 0.1; done
mkfs.xfs -q -f /dev/ram0 && mkdir -p /mnt/nn && mount -o noatime /dev/ram0 /mnt/nn || exit 1
fio --name=fill --filename=/mnt/nn/img --rw=write --bs=1M --direct=1 --size=256M \
	--output-format=terse >/dev/null || exit 1
S=/sys/block/loopmq0
n=0
cell() {	# which(installed|other) mode workload
	local a iops
	if [ "$1" = other ]; then insmod /files/other.ko nr_devices=1 || return 1
	else modprobe loopmq nr_devices=1 || return 1; fi
	losetup --direct-io=off /dev/loopmq0 /mnt/nn/img || return 1
	echo "$2" >$S/loopmq/mode
	echo none >$S/queue/scheduler
	sync; echo 3 >/proc/sys/vm/drop_caches
	echo 0 >$S/loopmq/stats
	case $3 in
	rand32) a="--rw=randread --bs=4k --ioengine=libaio --iodepth=32";;
	rand1) a="--rw=randread --bs=4k --ioengine=psync --iodepth=1";;
	seq8) a="--rw=read --bs=64k --ioengine=libaio --iodepth=8";;
	esac
	# terse v3: field 8 is the read IOPS
	iops=$(fio --name=c --filename=/dev/loopmq0 $a --direct=1 --size=256M --time_based \
		--runtime=1 --output-format=terse --terse-version=3 | awk -F';' '{ print $8 }')
	printf '# cell %-9s %-4s %-6s iops %7s  %s\n' "$1" "$2" "$3" "$iops" \
		"$(awk '$2 != 0 && $1 !~ /peak/ { printf "%s=%s ", $1, $2 }' $S/loopmq/stats)"
	losetup -d /dev/loopmq0; sleep 0.3; rmmod loopmq
	[ -n "$iops" ] && n=$((n + 1))
}
for w in rand32 rand1 seq8; do
	for m in aio auto; do
		for r in 1 2; do cell installed $m $w; cell other $m $w; done
	done
done
umount /mnt/nn; rmmod brd
if [ $n = 24 ]; then echo "ok 1 24 cells measured"; echo "1 passed, 0 failed"
else echo "not ok 1 24 cells measured (got $n)"; echo "0 passed, 1 failed"; exit 1; fi

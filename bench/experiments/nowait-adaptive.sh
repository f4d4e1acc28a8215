#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1200
# Experiment (not a test): what the adaptive NOWAIT estimate for writes buys.
# loopmq with dio on over an image file on ext4 on brd, fio 4k randwrite
# (psync QD1 and libaio QD32), each cell on a freshly truncated (sparse)
# image, where every IOCB_NOWAIT write must allocate and answers EAGAIN,
# and on a fully written image, where NOWAIT writes succeed; modes aio and
# auto, with nowait_adaptive=1 and =0.  Run it with
#   tests/vm/run --kernel 6.12 --cpus 1 --icount bench/experiments/nowait-adaptive.sh
# and read the "# cell ..." lines in the console log (ORDER="1 0" in the
# guest's environment swaps the order of each pair).
exec 2>&1
GROUP=nowait-adaptive RAW_MB=640
# shellcheck source=bench/guest/lib.sh
. /bench/guest/lib.sh
setup_raw ram || exit 1
mkfs.ext4 -q -F "$RAWDEV" && mkdir -p /mnt/na && mount "$RAWDEV" /mnt/na || exit 1
modprobe loopmq nr_devices=1 || exit 1
S=/sys/block/loopmq0
P=/sys/module/loopmq/parameters/nowait_adaptive
n=0
cell() {	# image(sparse|written) mode adaptive workload
	local img=/mnt/na/img eng qd
	rm -f $img
	if [ $1 = sparse ]; then truncate -s 256M $img
	else fio --name=fill --filename=$img --rw=write --bs=1M --direct=1 --size=256M \
		--output-format=terse >/dev/null; fi
	# let ext4 settle (the previous image's blocks freed, the fill on disk)
	sync; sleep 2
	losetup --direct-io=on /dev/loopmq0 $img || return 1
	echo $2 >$S/loopmq/mode; echo $3 >$P; echo 0 >$S/loopmq/stats
	case $4 in qd1) eng=psync qd=1;; qd32) eng=libaio qd=32;; esac
	fio --name=c --filename=/dev/loopmq0 --rw=randwrite --bs=4k --ioengine=$eng \
		--iodepth=$qd --direct=1 --size=256M --time_based --runtime=2 \
		--output-format=terse --terse-version=3 | awk -F';' '{ print $49 }' >/tmp/iops
	printf '# cell %-7s %-5s adaptive=%s %-4s iops %7s  %s\n' $1 $2 $3 $4 "$(cat /tmp/iops)" \
		"$(awk '$2 != 0 && $1 !~ /peak/ { printf "%s=%s ", $1, $2 }' $S/loopmq/stats)"
	losetup -d /dev/loopmq0
	[ -s /tmp/iops ] && n=$((n + 1))
}
for img in sparse written; do
	for w in qd1 qd32; do
		for m in aio auto; do
			for a in ${ORDER:-0 1}; do cell $img $m $a $w; done
		done
	done
done
echo Y >$P
umount /mnt/na; teardown
if [ $n = 16 ]; then echo "ok 1 16 cells measured"; echo "1 passed, 0 failed"
else echo "not ok 1 16 cells measured (got $n)"; echo "0 passed, 1 failed"; exit 1; fi

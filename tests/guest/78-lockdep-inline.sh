#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# 78-lockdep-inline: lockdep checks the inline path that production kernels
# run.  On lockdep kernels loopmq normally sends a request whose submitter
# holds a mutex or rwsem to the kthread (fb_lockdep), because lockdep keys
# lock classes by file system type and reports an upper and a lower ext4
# as recursive locking.  That guard also hides all flusher writeback and
# all upper direct I/O from lockdep.  Here it is off (lockdep_guard=0) and
# the upper and lower file systems are of different types (xfs on loopmq
# over a file on ext4, ext4 on loopmq over a file on xfs), so the inline
# calls run with the submitter's locks held and lockdep sees the real
# dependency chains: any report fails the run (panic_on_warn).  Checks:
# requests ran inline with locks held (fb_lockdep stays 0), no errors.
. /tests/lib/driver.sh

lmq_is_mq || skip_all "loopmq only"
[ -e /proc/lockdep ] || skip_all "not a lockdep kernel"
require_cmd mkfs.xfs mkfs.ext4

W=/mnt/t78lower U=/mnt/t78upper
mkdir -p $W $U
modprobe loopmq nr_devices=1 lockdep_guard=0 || { t_fail "modprobe loopmq lockdep_guard=0"; t_done; }
t_is "$(cat /sys/module/loopmq/parameters/lockdep_guard)" N "lockdep_guard is off"
D=$(lmq_dev 0)

cleanup() {
	umount $U 2>/dev/null
	$LOSETUP -d $D 2>/dev/null
	umount $W 2>/dev/null
}

for pair in ext4:xfs xfs:ext4; do
	lower=${pair%%:*} upper=${pair##*:}
	for mode in direct auto; do
		for dio in off on; do
			c="$upper on loopmq ($mode, dio $dio) on $lower"
			wipefs -qa $SCRATCH 2>/dev/null
			if [ $lower = ext4 ]; then mkfs.ext4 -qF $SCRATCH; else mkfs.xfs -qf $SCRATCH; fi >/dev/null &&
				mount $SCRATCH $W && truncate -s 320M $W/img &&
				$LOSETUP --direct-io=$dio $D $W/img && lmq_mode 0 $mode ||
				{ t_fail "$c: setup"; cleanup; continue; }
			if [ $upper = ext4 ]; then mkfs.ext4 -qF $D; else mkfs.xfs -qf $D; fi >/dev/null &&
				mount $D $U || { t_fail "$c: mkfs/mount upper"; cleanup; continue; }
			echo 0 >$(lmq_sys 0)/loopmq/stats
			# buffered writes + fsync (write_iter under i_rwsem, journal
			# commits), flusher writeback (s_umount), upper direct I/O
			t_run "$c: buffered writes with fsync" fio --name=b --directory=$U \
				--rw=randwrite --bs=4k --size=4M --fsync=8 --verify=crc32c \
				--output-format=terse
			t_run "$c: direct I/O" fio --name=d --directory=$U --rw=randrw \
				--bs=16k --size=4M --direct=1 --ioengine=psync \
				--verify=crc32c --output-format=terse
			dd if=/dev/zero of=$U/big bs=64k count=128 2>/dev/null
			sync
			inl=$(($(lmq_stat 0 inline) + $(lmq_stat 0 aio_inline) + $(lmq_stat 0 aio_async)))
			[ "$inl" -gt 0 ] && t_ok "$c: requests ran from queue_rq ($inl)" ||
				t_fail "$c: nothing ran from queue_rq"
			t_is "$(lmq_stat 0 fb_lockdep)" 0 "$c: no lockdep fallback"
			t_is "$(lmq_stat 0 errors)" 0 "$c: no errors"
			umount $U && $LOSETUP -d $D && umount $W ||
				{ t_fail "$c: teardown"; cleanup; }
		done
	done
done
rmmod loopmq
t_done

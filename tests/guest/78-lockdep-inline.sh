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
# dependency chains: any report fails the run (panic_on_warn).  One
# stacking per boot (see below).  Checks:
# requests ran inline with locks held (fb_lockdep stays 0, and with the
# guard turned on for one more case the same workload does fall back),
# no errors.
DESCRIPTION="lockdep sees the inline path with the guard off"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	lmq_is_mq || skip_all "loopmq only"
	[ -e /proc/lockdep ] || skip_all "not a lockdep kernel"
	require_cmd mkfs.xfs mkfs.ext4
}
. /tests/lib/guest.sh

W=/mnt/t78lower U=/mnt/t78upper
mkdir -p $W $U
modprobe loopmq nr_devices=1 lockdep_guard=0 || { fail "modprobe loopmq lockdep_guard=0"; stop_testing; }
is "$(cat /sys/module/loopmq/parameters/lockdep_guard)" N "lockdep_guard is off"
D=$(lmq_dev 0)

upper_cleanup() {
	umount $U 2>/dev/null
	$LOSETUP -d $D 2>/dev/null
}

# One stacking per boot.  Lockdep keys these locks by file system type, not
# by super block, and never forgets: xfs on loopmq over ext4 records
# "xfs i_rwsem -> ext4 sb_writers", ext4 on loopmq over xfs records "ext4
# directory i_rwsem -> xfs i_rwsem", and with ext4's own "sb_writers ->
# directory i_rwsem" the two stackings close a cycle of classes that no
# two real stacks can close on instances (that would need a file system
# backed, through the other, by itself: a backing cycle, refused).  So a
# boot runs one pair: ext4 on loopmq over xfs (the everyday case: an ext4
# image on an xfs host) on even days of the year, xfs over ext4 on odd
# ones, so that make check covers both over two days; or the pair
# t78.pair=LOWER:UPPER on the kernel command line names (T78_PAIR in the
# environment).
pair=${T78_PAIR:-$(sed -n 's/.*\bt78\.pair=\([a-z0-9]*:[a-z0-9]*\).*/\1/p' /proc/cmdline)}
# by default xfs:ext4 on even days of the year, ext4:xfs on odd ones
[ -n "$pair" ] || pair=$([ $((10#$(date +%j) % 2)) = 0 ] && echo xfs:ext4 || echo ext4:xfs)
case $pair in
ext4:xfs|xfs:ext4) ;;
*) fail "t78.pair=$pair: want ext4:xfs or xfs:ext4"; stop_testing ;;
esac
diag "lower:upper $pair (the other: tests/vm/run --kernel debug --append t78.pair=... $0)"
for pair in $pair; do
	lower=${pair%%:*} upper=${pair##*:}
	# the lower file system is made once: each case below brings its own
	# image, upper file system and attachment
	wipefs -qa $SCRATCH 2>/dev/null
	if [ $lower = ext4 ]; then mkfs.ext4 -qF $SCRATCH; else mkfs.xfs -qf $SCRATCH; fi >/dev/null &&
		mount $SCRATCH $W || { fail "$lower on $SCRATCH"; continue; }
	# the upper file system's size: xfs needs 300 MB; an ext4 of 64 MiB
	# holds the 16 MiB the workload writes, with a smaller journal for
	# mkfs to zero
	size=64M
	[ $upper = xfs ] && size=320M
	# mode:dio:guard; the last case turns the guard on for the same
	# workload, which must then send requests to the kthread: proof that
	# the cases before it ran requests inline with the submitter's locks
	# held (a guard that never fires would pass them too)
	for cs in direct:off:N direct:on:N auto:off:N auto:on:N direct:on:Y; do
		IFS=: read -r mode dio guard <<<"$cs"
		{
			c="$upper on loopmq ($mode, dio $dio) on $lower"
			[ $guard = Y ] && c="$upper on loopmq ($mode, dio $dio, lockdep_guard=1) on $lower"
			echo $guard >/sys/module/loopmq/parameters/lockdep_guard
			rm -f $W/img
			truncate -s $size $W/img &&
				$LOSETUP --direct-io=$dio $D $W/img && lmq_mode 0 $mode ||
				{ fail "$c: setup"; upper_cleanup; continue; }
			if [ $upper = ext4 ]; then mkfs.ext4 -qF $D; else mkfs.xfs -qf $D; fi >/dev/null &&
				mount $D $U || { fail "$c: mkfs/mount upper"; upper_cleanup; continue; }
			echo 0 >$(lmq_sys 0)/loopmq/stats
			# buffered writes + fsync (write_iter under i_rwsem, journal
			# commits), flusher writeback (s_umount), upper direct I/O.
			# Lockdep needs each chain once, not volume: 512 writes and
			# 64 fsyncs, 128 direct requests, 4 MiB for the flusher.
			check_quiet "$c: buffered writes with fsync" fio --name=b --directory=$U \
				--rw=randwrite --bs=4k --size=2M --fsync=8 --verify=crc32c \
				--output-format=terse
			check_quiet "$c: direct I/O" fio --name=d --directory=$U --rw=randrw \
				--bs=16k --size=2M --direct=1 --ioengine=psync \
				--verify=crc32c --output-format=terse
			dd if=/dev/zero of=$U/big bs=64k count=64 2>/dev/null
			sync
			inl=$(($(lmq_stat 0 inline) + $(lmq_stat 0 aio_inline) + $(lmq_stat 0 aio_async)))
			if [ $guard = N ]; then
				[ "$inl" -gt 0 ] && pass "$c: requests ran from queue_rq ($inl)" ||
					fail "$c: nothing ran from queue_rq"
				is "$(lmq_stat 0 fb_lockdep)" 0 "$c: no lockdep fallback"
			else
				fbl=$(lmq_stat 0 fb_lockdep)
				check "$c: the guard sent requests with locks held to the kthread (fb_lockdep=$fbl)" \
					[ "${fbl:-0}" -gt 0 ]
			fi
			is "$(lmq_stat 0 errors)" 0 "$c: no errors"
			umount $U && $LOSETUP -d $D ||
				{ fail "$c: teardown"; upper_cleanup; }
		}
	done
	echo N >/sys/module/loopmq/parameters/lockdep_guard
	umount $W || fail "umount $lower"
done
rmmod loopmq
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# 12-stacking: three levels, mixed filesystems, direct I/O at every level:
#   /dev/vda: ext4 -> f0 -> dev0 (bottom): ext4 -> f1 -> dev1 (middle):
#   xfs -> f2 -> dev2 (top): ext4 <- fsync-heavy fio with crc32c verify.
# In every mode (all levels in the same mode): no fio error or mismatch, no
# errors in any level's stats, and the guards must have fired where the
# mode would have gone inline: with direct I/O backing, a request that
# level K ran from queue_rq (inline, aio_inline or aio_async) submits its
# backing I/O to level K-1 from inside level K's dispatch, so level K-1 must
# show fallbacks (fb_nested, fb_journal, fb_stack, fb_reclaim or, on lockdep
# kernels, fb_lockdep).  In kthread mode nothing runs from queue_rq and no
# fallback is counted.  In the other
# modes at least one level must run something from queue_rq: the direct
# reads of the top device give every mode a chance to.
DESCRIPTION="three stacked levels with direct I/O: data verifies, the inline guards fire"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

M=/mnt/t12
mkdir -p $M/s0 $M/s1 $M/s2 $M/s3
lmq_load 3 || { fail "load $LMQ_MOD"; stop_testing; }
D0=$(lmq_dev 0) D1=$(lmq_dev 1) D2=$(lmq_dev 2)
setup() {
	mkfs.ext4 -q -F /dev/vda && mount /dev/vda $M/s0 && truncate -s 512M $M/s0/f0 &&
	$LOSETUP --direct-io=on $D0 $M/s0/f0 && mkfs.ext4 -q -F $D0 && mount $D0 $M/s1 &&
	truncate -s 320M $M/s1/f1 && $LOSETUP --direct-io=on $D1 $M/s1/f1 &&
	mkfs.xfs -q -f $D1 && mount $D1 $M/s2 && truncate -s 64M $M/s2/f2 &&
	$LOSETUP --direct-io=on $D2 $M/s2/f2 && mkfs.ext4 -q -F $D2 && mount $D2 $M/s3
}
check_quiet "build the 3-level stack (ext4 / xfs / ext4 on $LMQ_NAME)" setup || stop_testing
for i in 0 1 2; do is "$(cat $(lmq_sys $i)/loop/dio)" 1 "level $i: dio on"; done

st() { lmq_stat $1 $2; }
ran_from_queue_rq() { echo $(($(st $1 inline) + $(st $1 aio_inline) + $(st $1 aio_async))); }
guards() {
	echo $(($(st $1 fb_nested) + $(st $1 fb_journal) + $(st $1 fb_stack) + $(st $1 fb_reclaim) +
		$(st $1 fb_lockdep)))
}
fbs() { awk '$1 ~ /^fb_/ { s += $2 } END { print s + 0 }' $(lmq_sys $1)/loopmq/stats; }

for mode in $LMQ_MODES; do
	for i in 0 1 2; do lmq_mode $i $mode || fail "$mode: set mode on level $i"; done
	if lmq_is_mq; then for i in 0 1 2; do echo 0 >$(lmq_sys $i)/loopmq/stats; done; fi
	rm -rf $M/s3/fio; mkdir $M/s3/fio
	check_quiet "$mode: fsync-heavy verifying fio on the top filesystem" \
		fio --output-format=terse --directory=$M/s3/fio --name=fs --rw=randwrite --bs=4k \
		--size=2M --numjobs=2 --fsync=8 --verify=crc32c --do_verify=1 --verify_fatal=1
	sync
	echo 3 >/proc/sys/vm/drop_caches
	check_quiet "$mode: re-read after drop_caches verifies" \
		fio --output-format=terse --directory=$M/s3/fio --name=fs --rw=randwrite --bs=4k \
		--size=2M --numjobs=2 --verify=crc32c --verify_only=1 --verify_fatal=1
	lmq_is_mq || continue
	# The fio above is buffered and fsync-heavy: its writes come with a
	# journal handle, allocate (NOWAIT answers EAGAIN) or are flushes, so
	# in aio and auto mode every one of them may rightly fall back.  Direct
	# reads of the top device, from a plain task, over backing blocks the
	# fio just wrote, are what queue_rq may run: the first pass loads each
	# level's extent maps (NOWAIT gives EAGAIN until then), the second one
	# must find them cached.
	for pass in 1 2; do
		dd if=$D2 of=/dev/null bs=64k count=256 iflag=direct status=none ||
			fail "$mode: direct read of $D2 (pass $pass)"
	done
	for i in 2 1 0; do
		diag "$mode level $i ($([ $i = 2 ] && echo top || { [ $i = 1 ] && echo middle || echo bottom; })): $(tr '\n' ' ' <$(lmq_sys $i)/loopmq/stats)"
		is "$(st $i errors)" 0 "$mode: level $i errors"
	done
	case $mode in
	kthread)
		for i in 0 1 2; do
			is "$(ran_from_queue_rq $i) $(fbs $i)" "0 0" "kthread: level $i ran nothing from queue_rq, no fallbacks"
		done ;;
	*)
		for k in 2 1; do
			r=$(ran_from_queue_rq $k) g=$(guards $((k - 1)))
			if [ "$r" -gt 0 ]; then
				[ "$g" -gt 0 ] && pass "$mode: level $k ran $r from queue_rq; level $((k - 1)) guards fired $g times" ||
					fail "$mode: level $k ran $r requests from queue_rq but level $((k - 1)) shows no nested/journal/stack/reclaim fallback"
			else
				diag "$mode: level $k ran nothing from queue_rq (all fell back)"
			fi
		done
		[ $(($(ran_from_queue_rq 0) + $(ran_from_queue_rq 1) + $(ran_from_queue_rq 2))) -gt 0 ] &&
			pass "$mode: some level ran requests from queue_rq" ||
			fail "$mode: no level ran anything from queue_rq"
		# the top file system's tasks submit with a journal handle
		# (ext4 reads bitmaps and writes inside a transaction): the
		# top device must not run those into the file system below,
		# whose own journal would take the handle as its own
		fj=$(st 2 fb_journal)
		check "$mode: requests submitted with a journal handle fell back (top level fb_journal=$fj)" \
			test "${fj:-0}" -gt 0 ;;
	esac
done
umount $M/s3 && $LOSETUP -d $D2 && umount $M/s2 && $LOSETUP -d $D1 && umount $M/s1 &&
	$LOSETUP -d $D0 && umount $M/s0
is "$?" 0 "tear the stack down"
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# 11-mode-switch: the dispatch mode is switched through sysfs every ~250 ms
# while two verifying fio jobs run on disjoint halves of the device (a
# write-then-verify job and a randrw job with verify_backlog): no mismatch,
# no I/O error, every switch accepted and visible, and every path the modes
# use carried requests.  Backings: a direct-I/O file on ext4 and a buffered
# file on tmpfs.  Against the stock loop driver only the fio part runs.
DESCRIPTION="dispatch mode switched every ~250 ms under verifying fio"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

M=/mnt/t11 W=/tmp/t11
mkdir -p $M $W
mkfs.ext4 -q -F /dev/vda && mount /dev/vda $M || { fail "ext4 on vda"; stop_testing; }
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) S=$(lmq_sys 0)

switcher() {	# until $W/stop exists: cycle the modes, count switches and errors
	local n=0 bad=0 m
	local order=(direct aio kthread auto aio direct auto kthread)
	while [ ! -e $W/stop ]; do
		m=${order[n % 8]}
		if echo $m >$S/loopmq/mode && [ "$(cat $S/loopmq/mode)" = $m ]; then :; else bad=$((bad + 1)); fi
		n=$((n + 1))
		sleep 0.25
	done
	echo "$n $bad" >$W/switches
}

# the write-then-verify job writes its region three times; once on the
# debug kernel, whose single pass is as long as three elsewhere (the
# switch count is asserted below)
loops=3
[ "$LMQ_SLOW" = 1 ] && loops=1
for b in ext4 tmpfs; do
	if [ $b = ext4 ]; then F=$M/img dio=on; else F=$W/img dio=off; fi
	rm -f $F; truncate -s 32M $F
	$LOSETUP --direct-io=$dio $D $F || { fail "$b: attach"; continue; }
	lmq_is_mq && echo 0 >$S/loopmq/stats
	rm -f $W/stop $W/switches
	lmq_is_mq && { switcher & swpid=$!; }
	fio --output-format=terse --ioengine=libaio --direct=1 --filename=$D \
		--name=wv --rw=randwrite --bs=4k --offset=0 --size=8M --iodepth=8 --loops=$loops \
		--verify=crc32c --do_verify=1 --verify_fatal=1 \
		--name=rw --rw=randrw --bsrange=4k-64k --offset=16M --size=8M --iodepth=8 \
		--time_based --runtime=8 --verify=crc32c --verify_backlog=16 --verify_fatal=1 \
		>$W/fio.out 2>&1
	rc=$?
	touch $W/stop
	lmq_is_mq && wait $swpid
	is "$rc" 0 "$b: both verifying fio jobs pass while the mode changes"
	[ $rc = 0 ] || tail -n 20 $W/fio.out | sed 's/^/#   /'
	# a final full read-back of the write-then-verify region
	check_quiet "$b: verify-only pass over the first job's data" fio --output-format=terse \
		--ioengine=libaio --direct=1 --filename=$D --name=wv --rw=randwrite --bs=4k \
		--offset=0 --size=8M --iodepth=8 --verify=crc32c --verify_only=1 --verify_fatal=1
	if lmq_is_mq; then
		read -r n bad <$W/switches
		[ "$n" -ge 8 ] && pass "$b: $n mode switches during the run" ||
			fail "$b: only $n mode switches"
		is "$bad" 0 "$b: every switch accepted and shown"
		st=$(cat $S/loopmq/stats)
		diag "$b stats: $(echo $st)"
		is "$(lmq_stat 0 errors)" 0 "$b: stats errors"
		[ "$(lmq_stat 0 inline)" -gt 0 ] && pass "$b: inline path used" || fail "$b: inline is 0"
		[ "$(lmq_stat 0 kthread)" -gt 0 ] && pass "$b: kthread path used" || fail "$b: kthread is 0"
		if [ $dio = on ]; then
			[ $(($(lmq_stat 0 aio_inline) + $(lmq_stat 0 aio_async))) -gt 0 ] &&
				pass "$b: aio paths used" || fail "$b: aio_inline + aio_async is 0"
		fi
	fi
	$LOSETUP -d $D || fail "$b: detach"
done
umount $M
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

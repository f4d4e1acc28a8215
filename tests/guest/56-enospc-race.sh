#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 56-enospc-race: four fio writers (QD8 each) fill a device whose backing
# file lives on a small ext4 (direct I/O to the file), in every mode: the
# writers must fail with ENOSPC (never EIO), nothing may hang; after space is
# freed, writes work again and read back.  (22-enospc covers the single-
# writer and buffered cases.)
# timeout: 400
DESCRIPTION="four writers fill a device on a small ext4: ENOSPC, never EIO, no hang"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

M=/mnt/t56 W=/tmp/t56
mkdir -p $M $W
mkfs.ext4 -q -F -b 4096 -O ^has_journal /dev/vda 6144 >/dev/null && mount /dev/vda $M ||
	{ fail "24 MiB ext4"; stop_testing; }
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)
head -c 1M /dev/urandom >$W/d
for mode in $LMQ_MODES; do
	rm -f $M/img; truncate -s 64M $M/img
	is "$(lmq-ioctl configure $D $M/img 16 0)" OK "$mode: attach (direct I/O)"
	[ "$mode" = stock ] || lmq_mode 0 $mode || fail "$mode: set mode"
	timeout 180 fio --name=fill --filename=$D --rw=randwrite --bs=64k --ioengine=libaio \
		--iodepth=8 --direct=1 --numjobs=4 --size=16M --offset_increment=16M \
		--group_reporting >$W/fio.out 2>&1
	rc=$?
	[ $rc != 124 ] && pass "$mode: 4 writers on a full fs end (fio exit $rc)" || fail "$mode: fio hung"
	nospc=$(grep -c 'No space left on device' $W/fio.out)
	eio=$(grep -c 'Input/output error' $W/fio.out)
	[ $rc != 0 ] && [ "$nospc" -gt 0 ] && [ "$eio" = 0 ] && pass "$mode: writers got ENOSPC ($nospc reports), no EIO" ||
		{ fail "$mode: rc=$rc ENOSPC=$nospc EIO=$eio"; grep -i 'err' $W/fio.out | head -n 5 | sed 's/^/#   /'; }
	fallocate -p -o $((1 << 20)) -l $((62 << 20)) $M/img && sync
	dd if=$W/d of=$D bs=64k seek=$((32 * 16)) oflag=direct conv=fsync status=none
	is "$?" 0 "$mode: write after freeing space"
	is "$(dd if=$D bs=64k skip=$((32 * 16)) count=16 iflag=direct status=none | sha256sum)" \
		"$(sha256sum <$W/d)" "$mode: and it reads back"
	is "$(lmq-ioctl clr-fd $D)" OK "$mode: detach"
done
lmq_wait_gone $(lmq_sys 0)/loop/backing_file 30 || fail "still bound"
umount $M
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

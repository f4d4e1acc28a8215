#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 56-enospc-race: four fio writers (QD8 each) fill a device whose backing
# file lives on a small ext4 (direct I/O to the file), in every mode: the
# writers must fail with ENOSPC (never EIO), nothing may hang; after space is
# freed, writes work again and read back.  (22-enospc covers the single-
# writer and buffered cases.)
# timeout: 400
. /tests/lib/driver.sh

[ -b /dev/vda ] || skip_all "no /dev/vda"
M=/mnt/t56 W=/tmp/t56
mkdir -p $M $W
mkfs.ext4 -q -F -b 4096 -O ^has_journal /dev/vda 6144 >/dev/null && mount /dev/vda $M ||
	{ t_fail "24 MiB ext4"; t_done; }
lmq_load 1 || { t_fail "load $LMQ_MOD"; t_done; }
D=$(lmq_dev 0)
head -c 1M /dev/urandom >$W/d
for mode in $LMQ_MODES; do
	rm -f $M/img; truncate -s 64M $M/img
	t_is "$(lmq-ioctl configure $D $M/img 16 0)" OK "$mode: attach (direct I/O)"
	[ "$mode" = stock ] || lmq_mode 0 $mode || t_fail "$mode: set mode"
	timeout 180 fio --name=fill --filename=$D --rw=randwrite --bs=64k --ioengine=libaio \
		--iodepth=8 --direct=1 --numjobs=4 --size=16M --offset_increment=16M \
		--group_reporting >$W/fio.out 2>&1
	rc=$?
	[ $rc != 124 ] && t_ok "$mode: 4 writers on a full fs end (fio exit $rc)" || t_fail "$mode: fio hung"
	nospc=$(grep -c 'No space left on device' $W/fio.out)
	eio=$(grep -c 'Input/output error' $W/fio.out)
	[ $rc != 0 ] && [ "$nospc" -gt 0 ] && [ "$eio" = 0 ] && t_ok "$mode: writers got ENOSPC ($nospc reports), no EIO" ||
		{ t_fail "$mode: rc=$rc ENOSPC=$nospc EIO=$eio"; grep -i 'err' $W/fio.out | head -n 5 | sed 's/^/#   /'; }
	fallocate -p -o $((1 << 20)) -l $((62 << 20)) $M/img && sync
	dd if=$W/d of=$D bs=64k seek=$((32 * 16)) oflag=direct conv=fsync status=none
	t_is "$?" 0 "$mode: write after freeing space"
	t_is "$(dd if=$D bs=64k skip=$((32 * 16)) count=16 iflag=direct status=none | sha256sum)" \
		"$(sha256sum <$W/d)" "$mode: and it reads back"
	t_is "$(lmq-ioctl clr-fd $D)" OK "$mode: detach"
done
lmq_wait_gone $(lmq_sys 0)/loop/backing_file 30 || t_fail "still bound"
umount $M
lmq_unload; t_is "$?" 0 "$LMQ_MOD unloads"
t_done

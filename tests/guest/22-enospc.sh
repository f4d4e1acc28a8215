#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# 22-enospc: when the backing filesystem is full, a write through the device
# fails with ENOSPC for the submitter ("No space left on device", not EIO),
# and the device works again once space is freed: earlier data intact, new
# writes land.  Backings: a sparse file on a small tmpfs (buffered) and on a
# small ext4 (direct I/O).  The stock loop driver reports ENOSPC only on its
# direct-I/O (aio) path on 6.1; its 6.1 buffered path turns every error into
# EIO, so for stock loop buffered cells on 6.1 EIO is what we expect (6.12's
# stock driver gives ENOSPC there too).
DESCRIPTION="a full backing file system gives the submitter ENOSPC, and recovery"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

M=/mnt/t22
mkdir -p $M/tmpfs $M/ext4
mount -t tmpfs -o size=8M tmpfs $M/tmpfs || { fail "tmpfs"; stop_testing; }
# a 12 MiB ext4 at the start of vda (via a partition-less slice: mkfs -F with a size)
mkfs.ext4 -q -F -b 4096 -O ^has_journal /dev/vda 3072 >/dev/null && mount /dev/vda $M/ext4 ||
	{ fail "small ext4"; stop_testing; }
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)
head -c 2M /dev/urandom >/tmp/t22.head

for mode in $LMQ_MODES; do
	for fs in tmpfs ext4; do
		tag="$mode/$fs"
		F=$M/$fs/img dio=off
		[ $fs = ext4 ] && dio=on
		rm -f $F $M/$fs/filler; truncate -s 64M $F
		$LOSETUP --direct-io=$dio $D $F || { fail "$tag: attach"; continue; }
		lmq_mode 0 "$mode" || fail "$tag: set mode"
		dd if=/tmp/t22.head of=$D bs=1M oflag=direct conv=fsync status=none ||
			fail "$tag: first 2 MiB"
		# fill the device past the filesystem's free space
		err=$(dd if=/dev/zero of=$D bs=64k seek=32 count=960 oflag=direct 2>&1 >/dev/null)
		rc=$?
		msg=$(echo "$err" | grep -o 'No space left on device\|Input/output error' | head -n1)
		want='No space left on device'
		# stock 6.1 maps buffered-path errors to EIO; 6.12's passes ENOSPC on
		case $(uname -r) in 6.1.*)
			[ "$LMQ_DRIVER" = loop ] && [ $dio = off ] && want='Input/output error' ;;
		esac
		if [ $rc -ne 0 ]; then is "$msg" "$want" "$tag: dd errno when the fs is full"
		else fail "$tag: dd did not fail on a full fs"; fi
		# free space, the device works again
		fallocate -p -o $((4 << 20)) -l $((60 << 20)) $F || fail "$tag: punch"
		sync
		check_quiet "$tag: write after space was freed" \
			dd if=/tmp/t22.head of=$D bs=1M seek=8 oflag=direct conv=fsync status=none
		is "$(dd if=$D bs=1M skip=8 count=2 iflag=direct status=none | sha256sum)" \
			"$(sha256sum </tmp/t22.head)" "$tag: new data reads back"
		is "$(dd if=$D bs=1M count=2 iflag=direct status=none | sha256sum)" \
			"$(sha256sum </tmp/t22.head)" "$tag: data written before ENOSPC intact"
		if lmq_is_mq; then
			diag "$tag stats: $(tr '\n' ' ' <$(lmq_sys 0)/loopmq/stats)"
			[ "$(lmq_stat 0 errors)" -gt 0 ] && pass "$tag: stats count the errors" ||
				fail "$tag: stats errors is 0 after ENOSPC"
			echo 0 >$(lmq_sys 0)/loopmq/stats
		fi
		$LOSETUP -d $D || fail "$tag: detach"
		rm -f $F
	done
done
umount $M/tmpfs $M/ext4
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 30-rotational: the device is rotational exactly when the device under its
# backing is: a file takes the flag of its file system's device (ext4 on
# /dev/vda, with vda's flag set to 1 and then 0), a file on a file system
# without one (tmpfs) is non-rotational, and a block device backing takes
# its own flag.  For files the stock loop driver, attached to the same
# file in the same boot, must answer the same (proving each case); for a
# block device backing its answer is only reported: stock 6.1 looks at the
# file system of the device node, which has no device, and says 0.
DESCRIPTION="the rotational flag comes from the backing's device, as with the stock driver"
requires() {
	lmq_needs_stock_loop
	require_cmd lmq-ioctl
	[ -w /sys/block/vda/queue/rotational ] || skip_all "no writable /sys/block/vda/queue/rotational"
}
. /tests/lib/guest.sh

rot=/sys/block/vda/queue/rotational
orig=$(cat $rot)
M=/mnt/t30
mkdir -p $M /tmp/t30
mkfs.ext4 -q -F /dev/vda && mount /dev/vda $M || { fail "ext4 on vda"; stop_testing; }
truncate -s 16M $M/img /tmp/t30/img

modprobe loop max_loop=1 || { fail "modprobe loop"; stop_testing; }
if lmq_is_mq; then
	lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
fi

# flag_of DEV BACKING: attach, read the device's rotational flag, detach
flag_of() {
	local f=ERR
	if [ "$(word1 "$(lmq-ioctl set-fd "$1" "$2" 2>/dev/null)")" = OK ]; then
		f=$(sysv "$1" queue/rotational)
		lmq-ioctl clr-fd "$1" >/dev/null 2>&1
	fi
	echo "$f"
}

for r in 1 0; do
	echo $r >$rot
	s=$(flag_of /dev/loop0 $M/img)
	is "$s" $r "stock loop: file on ext4 on vda (rotational $r)"
	lmq_is_mq && is "$(flag_of "$(lmq_dev 0)" $M/img)" "$s" \
		"$LMQ_NAME: file on ext4 on vda (rotational $r)"
done
s=$(flag_of /dev/loop0 /tmp/t30/img)
is "$s" 0 "stock loop: file on tmpfs"
lmq_is_mq && is "$(flag_of "$(lmq_dev 0)" /tmp/t30/img)" 0 "$LMQ_NAME: file on tmpfs"

umount $M || { fail "umount $M"; stop_testing; }
for r in 1 0; do
	echo $r >$rot
	diag "stock loop over /dev/vda itself (rotational $r): $(flag_of /dev/loop0 /dev/vda)"
	lmq_is_mq && is "$(flag_of "$(lmq_dev 0)" /dev/vda)" $r \
		"$LMQ_NAME: block device backing (rotational $r)"
done
echo "$orig" >$rot
done_testing

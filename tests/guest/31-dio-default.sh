#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 31-dio-default: with dio_default=1 an attach that does not ask for direct
# I/O gets it wherever the backing allows it at the device's block size
# and offset, buffered I/O elsewhere, and says which in the DIO column of
# util-linux `losetup -l` and in loop/dio: a file on ext4 (direct), a file
# on tmpfs (direct only where tmpfs opens files O_DIRECT: 6.6 and later),
# a device with 4 KiB sectors under a 512-byte offset (buffered) and at
# offset 0 with 4 KiB blocks (direct).  The data read back equals what was
# written in each case.  dio_default=0 keeps the stock driver's choice
# (buffered), and LOOP_SET_DIRECT_IO 0 still turns it off.
DESCRIPTION="dio_default=1: direct I/O at attach wherever the backing allows it"
requires() {
	lmq_needs_stock_loop
	lmq_is_mq || skip_all "dio_default is a loopmq parameter"
	require_cmd lmq-ioctl
	[ -n "$LOSETUP" ] || skip_all "util-linux losetup not found"
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

M=/mnt/t31 T=/tmp/t31
mkdir -p $M $T
mkfs.ext4 -q -F /dev/vda && mount /dev/vda $M || { fail "ext4 on vda"; stop_testing; }
truncate -s 16M $M/img $T/img $M/img4k
head -c 4M /dev/urandom >$T/data
# the 4 KiB-sector device: the stock driver with -b 4096 over a file
modprobe loop max_loop=1 || { fail "modprobe loop"; stop_testing; }
$LOSETUP -b 4096 /dev/loop0 $M/img4k || { fail "4 KiB-sector stock loop device"; stop_testing; }

# case_ NAME WANT BACKING [OPTIONS...]: attach with util-linux losetup
# (no --direct-io), compare losetup -l's DIO and loop/dio with WANT, write
# and read back 4 MiB, detach
case_() {
	local name=$1 want=$2 b=$3 d
	shift 3
	d=$(lmq_dev 0)
	if ! $LOSETUP "$@" "$d" "$b"; then
		fail "$name: losetup $* $d $b"
		return
	fi
	is "$($LOSETUP -l -n -O DIO "$d" | tr -d ' ')" "$want" "$name: losetup -l DIO"
	is "$(sysv "$d" loop/dio)" "$want" "$name: loop/dio"
	dd if=$T/data of="$d" bs=64k oflag=direct conv=fsync status=none
	echo 3 >/proc/sys/vm/drop_caches
	is "$(head -c 4M "$d" | sha256sum)" "$(sha256sum <$T/data)" "$name: data read back"
	$LOSETUP -d "$d"
	unbound "$d" "$name: detached"
}

lmq_load 1 dio_default=1 || { fail "load $LMQ_MOD dio_default=1"; stop_testing; }
case_ "ext4 file" 1 $M/img
# tmpfs takes O_DIRECT since 6.6: expect what an O_DIRECT open says
tw=0
dd if=$T/img of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null && tw=1
diag "tmpfs opens files O_DIRECT: $tw"
case_ "tmpfs file" $tw $T/img
case_ "4 KiB-sector device, offset 512" 0 /dev/loop0 -o 512
case_ "4 KiB-sector device, 4 KiB blocks" 1 /dev/loop0 -b 4096
# LOOP_SET_DIRECT_IO still decides afterwards
D=$(lmq_dev 0)
$LOSETUP $D $M/img && is "$(sysv $D loop/dio)" 1 "attached with direct I/O"
is "$(lmq-ioctl set-dio $D 0)" OK "LOOP_SET_DIRECT_IO 0"
is "$(sysv $D loop/dio)" 0 "buffered after LOOP_SET_DIRECT_IO 0"
$LOSETUP -d $D
unbound $D "detached"
lmq_unload

lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
is "$(cat /sys/module/$LMQ_MOD/parameters/dio_default)" N "dio_default is N by default"
case_ "dio_default=0: ext4 file" 0 $M/img
$LOSETUP -d /dev/loop0
done_testing

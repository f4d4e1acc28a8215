#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 24-capacity: LOOP_SET_CAPACITY follows a grown (and shrunk) backing file;
# lo_offset and lo_sizelimit are honoured: the device's byte 0 is the file's
# byte OFFSET, the size is min(file - offset, sizelimit), writes land there,
# and I/O past the end is refused or short.  Checked in every mode.
DESCRIPTION="LOOP_SET_CAPACITY, lo_offset and lo_sizelimit in every mode"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
}
. /tests/lib/guest.sh

F=/tmp/t24.img
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)
size() { blockdev --getsize64 $D; }

for mode in $LMQ_MODES; do
	rm -f $F; truncate -s 16M $F
	$LOSETUP $D $F || { fail "$mode: attach"; continue; }
	lmq_mode 0 $mode || fail "$mode: set mode"
	is "$(size)" $((16 << 20)) "$mode: size 16 MiB"
	truncate -s 24M $F
	is "$(size)" $((16 << 20)) "$mode: size unchanged before LOOP_SET_CAPACITY"
	is "$(lmq-ioctl set-capacity $D)" OK "$mode: LOOP_SET_CAPACITY"
	is "$(size)" $((24 << 20)) "$mode: size follows the grown file"
	is "$(cat $(lmq_sys 0)/size)" $((24 << 11)) "$mode: sysfs size (sectors)"
	echo TAILDATA | dd of=$D bs=512 seek=$(((24 << 11) - 1)) oflag=direct conv=fsync status=none
	is "$(dd if=$F bs=512 skip=$(((24 << 11) - 1)) count=1 status=none | head -c 8)" TAILDATA \
		"$mode: last sector of the grown device lands in the file"
	is "$(lmq-ioctl pwrite $D $((24 << 20)) 4096 direct)" ENOSPC "$mode: write at the end is refused"
	truncate -s 8M $F
	is "$(lmq-ioctl set-capacity $D)" OK "$mode: LOOP_SET_CAPACITY after shrink"
	is "$(size)" $((8 << 20)) "$mode: size follows the shrunk file"
	$LOSETUP -d $D

	# offset and sizelimit
	rm -f $F; head -c 16M /dev/urandom >$F
	is "$(lmq-ioctl configure $D $F 0 0 1048576 4194304)" OK "$mode: LOOP_CONFIGURE offset=1M sizelimit=4M"
	lmq_mode 0 $mode || fail "$mode: set mode"
	is "$(size)" $((4 << 20)) "$mode: size is sizelimit"
	is "$(cat $(lmq_sys 0)/loop/offset) $(cat $(lmq_sys 0)/loop/sizelimit)" "1048576 4194304" \
		"$mode: sysfs offset and sizelimit"
	is "$(dd if=$D bs=1M count=4 iflag=direct status=none | sha256sum)" \
		"$(dd if=$F bs=1M skip=1 count=4 status=none | sha256sum)" "$mode: device = file[1M, 5M)"
	echo OFFSETW_ | dd of=$D bs=4k oflag=direct conv=fsync status=none
	is "$(dd if=$F bs=1M skip=1 count=1 status=none | head -c 8)" OFFSETW_ "$mode: write at 0 lands at file offset 1M"
	before=$(dd if=$F bs=1M skip=5 count=1 status=none | sha256sum)
	is "$(lmq-ioctl pread $D $((4 << 20)) 4096 direct)" "OK n=0" "$mode: read at sizelimit returns 0 bytes"
	is "$(lmq-ioctl pread $D $((4 << 20)) 4096)" "OK n=0" "$mode: buffered read at sizelimit returns 0 bytes"
	lmq-ioctl pwrite $D $((4 << 20)) 4096 direct >/dev/null 2>&1
	is "$(dd if=$F bs=1M skip=5 count=1 status=none | sha256sum)" "$before" "$mode: file past sizelimit untouched"
	is "$(lmq-ioctl set-status $D 2097152 1048576 0)" OK "$mode: LOOP_SET_STATUS64 offset=2M sizelimit=1M"
	is "$(size)" $((1 << 20)) "$mode: size follows the new sizelimit"
	is "$(dd if=$D bs=1M count=1 iflag=direct status=none | sha256sum)" \
		"$(dd if=$F bs=1M skip=2 count=1 status=none | sha256sum)" "$mode: device = file[2M, 3M)"
	is "$(lmq-ioctl get-status $D | awk '{ print $2, $3 }')" "offset=2097152 sizelimit=1048576" \
		"$mode: LOOP_GET_STATUS64 offset and sizelimit"
	$LOSETUP -d $D
done
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# 85-nowait-backing: a backing whose device does not take REQ_NOWAIT.
#
# dm-flakey (always up here) stands for dm-crypt, dm-thin and most
# device-mapper targets: their queues do not take REQ_NOWAIT, and
# submit_bio_noacct() ends a REQ_NOWAIT bio to them BLK_STS_NOTSUPP.  A
# direct read or write with IOCB_NOWAIT puts REQ_NOWAIT on its bios, and
# FMODE_NOWAIT on the file says nothing of the device (6.1 sets it on every
# block device; ext4 on every file).  loopmq must read the capability from
# the device and take an EOPNOTSUPP from a NOWAIT attempt as "again
# without NOWAIT", never as an I/O error.  In every mode, fio writes then
# verifies with no error and loopmq counts none:
#  - the dm device itself as the backing, direct I/O, with the remap path
#    off (parameter remap=0: every request through the file) and on with
#    the backing's page cache holding the range (blkid or udev having read
#    it: such requests take the file path);
#  - a file on ext4 on the dm device, direct I/O;
#  - then, for both, the table is reloaded as dm-linear (which takes
#    REQ_NOWAIT) and back to dm-flakey under a bound device: the
#    capability read at attach goes stale, and EOPNOTSUPP (through the
#    file) and BLK_STS_NOTSUPP (a clone) must still be retried.
DESCRIPTION="backings whose device does not take REQ_NOWAIT (dm-flakey): no I/O error"
requires() {
	require_cmd lmq-ioctl fio blockdev
	[ -b /dev/vda ] || skip_all "no /dev/vda"
	modprobe dm-mod 2>/dev/null; modprobe dm-flakey 2>/dev/null
	command -v dmsetup >/dev/null && [ -c /dev/mapper/control ] ||
		skip_all "no device-mapper"
}
. /tests/lib/guest.sh

W=/tmp/t85 M=/mnt/t85 DM=t85 MB=1048576 SZ=24
mkdir -p $W $M
SECT=$((512 * 2048))
echo "0 $SECT flakey /dev/vda 0 3600 0" >$W/flakey
echo "0 $SECT linear /dev/vda 0" >$W/linear
dms create $DM $W/flakey || { fail "dmsetup create (dm-flakey)"; stop_testing; }
MD=/dev/mapper/$DM
[ -b $MD ] || MD=/dev/$(basename "$(readlink -f /sys/block/dm-0)")
settable() { dms suspend --nolockfs $DM && dms load $DM "$1" && dms resume $DM; }
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)
RP=/sys/module/loopmq/parameters/remap

fio_verify() {	# fio_verify TAG: write then verify, no error anywhere
	local tag=$1 e0 out
	e0=$(lmq_stat0 0 errors)
	out=$(fio --name=nw --filename=$D --ioengine=libaio --direct=1 --iodepth=16 \
		--rw=randwrite --bsrange=4k-64k --size=$((SZ * MB)) --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --output-format=terse 2>&1)
	if [ $? = 0 ]; then
		pass "$tag: fio write then verify"
	else
		fail "$tag: fio write then verify"
		echo "$out" | grep -v '^3;' | tail -n 6 | sed 's/^/#   /'
	fi
	is "$(lmq_stat0 0 errors)" "$e0" "$tag: no request failed"
}
cache_backing() { dd if=$MD of=/dev/null bs=1M count=$SZ status=none; }
# no_attempt TAG: no NOWAIT attempt was made (each failed one is retried
# and counted as fb_eagain): the capability is read from the device
no_attempt() {
	lmq_is_mq || return 0
	is "$(lmq_stat 0 fb_eagain)" 0 "$1: no NOWAIT attempt on a device without REQ_NOWAIT"
}

# ---- the dm device as the backing
is "$(lmq-ioctl configure $D $MD 16 0)" OK "attach $MD with direct I/O"
for mode in $LMQ_MODES; do
	[ "$mode" = stock ] || lmq_mode 0 $mode || fail "$mode: set mode"
	if [ -w $RP ]; then
		echo 0 >$RP
		fio_verify "$mode, block device, remap=0"
		echo 1 >$RP
	fi
	cache_backing
	fio_verify "$mode, block device, its page cache full"
	no_attempt "$mode, block device"
done
# The capability changes under the bound device: dm-linear takes
# REQ_NOWAIT, and the device reads that when its I/O settings change;
# then dm-flakey again, which does not.  Through the file (remap=0) and
# as clones (remap=1, the page cache emptied).
settable $W/linear || fail "load the dm-linear table"
is "$(lmq-ioctl set-dio $D 0)" OK "block device: buffered, then"
is "$(lmq-ioctl set-dio $D 1)" OK "block device: direct I/O again: NOWAIT read from dm-linear"
settable $W/flakey || fail "load the dm-flakey table again"
for mode in $LMQ_MODES; do
	[ "$mode" = stock ] || lmq_mode 0 $mode || fail "$mode: set mode"
	if [ -w $RP ]; then
		echo 0 >$RP
		fio_verify "$mode, block device, table reloaded under it, remap=0"
		echo 1 >$RP
	fi
	blockdev --flushbufs $MD
	echo 3 >/proc/sys/vm/drop_caches
	fio_verify "$mode, block device, table reloaded under it"
done
is "$(lmq-ioctl clr-fd $D)" OK "detach $MD"
lmq_wait_gone /sys/block/${D##*/}/loop/backing_file || fail "$D still bound"

# ---- a file on ext4 on it
mkfs.ext4 -q -F $MD >/dev/null && mount $MD $M || { fail "ext4 on $MD"; stop_testing; }
dd if=/dev/zero of=$M/img bs=1M count=$SZ conv=fsync status=none
is "$(lmq-ioctl configure $D $M/img 16 0)" OK "attach a file on ext4 on $MD, direct I/O"
# the reloads above made NOWAIT attempts that were retried: count anew
lmq_is_mq && echo 0 >$(lmq_sys 0)/loopmq/stats
for mode in $LMQ_MODES; do
	[ "$mode" = stock ] || lmq_mode 0 $mode || fail "$mode: set mode"
	fio_verify "$mode, file on ext4"
	no_attempt "$mode, file on ext4"
done
# The capability changes under the bound device: linear takes REQ_NOWAIT,
# then flakey again, which does not.
settable $W/linear || fail "load the dm-linear table"
is "$(lmq-ioctl set-dio $D 0)" OK "buffered, then"
is "$(lmq-ioctl set-dio $D 1)" OK "direct I/O again: NOWAIT read from dm-linear"
settable $W/flakey || fail "load the dm-flakey table again"
for mode in $LMQ_MODES; do
	[ "$mode" = stock ] || lmq_mode 0 $mode || fail "$mode: set mode"
	fio_verify "$mode, file on ext4, table reloaded under it"
done
is "$(lmq-ioctl clr-fd $D)" OK "detach the file"
lmq_wait_gone /sys/block/${D##*/}/loop/backing_file || fail "$D still bound"
umount $M
dms remove $DM || fail "dmsetup remove"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 44-loopmqctl-busy: loopmqctl with a file system on the device.  mkfs,
# mount, files written and read back after a remount; -d and -D on a
# mounted device do what the stock loop driver does (LOOP_CLR_FD on an
# open device succeeds and sets autoclear: the device stays bound until the
# last close, then detaches itself); -c grows a mounted device; -j finds it.
# timeout: 300
DESCRIPTION="loopmqctl with a mounted file system on the device: -d, -D, -c, -j"
requires() {
	[ -n "$LOOPMQCTL" ] || skip_all "no loopmqctl in the guest"
	require_cmd mkfs.ext4 e2fsck
}
. /tests/lib/guest.sh

W=/tmp/t44
M=/mnt/t44
mkdir -p $W $M
cleanup() {
	umount $M 2>/dev/null
	lmq_detach_all
	rm -rf $W
}
trap cleanup EXIT
lmq_load || { fail "load $LMQ_MOD"; stop_testing; }

F=$W/fs.img
truncate -s 64M $F
D=$("$LOOPMQCTL" -f --show $F) || { fail "attach $F"; stop_testing; }
check "mkfs.ext4 on $D" mkfs.ext4 -q -F $D
check "mount $D" mount $D $M
head -c 3M /dev/urandom >$W/data
cp $W/data $M/data && sync
is "$("$LOOPMQCTL" -j $F | cut -d: -f1)" "$D" "-j finds the mounted device"
check "umount" umount $M
check "mount again" mount $D $M
check "the file reads back after a remount" cmp -s $W/data $M/data

# -d on a mounted device: deferred, like loop
run "$LOOPMQCTL" -d $D
is "$rc" 0 "-d on a mounted device exits 0 (deferred detach)"
is "$(sysv $D loop/backing_file)" "$F" "it is still bound while mounted"
is "$("$LOOPMQCTL" -l -n -O AUTOCLEAR $D | tr -d ' ')" 1 "and marked autoclear"
[ -n "$LOSETUP" ] && is "$("$LOSETUP" -l -n -O AUTOCLEAR $D | tr -d ' ')" 1 "losetup sees autoclear too"
check "the file system still works" cmp -s $W/data $M/data
check "umount" umount $M
for _ in $(seq 30); do bound $D || break; sleep 0.1; done
unbound $D "after the last close the device detached itself"
check "the image is a clean file system" e2fsck -f -n $F

# -c on a mounted device
D=$("$LOOPMQCTL" -f --show $F)
mount $D $M
truncate -s 96M $F
check "-c on a mounted device" "$LOOPMQCTL" -c $D
is "$(blockdev --getsize64 $D)" $((96 << 20)) "-c: the mounted device grew"

# -D with a mounted device and an idle one
D2=$("$LOOPMQCTL" -f --show -r $F)
check "-D with a mounted device" "$LOOPMQCTL" -D
unbound $D2 "-D detached the idle device"
is "$(sysv $D loop/backing_file)" "$F" "-D left the mounted one bound (deferred)"
umount $M
for _ in $(seq 30); do bound $D || break; sleep 0.1; done
unbound $D "it detached itself on umount"

done_testing

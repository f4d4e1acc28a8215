#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 44-loopmqctl-busy: loopmqctl with a file system on the device.  mkfs,
# mount, files written and read back after a remount; -d and -D on a
# mounted device do what the stock loop driver does (LOOP_CLR_FD on an
# open device succeeds and sets autoclear: the device stays bound until the
# last close, then detaches itself); -c grows a mounted device; -j finds it.
# timeout: 300
# ---- BEGIN loopmqctl preamble (identical in tests/guest/4x-*.sh)
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
. /tests/lib/tap.sh
LMQ_DRIVER=${LMQ_DRIVER:-$(sed -n 's/.*lmq_driver=\([a-z]*\).*/\1/p' /proc/cmdline 2>/dev/null)}
LMQ_DRIVER=${LMQ_DRIVER:-loopmq}
if [ "$LMQ_DRIVER" = loop ]; then
	P=loop MOD=loop
	export LOOPMQCTL_PREFIX=loop
else
	P=loopmq MOD=loopmq
	unset LOOPMQCTL_PREFIX
fi
CTL=$(command -v loopmqctl) || skip_all "no loopmqctl in the guest"
LOSETUP=
for l in /usr/sbin/losetup /sbin/losetup /usr/bin/losetup /bin/losetup; do
	[ -x "$l" ] && "$l" --version 2>/dev/null | grep -q util-linux && { LOSETUP=$l; break; }
done
is_mq() { [ "$P" = loopmq ]; }
# run CMD...: $out (stdout), $err (stderr), $rc
run() {
	local e
	e=$(mktemp)
	out=$("$@" 2>"$e")
	rc=$?
	err=$(cat "$e")
	rm -f "$e"
	return 0
}
# sysv DEV REL: /sys/block/<dev>/REL
sysv() { cat "/sys/block/${1##*/}/$2" 2>/dev/null; }
bound() { [ -e "/sys/block/${1##*/}/loop/backing_file" ]; }
# unbound DEV DESC: pass when DEV has no backing file
unbound() { if bound "$1"; then fail "$2" "$1 is bound"; else pass "$2"; fi; }
# nbound: how many of our devices are bound
nbound() {
	local d n=0
	for d in /sys/block/$P[0-9]*; do [ -e "$d/loop/backing_file" ] && n=$((n + 1)); done
	echo $n
}
# snapshot: every device of ours with its binding, mode, ro and block
# size (one grep: forks are slow under TCG)
snapshot() {
	grep -s . /sys/block/$P[0-9]*/{dev,ro,loop/backing_file,loop/offset,loop/sizelimit,loopmq/mode,queue/logical_block_size} |
		sort
}
detach_all_ours() {
	local d
	for d in /sys/block/$P[0-9]*; do
		[ -e "$d/loop/backing_file" ] && "$CTL" -d "/dev/${d##*/}" 2>/dev/null
	done
	return 0
}
load_driver() {
	modprobe "$MOD" "$@" || skip_all "cannot load $MOD"
	for _ in $(seq 50); do [ -c /dev/$P-control ] && break; sleep 0.1; done
	[ -c /dev/$P-control ] || skip_all "no /dev/$P-control"
}
# ---- END loopmqctl preamble

W=/tmp/t44
M=/mnt/t44
mkdir -p $W $M
cleanup() {
	umount $M 2>/dev/null
	detach_all_ours
	rm -rf $W
}
trap cleanup EXIT
require_cmd mkfs.ext4 e2fsck
load_driver

F=$W/fs.img
truncate -s 64M $F
D=$("$CTL" -f --show $F) || skip_all "cannot attach"
check "mkfs.ext4 on $D" mkfs.ext4 -q -F $D
check "mount $D" mount $D $M
head -c 3M /dev/urandom >$W/data
cp $W/data $M/data && sync
is "$("$CTL" -j $F | cut -d: -f1)" "$D" "-j finds the mounted device"
check "umount" umount $M
check "mount again" mount $D $M
check "the file reads back after a remount" cmp -s $W/data $M/data

# -d on a mounted device: deferred, like loop
run "$CTL" -d $D
is "$rc" 0 "-d on a mounted device exits 0 (deferred detach)"
is "$(sysv $D loop/backing_file)" "$F" "it is still bound while mounted"
is "$("$CTL" -l -n -O AUTOCLEAR $D | tr -d ' ')" 1 "and marked autoclear"
[ -n "$LOSETUP" ] && is "$("$LOSETUP" -l -n -O AUTOCLEAR $D | tr -d ' ')" 1 "losetup sees autoclear too"
check "the file system still works" cmp -s $W/data $M/data
check "umount" umount $M
for _ in $(seq 30); do bound $D || break; sleep 0.1; done
unbound $D "after the last close the device detached itself"
check "the image is a clean file system" e2fsck -f -n $F

# -c on a mounted device
D=$("$CTL" -f --show $F)
mount $D $M
truncate -s 96M $F
check "-c on a mounted device" "$CTL" -c $D
is "$(blockdev --getsize64 $D)" $((96 << 20)) "-c: the mounted device grew"

# -D with a mounted device and an idle one
D2=$("$CTL" -f --show -r $F)
check "-D with a mounted device" "$CTL" -D
unbound $D2 "-D detached the idle device"
is "$(sysv $D loop/backing_file)" "$F" "-D left the mounted one bound (deferred)"
umount $M
for _ in $(seq 30); do bound $D || break; sleep 0.1; done
unbound $D "it detached itself on umount"

done_testing

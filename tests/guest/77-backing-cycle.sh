#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 90
# 77-backing-cycle: a device must not become its own backing through a file
# system or a stock loop device, not only through other loopmq devices.
# Such a cycle makes every I/O wait for itself.  Refused with EBADF, the
# errno loopmq answers for a pure loopmq cycle (checked first, for
# reference: LOOP_CHANGE_FD of loopmq0 to /dev/loopmq0, LOOP_CONFIGURE of
# loopmq1 with /dev/loopmq1).
#
# The chains (X, X2: equal 64 MiB copies of an ext4 image on ext4 on vda,
# holding a sparse 64 MiB file y; loopmq0 read-only on X, its ext4 mounted
# read-only, so y lives on loopmq0):
#   B  LOOP_CHANGE_FD loopmq0 -> y               (y is on loopmq0 itself)
#   A  LOOP_CHANGE_FD loopmq0 -> /dev/loop0 -> y (a stock loop device on y)
#   C  LOOP_CONFIGURE loopmq1 -> /dev/loop2 -> /dev/loopmq1 (stock loop
#      bound to the then unbound loopmq1)
# LOOP_CHANGE_FD is allowed on a read-only device to a file of equal size,
# so each refusal can only come from the cycle check; the controls show it:
# loopmq0 -> X2, loopmq0 -> /dev/loop1 -> X2, loopmq1 -> /dev/loop1 -> X2
# and loopmq1 -> /dev/loop3 -> /dev/loopmq0 (a stock loop device over
# another loopmq device) are all accepted.  B runs before A: a wrongly
# accepted LOOP_CHANGE_FD under a mounted file system marks the disk dead
# (6.6+), which shuts that file system down, and y could not be opened any
# more; each wrong acceptance is undone at once (back to X, or for C, to an
# empty file, which breaks the reference cycle between loopmq1 and loop2).
# The old code (5a6ccec) accepted A, B and C: it followed only chains of
# loopmq block devices.
DESCRIPTION="LOOP_CHANGE_FD that would close a cycle through stock loop is refused"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	lmq_is_mq || skip_all "loopmq only: the stock driver detects cycles of loop devices only"
	[ -b /dev/vda ] || skip_all "no /dev/vda"
	require_module loop
	lmq_needs_stock_loop
}
. /tests/lib/guest.sh

M=/mnt/t77
mkdir -p $M/low $M/x $M/up
lmq_load 2 || { fail "load $LMQ_MOD"; stop_testing; }
D0=$(lmq_dev 0) D1=$(lmq_dev 1)
for i in 0 1 2 3; do [ -b /dev/loop$i ] || mknod /dev/loop$i b 7 $i; done
ioc() { lmq-ioctl "$@" 2>&1 | head -n 1; }
bound() { [ -e "$(lmq_sys $1)/loop/backing_file" ]; }

setup() {
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/vda 256M &&
		mount /dev/vda $M/low && truncate -s 64M $M/low/x &&
		$LOSETUP $D1 $M/low/x && mkfs.ext4 -q -F -O ^has_journal $D1 &&
		mount $D1 $M/x && truncate -s 64M $M/x/y && umount $M/x &&
		$LOSETUP -d $D1 && lmq_wait_gone "$(lmq_sys 1)/loop/backing_file" &&
		cp --sparse=always $M/low/x $M/low/x2 && sync &&
		$LOSETUP -r $D0 $M/low/x && $LOSETUP -r /dev/loop1 $M/low/x2
}
check_quiet "images X, X2 (ext4 holding a sparse 64 MiB y); $LMQ_NAME""0 read-only on X" setup || stop_testing
is "$(cat $(lmq_sys 0)/ro)" 1 "$LMQ_NAME""0 is read-only"

# for reference: loopmq's own errno for a cycle of loopmq devices
is "$(ioc -r change-fd $D0 ro:$D0)" EBADF "pure loopmq cycle: LOOP_CHANGE_FD to itself is EBADF"
is "$(ioc configure $D1 ro:$D1 0 0)" EBADF "pure loopmq cycle: LOOP_CONFIGURE with itself is EBADF"
bound 1 && { fail "$LMQ_NAME""1 was bound to itself"; ioc clr-fd $D1 >/dev/null; }

# controls: nothing but the cycle can refuse A, B or C
is "$(ioc -r change-fd $D0 ro:$M/low/x2)" OK "control: LOOP_CHANGE_FD to X2 (equal size)"
is "$(ioc -r change-fd $D0 ro:/dev/loop1)" OK "control: LOOP_CHANGE_FD to /dev/loop1 (stock loop on X2)"
is "$(ioc -r change-fd $D0 ro:$M/low/x)" OK "control: LOOP_CHANGE_FD back to X"
is "$(ioc configure $D1 ro:/dev/loop1 0 0)" OK "control: LOOP_CONFIGURE with /dev/loop1 (stock loop on X2)"
ioc clr-fd $D1 >/dev/null; lmq_wait_gone "$(lmq_sys 1)/loop/backing_file" || fail "control: detach $LMQ_NAME""1"
check "stock loop3 on $D0" $LOSETUP -r /dev/loop3 $D0
is "$(ioc configure $D1 ro:/dev/loop3 0 0)" OK "control: LOOP_CONFIGURE with /dev/loop3 (stock loop on $LMQ_NAME""0)"
ioc clr-fd $D1 >/dev/null; lmq_wait_gone "$(lmq_sys 1)/loop/backing_file" || fail "control: detach $LMQ_NAME""1"
$LOSETUP -d /dev/loop3

# y on the file system on loopmq0, and a stock loop device on y
check "mount $D0 read-only" mount -o ro $D0 $M/up
check "stock loop0 on y (a file on $LMQ_NAME""0)" $LOSETUP -r /dev/loop0 $M/up/y
is "$(blockdev --getsize64 /dev/loop0)" "$(blockdev --getsize64 $D0)" "/dev/loop0 and $D0 have equal sizes"

undo0() { [ "$1" = OK ] && ioc -r change-fd $D0 ro:$M/low/x >/dev/null; }
r=$(ioc -r change-fd $D0 ro:$M/up/y)
is "$r" EBADF "B: LOOP_CHANGE_FD $LMQ_NAME""0 -> y on $LMQ_NAME""0 is refused (EBADF)"
undo0 "$r"
r=$(ioc -r change-fd $D0 ro:/dev/loop0)
is "$r" EBADF "A: LOOP_CHANGE_FD $LMQ_NAME""0 -> /dev/loop0 -> y on $LMQ_NAME""0 is refused (EBADF)"
undo0 "$r"
is "$(dd if=$D0 bs=4k count=1 iflag=direct status=none | wc -c)" 4096 "$LMQ_NAME""0 still reads"

# C: stock loop2 bound to the unbound loopmq1, then loopmq1 onto loop2
check "stock loop2 on the unbound $D1" lmq-ioctl -r configure /dev/loop2 ro:$D1 1 0
r=$(ioc configure $D1 ro:/dev/loop2 0 0)
is "$r" EBADF "C: LOOP_CONFIGURE $LMQ_NAME""1 with /dev/loop2 -> $LMQ_NAME""1 is refused (EBADF)"
if bound 1; then
	: >/tmp/t77.empty
	ioc -r change-fd $D1 ro:/tmp/t77.empty >/dev/null
	ioc clr-fd $D1 >/dev/null
fi
$LOSETUP -d /dev/loop2
lmq_wait_gone "$(lmq_sys 1)/loop/backing_file" || fail "$LMQ_NAME""1 detaches"

$LOSETUP -d /dev/loop0 /dev/loop1
sleep 0.2
umount $M/up && $LOSETUP -d $D0 && lmq_wait_gone "$(lmq_sys 0)/loop/backing_file" && umount $M/low
is "$?" 0 "tear down"
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 21-readonly: a read-only device refuses writes with the stock driver's
# errno and still reads the backing data.  Read-only comes from losetup -r,
# from a read-only backing fd (LOOP_SET_FD), from LOOP_CONFIGURE's
# LO_FLAGS_READ_ONLY, and from a file on a read-only mount.  Each case also
# runs on the stock loop driver in the same boot and must give the same words.
DESCRIPTION="a read-only device refuses writes with the stock driver's errno"
requires() {
	lmq_needs_stock_loop
	require_cmd lmq-ioctl lmq-stats fio
}
. /tests/lib/guest.sh

W=/tmp/t21 RO=/mnt/t21ro
mkdir -p $W $RO
head -c 4M /dev/urandom >$W/img
mount -t tmpfs -o size=16M tmpfs $RO && cp $W/img $RO/img && mount -o remount,ro $RO ||
	{ fail "read-only tmpfs mount"; stop_testing; }
WANT=$(sha256sum <$W/img)

modprobe loop max_loop=2 || { fail "modprobe loop"; stop_testing; }
lmq_is_mq && { lmq_load 2 || { fail "load $LMQ_MOD"; stop_testing; }; }

r() { word1 "$(lmq-ioctl "$@" 2>/dev/null)"; }

# probe DEV: the outcome words of every write path, plus ro state and data.
probe() {
	local d=$1 n=${1##*/}
	echo "ro=$(cat /sys/block/$n/ro) getro=$(blockdev --getro $d)"
	echo "flags=$(lmq-ioctl get-status $d | sed -n 's/.* flags=\([0-9]*\).*/\1/p')"
	echo "open_rw=$(r open $d)"
	echo "pwrite=$(r pwrite $d 0 4096)"
	echo "pwrite_direct=$(r pwrite $d 4096 4096 direct)"
	echo "discard=$(r discard $d 0 65536)"
	echo "zeroout=$(r zeroout $d 0 65536)"
	echo "dd=$(dd if=/dev/zero of=$d bs=4k count=1 oflag=direct 2>&1 >/dev/null |
		grep -o 'Operation not permitted\|Read-only file system\|Permission denied\|Input/output error' | head -n1)"
	echo "data=$([ "$(sha256sum <$d)" = "$WANT" ] && echo same || echo DIFFERENT)"
}
c_losetup_r()  { $LOSETUP -r ${P}0 $W/img && probe ${P}0; $LOSETUP -d ${P}0; }
c_ro_fd()      { r set-fd ${P}0 ro:$W/img >/dev/null && probe ${P}0; r clr-fd ${P}0 >/dev/null; }
c_cfg_ro()     { r configure ${P}0 $W/img 1 0 >/dev/null && probe ${P}0; r clr-fd ${P}0 >/dev/null; }
c_ro_mount()   { $LOSETUP ${P}0 $RO/img 2>/dev/null && probe ${P}0; $LOSETUP -d ${P}0; }
c_ro_devnode() {	# a rw device opened O_RDONLY by the writer
	$LOSETUP ${P}0 $W/img && echo "pwrite_on_rdonly_fd=$(r -r pwrite ${P}0 0 4096)" &&
		echo "ro=$(cat /sys/block/${P##*/}0/ro)"; $LOSETUP -d ${P}0
}

for c in losetup_r ro_fd cfg_ro ro_mount ro_devnode; do
	stock=$(P=/dev/loop c_$c)
	diag "stock $c: $(echo $stock)"
	case $c in
	ro_devnode)
		is "$(echo $stock)" "pwrite_on_rdonly_fd=EBADF ro=0" "stock loop: $c" ;;
	*)
		echo "$stock" | grep -q '^ro=1 getro=1$' && pass "stock loop: $c is read-only" ||
			fail "stock loop: $c not read-only"
		echo "$stock" | grep -q '^flags=[0-9]*$' &&
			[ $(( $(echo "$stock" | sed -n 's/^flags=//p') & 1 )) = 1 ] &&
			pass "stock loop: $c has LO_FLAGS_READ_ONLY" ||
			fail "stock loop: $c lacks LO_FLAGS_READ_ONLY"
		echo "$stock" | grep -q '^pwrite=E' && pass "stock loop: $c refuses write(2)" ||
			fail "stock loop: $c accepted write(2)"
		echo "$stock" | grep -q '^data=same$' && pass "stock loop: $c reads the file" ||
			fail "stock loop: $c data differs" ;;
	esac
	if lmq_is_mq; then
		got=$(P=$LMQ_PREFIX c_$c)
		if [ "$got" = "$stock" ]; then pass "$LMQ_NAME: $c same as stock"; else
			fail "$LMQ_NAME: $c differs from stock"
			diff <(echo "$stock") <(echo "$got") | sed 's/^/#   /'
		fi
	fi
done
is "$(sha256sum <$W/img)" "$WANT" "backing file unchanged"

# Clearing the read-only state is not possible through LOOP_SET_STATUS64.
c_status_clear_ro() {
	r configure ${P}0 $W/img 1 0 >/dev/null
	r set-status ${P}0 0 0 0 >/dev/null
	echo "ro=$(cat /sys/block/${P##*/}0/ro) pwrite=$(r pwrite ${P}0 0 4096)"
	r clr-fd ${P}0 >/dev/null
}
stock=$(P=/dev/loop c_status_clear_ro)
diag "stock status_clear_ro: $stock"
case $stock in ro=1\ pwrite=E*) pass "stock loop: SET_STATUS64 cannot clear read-only" ;;
	*) fail "stock loop: SET_STATUS64 cleared read-only: $stock" ;; esac
lmq_is_mq && is "$(P=$LMQ_PREFIX c_status_clear_ro)" "$stock" "$LMQ_NAME: status_clear_ro same as stock"
is "$(sha256sum <$W/img)" "$WANT" "backing file still unchanged"

umount $RO
lmq_is_mq && { lmq_unload; is "$?" 0 "$LMQ_MOD unloads"; }
modprobe -r loop
done_testing

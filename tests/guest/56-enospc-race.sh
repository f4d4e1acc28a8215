#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 56-enospc-race: four fio writers (QD8 each) fill a device whose backing
# file lives on a small ext4 (direct I/O to the file), in every mode: the
# writers must fail with ENOSPC (never EIO), nothing may hang; after space is
# freed, writes work again and read back.  (22-enospc covers the single-
# writer and buffered cases.)
# timeout: 400
# ---- BEGIN lmq preamble (identical in every tests/guest/1x-3x script)
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The driver under test: loopmq, or the stock loop driver to validate the
# test itself (LMQ_DRIVER=loop in the environment, or lmq_driver=loop on
# the guest's kernel command line).  Same script, same ABI.
LMQ_DRIVER=${LMQ_DRIVER:-$(sed -n 's/.*lmq_driver=\([a-z]*\).*/\1/p' /proc/cmdline 2>/dev/null)}
LMQ_DRIVER=${LMQ_DRIVER:-loopmq}
if [ "$LMQ_DRIVER" = loop ]; then
	LMQ_MOD=loop LMQ_NAME=loop LMQ_CTL=/dev/loop-control
	LMQ_MODES=${LMQ_MODES:-stock}
else
	LMQ_MOD=loopmq LMQ_NAME=loopmq LMQ_CTL=/dev/loopmq-control
	LMQ_MODES=${LMQ_MODES:-direct kthread aio auto}
fi
LMQ_PREFIX=/dev/$LMQ_NAME
LOSETUP=$(command -v losetup)
T_N=0 T_PASS=0 T_FAIL=0
t_ok()   { T_N=$((T_N + 1)); T_PASS=$((T_PASS + 1)); echo "ok $T_N - $*"; }
t_fail() { T_N=$((T_N + 1)); T_FAIL=$((T_FAIL + 1)); echo "not ok $T_N - $*"; }
t_skip() { T_N=$((T_N + 1)); T_PASS=$((T_PASS + 1)); echo "ok $T_N - # SKIP $*"; }
t_diag() { echo "# $*"; }
# t_is GOT WANT DESC: pass when GOT equals WANT.
t_is() {
	if [ "$1" = "$2" ]; then t_ok "$3 ($1)"; else t_fail "$3: got '$1', want '$2'"; fi
}
# t_run DESC CMD...: pass when CMD exits 0; its output is shown on failure.
t_run() {
	local d=$1 out rc
	shift
	out=$("$@" 2>&1); rc=$?
	if [ $rc -eq 0 ]; then t_ok "$d"; else
		t_fail "$d (exit $rc)"; printf '%s\n' "$out" | tail -n 25 | sed 's/^/#   /'; fi
	return $rc
}
t_done() {
	echo "1..$T_N"
	echo "$T_PASS passed, $T_FAIL failed"
	[ "$T_FAIL" -eq 0 ]; exit $?
}
lmq_is_mq()  { [ "$LMQ_DRIVER" != loop ]; }
lmq_dev()    { echo "$LMQ_PREFIX$1"; }
lmq_sys()    { echo "/sys/block/$LMQ_NAME$1"; }
# lmq_load NR [PARAM=V...]: load the driver with NR devices (max_part=,
# mode= are passed through; mode= is dropped for the stock driver).
lmq_load() {
	local nr=$1 p args=()
	shift
	for p in "$@"; do
		case $p in mode=*) lmq_is_mq && args+=("$p") ;; *) args+=("$p") ;; esac
	done
	if lmq_is_mq; then
		modprobe loopmq nr_devices="$nr" "${args[@]}" || return 1
	else
		modprobe loop max_loop="$nr" "${args[@]}" || return 1
	fi
	udevadm settle 2>/dev/null
	[ -b "$(lmq_dev $((nr - 1)))" ] && [ -c "$LMQ_CTL" ]
}
# lmq_detach_all: unbind every device of the driver under test.
lmq_detach_all() {
	local d
	for d in /sys/block/$LMQ_NAME[0-9]*; do
		[ -e "$d/loop/backing_file" ] || continue
		lmq-ioctl clr-fd "/dev/${d##*/}" >/dev/null 2>&1
	done
}
lmq_unload() { lmq_detach_all; sleep 0.2; modprobe -r "$LMQ_MOD" 2>/dev/null || rmmod "$LMQ_MOD"; }
# lmq_mode N MODE: switch device N's dispatch mode (no-op for stock loop).
lmq_mode() {
	lmq_is_mq || return 0
	echo "$2" >"$(lmq_sys "$1")/loopmq/mode" || return 1
	[ "$(cat "$(lmq_sys "$1")/loopmq/mode")" = "$2" ]
}
# lmq_stat N NAME: one counter of /sys/block/loopmqN/loopmq/stats.
lmq_stat() { awk -v k="$2" '$1 == k { print $2 }' "$(lmq_sys "$1")/loopmq/stats"; }
# lmq_wait_gone PATH [TENTHS]: wait for PATH to disappear.
lmq_wait_gone() {
	local i
	for ((i = 0; i < ${2:-50}; i++)); do [ -e "$1" ] || return 0; sleep 0.1; done
	return 1
}
[ -x "$(command -v lmq-ioctl)" ] || { echo "1..0 # SKIP lmq-ioctl not installed"; exit 77; }
t_diag "driver under test: $LMQ_DRIVER ($LMQ_PREFIX*), kernel $(uname -r)"
# ---- END lmq preamble

[ -b /dev/vda ] || { echo "1..0 # SKIP no /dev/vda"; exit 77; }
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

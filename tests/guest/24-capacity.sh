#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 24-capacity: LOOP_SET_CAPACITY follows a grown (and shrunk) backing file;
# lo_offset and lo_sizelimit are honoured: the device's byte 0 is the file's
# byte OFFSET, the size is min(file - offset, sizelimit), writes land there,
# and I/O past the end is refused or short.  Checked in every mode.
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
. /tests/lib/tap.sh
# thin names over tap.sh (pass/fail/is/skip/diag/done_testing)
t_ok()   { pass "$*"; }
t_fail() { fail "$*"; }
t_skip() { skip "$1" "${2:-}"; }
t_diag() { diag "$*"; }
# t_is GOT WANT DESC: pass when GOT equals WANT (returns 1 otherwise).
t_is()   { if [ "$1" = "$2" ]; then pass "$3 ($1)"; else fail "$3" "got '$1', want '$2'"; fi; }
# t_run DESC CMD...: pass when CMD exits 0; its output is shown on failure.
t_run() {
	local d=$1 out rc
	shift
	out=$("$@" 2>&1); rc=$?
	if [ $rc -eq 0 ]; then pass "$d"; else
		fail "$d" "exit $rc"; printf '%s\n' "$out" | tail -n 25 | sed 's/^/#   /'; fi
	return $rc
}
t_done() { done_testing; exit $?; }
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
require_cmd lmq-ioctl lmq-stats fio
t_diag "driver under test: $LMQ_DRIVER ($LMQ_PREFIX*), kernel $(uname -r)"
# ---- END lmq preamble

F=/tmp/t24.img
lmq_load 1 || { t_fail "load $LMQ_MOD"; t_done; }
D=$(lmq_dev 0)
size() { blockdev --getsize64 $D; }

for mode in $LMQ_MODES; do
	rm -f $F; truncate -s 16M $F
	$LOSETUP $D $F || { t_fail "$mode: attach"; continue; }
	lmq_mode 0 $mode || t_fail "$mode: set mode"
	t_is "$(size)" $((16 << 20)) "$mode: size 16 MiB"
	truncate -s 24M $F
	t_is "$(size)" $((16 << 20)) "$mode: size unchanged before LOOP_SET_CAPACITY"
	t_is "$(lmq-ioctl set-capacity $D)" OK "$mode: LOOP_SET_CAPACITY"
	t_is "$(size)" $((24 << 20)) "$mode: size follows the grown file"
	t_is "$(cat $(lmq_sys 0)/size)" $((24 << 11)) "$mode: sysfs size (sectors)"
	echo TAILDATA | dd of=$D bs=512 seek=$(((24 << 11) - 1)) oflag=direct conv=fsync status=none
	t_is "$(dd if=$F bs=512 skip=$(((24 << 11) - 1)) count=1 status=none | head -c 8)" TAILDATA \
		"$mode: last sector of the grown device lands in the file"
	t_is "$(lmq-ioctl pwrite $D $((24 << 20)) 4096 direct)" ENOSPC "$mode: write at the end is refused"
	truncate -s 8M $F
	t_is "$(lmq-ioctl set-capacity $D)" OK "$mode: LOOP_SET_CAPACITY after shrink"
	t_is "$(size)" $((8 << 20)) "$mode: size follows the shrunk file"
	$LOSETUP -d $D

	# offset and sizelimit
	rm -f $F; head -c 16M /dev/urandom >$F
	t_is "$(lmq-ioctl configure $D $F 0 0 1048576 4194304)" OK "$mode: LOOP_CONFIGURE offset=1M sizelimit=4M"
	lmq_mode 0 $mode || t_fail "$mode: set mode"
	t_is "$(size)" $((4 << 20)) "$mode: size is sizelimit"
	t_is "$(cat $(lmq_sys 0)/loop/offset) $(cat $(lmq_sys 0)/loop/sizelimit)" "1048576 4194304" \
		"$mode: sysfs offset and sizelimit"
	t_is "$(dd if=$D bs=1M count=4 iflag=direct status=none | sha256sum)" \
		"$(dd if=$F bs=1M skip=1 count=4 status=none | sha256sum)" "$mode: device = file[1M, 5M)"
	echo OFFSETW_ | dd of=$D bs=4k oflag=direct conv=fsync status=none
	t_is "$(dd if=$F bs=1M skip=1 count=1 status=none | head -c 8)" OFFSETW_ "$mode: write at 0 lands at file offset 1M"
	before=$(dd if=$F bs=1M skip=5 count=1 status=none | sha256sum)
	t_is "$(lmq-ioctl pread $D $((4 << 20)) 4096 direct)" "OK n=0" "$mode: read at sizelimit returns 0 bytes"
	t_is "$(lmq-ioctl pread $D $((4 << 20)) 4096)" "OK n=0" "$mode: buffered read at sizelimit returns 0 bytes"
	lmq-ioctl pwrite $D $((4 << 20)) 4096 direct >/dev/null 2>&1
	t_is "$(dd if=$F bs=1M skip=5 count=1 status=none | sha256sum)" "$before" "$mode: file past sizelimit untouched"
	t_is "$(lmq-ioctl set-status $D 2097152 1048576 0)" OK "$mode: LOOP_SET_STATUS64 offset=2M sizelimit=1M"
	t_is "$(size)" $((1 << 20)) "$mode: size follows the new sizelimit"
	t_is "$(dd if=$D bs=1M count=1 iflag=direct status=none | sha256sum)" \
		"$(dd if=$F bs=1M skip=2 count=1 status=none | sha256sum)" "$mode: device = file[2M, 3M)"
	t_is "$(lmq-ioctl get-status $D | awk '{ print $2, $3 }')" "offset=2097152 sizelimit=1048576" \
		"$mode: LOOP_GET_STATUS64 offset and sizelimit"
	$LOSETUP -d $D
done
lmq_unload; t_is "$?" 0 "$LMQ_MOD unloads"
t_done

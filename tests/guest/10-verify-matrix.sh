#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# 10-verify-matrix: fio crc32c verify (write-then-verify, and a mixed randrw
# with verify_backlog) in every mode x backing x logical block size:
#   backing: file on ext4 (/dev/vda), file on xfs (/dev/vda), a raw block
#            device (brd /dev/ram0) -- all with direct I/O on -- and a
#            buffered file on tmpfs;
#   logical block size 512 and 4096 (LOOP_CONFIGURE block_size).
# Every cell must finish with no fio error and no verify mismatch, and the
# device must report the requested block size and dio state.
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

[ -b /dev/vda ] || { echo "1..0 # SKIP no /dev/vda"; exit 77; }
M=/mnt/t10
mkdir -p $M
modprobe brd rd_nr=1 rd_size=32768 || { t_fail "modprobe brd"; t_done; }
lmq_load 1 || { t_fail "load $LMQ_MOD"; t_done; }
D=$(lmq_dev 0) S=$(lmq_sys 0)

cell() {	# cell MODE BACKING-PATH DIO LBS TAG
	local mode=$1 b=$2 dio=$3 lbs=$4 tag="$5/$1/lbs=$4" flags=0 out
	[ $dio = 1 ] && flags=16
	t_is "$(lmq-ioctl configure $D $b $flags $lbs)" OK "$tag: LOOP_CONFIGURE dio=$dio" || return
	lmq_mode 0 $mode || t_fail "$tag: set mode"
	[ -b $D ] || { t_fail "$tag: $D is not a block device"; return; }
	t_is "$(cat $S/queue/logical_block_size) $(cat $S/loop/dio)" "$lbs $dio" "$tag: block size, dio"
	out=$(fio --name=wv --filename=$D --ioengine=libaio --direct=1 --iodepth=8 \
		--rw=randwrite --bsrange=$lbs-64k --size=4M --verify=crc32c --do_verify=1 \
		--verify_fatal=1 --output-format=terse 2>&1)
	[ $? = 0 ] && t_ok "$tag: write then verify" ||
		{ t_fail "$tag: write then verify"; echo "$out" | tail -n 8 | sed 's/^/#   /'; }
	out=$(fio --name=rw --filename=$D --ioengine=libaio --direct=1 --iodepth=8 \
		--rw=randrw --bs=$((lbs > 4096 ? lbs : 4096)) --size=4M --io_size=3M \
		--verify=crc32c --verify_backlog=32 --verify_fatal=1 --output-format=terse 2>&1)
	[ $? = 0 ] && t_ok "$tag: randrw with verify_backlog" ||
		{ t_fail "$tag: randrw with verify_backlog"; echo "$out" | tail -n 8 | sed 's/^/#   /'; }
	if [ $lbs = 4096 ]; then	# a 512-byte direct read must be refused
		t_is "$(lmq-ioctl pread $D 512 512 direct)" EINVAL "$tag: 512 B O_DIRECT refused"
	fi
	if lmq_is_mq; then
		t_is "$(lmq_stat 0 errors)" 0 "$tag: stats errors"
	fi
	t_is "$(lmq-ioctl clr-fd $D)" OK "$tag: LOOP_CLR_FD"
}

backings() {	# run every mode x lbs on one backing
	local tag=$1 b=$2 dio=$3 mode lbs
	for mode in $LMQ_MODES; do
		for lbs in 512 4096; do
			cell $mode $b $dio $lbs $tag
		done
	done
}

if mkfs.ext4 -q -F /dev/vda && mount /dev/vda $M && truncate -s 24M $M/img; then
	backings ext4 $M/img 1; umount $M
else t_fail "ext4 backing setup"; fi
if mkfs.xfs -q -f /dev/vda && mount /dev/vda $M && truncate -s 24M $M/img; then
	backings xfs $M/img 1; umount $M
else t_fail "xfs backing setup"; fi
backings brd /dev/ram0 1
if mount -t tmpfs -o size=40M tmpfs $M && truncate -s 24M $M/img; then
	backings tmpfs $M/img 0; umount $M
else t_fail "tmpfs backing setup"; fi
lmq_unload; t_is "$?" 0 "$LMQ_MOD unloads"
modprobe -r brd
t_done

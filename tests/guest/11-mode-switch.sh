#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# 11-mode-switch: the dispatch mode is switched through sysfs every ~250 ms
# while two verifying fio jobs run on disjoint halves of the device (a
# write-then-verify job and a randrw job with verify_backlog): no mismatch,
# no I/O error, every switch accepted and visible, and every path the modes
# use carried requests.  Backings: a direct-I/O file on ext4 and a buffered
# file on tmpfs.  Against the stock loop driver only the fio part runs.
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

[ -b /dev/vda ] || skip_all "no /dev/vda"
M=/mnt/t11 W=/tmp/t11
mkdir -p $M $W
mkfs.ext4 -q -F /dev/vda && mount /dev/vda $M || { t_fail "ext4 on vda"; t_done; }
lmq_load 1 || { t_fail "load $LMQ_MOD"; t_done; }
D=$(lmq_dev 0) S=$(lmq_sys 0)

switcher() {	# until $W/stop exists: cycle the modes, count switches and errors
	local n=0 bad=0 m
	local order=(direct aio kthread auto aio direct auto kthread)
	while [ ! -e $W/stop ]; do
		m=${order[n % 8]}
		if echo $m >$S/loopmq/mode && [ "$(cat $S/loopmq/mode)" = $m ]; then :; else bad=$((bad + 1)); fi
		n=$((n + 1))
		sleep 0.25
	done
	echo "$n $bad" >$W/switches
}

for b in ext4 tmpfs; do
	if [ $b = ext4 ]; then F=$M/img dio=on; else F=$W/img dio=off; fi
	rm -f $F; truncate -s 32M $F
	$LOSETUP --direct-io=$dio $D $F || { t_fail "$b: attach"; continue; }
	lmq_is_mq && echo 0 >$S/loopmq/stats
	rm -f $W/stop $W/switches
	lmq_is_mq && { switcher & swpid=$!; }
	fio --output-format=terse --ioengine=libaio --direct=1 --filename=$D \
		--name=wv --rw=randwrite --bs=4k --offset=0 --size=8M --iodepth=8 --loops=3 \
		--verify=crc32c --do_verify=1 --verify_fatal=1 \
		--name=rw --rw=randrw --bsrange=4k-64k --offset=16M --size=8M --iodepth=8 \
		--time_based --runtime=8 --verify=crc32c --verify_backlog=16 --verify_fatal=1 \
		>$W/fio.out 2>&1
	rc=$?
	touch $W/stop
	lmq_is_mq && wait $swpid
	t_is "$rc" 0 "$b: both verifying fio jobs pass while the mode changes"
	[ $rc = 0 ] || tail -n 20 $W/fio.out | sed 's/^/#   /'
	# a final full read-back of the write-then-verify region
	t_run "$b: verify-only pass over the first job's data" fio --output-format=terse \
		--ioengine=libaio --direct=1 --filename=$D --name=wv --rw=randwrite --bs=4k \
		--offset=0 --size=8M --iodepth=8 --verify=crc32c --verify_only=1 --verify_fatal=1
	if lmq_is_mq; then
		read -r n bad <$W/switches
		[ "$n" -ge 8 ] && t_ok "$b: $n mode switches during the run" ||
			t_fail "$b: only $n mode switches"
		t_is "$bad" 0 "$b: every switch accepted and shown"
		st=$(cat $S/loopmq/stats)
		t_diag "$b stats: $(echo $st)"
		t_is "$(lmq_stat 0 errors)" 0 "$b: stats errors"
		[ "$(lmq_stat 0 inline)" -gt 0 ] && t_ok "$b: inline path used" || t_fail "$b: inline is 0"
		[ "$(lmq_stat 0 kthread)" -gt 0 ] && t_ok "$b: kthread path used" || t_fail "$b: kthread is 0"
		if [ $dio = on ]; then
			[ $(($(lmq_stat 0 aio_inline) + $(lmq_stat 0 aio_async))) -gt 0 ] &&
				t_ok "$b: aio paths used" || t_fail "$b: aio_inline + aio_async is 0"
		fi
	fi
	$LOSETUP -d $D || t_fail "$b: detach"
done
umount $M
lmq_unload; t_is "$?" 0 "$LMQ_MOD unloads"
t_done

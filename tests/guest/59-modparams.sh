#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 59-modparams: modprobe with a bad value of any module parameter fails and
# leaves nothing loaded; boundary values load, show in
# /sys/module/loopmq/parameters, give working devices, and unload.
# timeout: 300
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

lmq_is_mq || { echo "1..0 # SKIP loopmq-only parameters"; exit 77; }
W=/tmp/t59
mkdir -p $W
truncate -s 8M $W/img
head -c 1M /dev/urandom >$W/d
BAD=(mode=bogus mode= mode=DIRECT mode=direct,aio nr_devices=-1 nr_devices=1025
	nr_devices=abc nr_devices=1x max_part=-1 max_part=256 max_part=abc
	hw_queue_depth=0 hw_queue_depth=4097 hw_queue_depth=-1 hw_queue_depth=
	nr_hw_queues=-1 nr_hw_queues=1025 nr_hw_queues=abc stack_reserve=100
	stack_reserve=1023 stack_reserve=abc stack_reserve=99999999999 nr_devices=4294967296)
for p in "${BAD[@]}"; do
	if modprobe $LMQ_MOD "$p" 2>/dev/null; then
		t_fail "modprobe $LMQ_MOD $p succeeded"
		modprobe -r $LMQ_MOD
	else
		grep -q "^$LMQ_MOD " /proc/modules && { t_fail "$p: failed but the module is loaded"; modprobe -r $LMQ_MOD; } ||
			t_ok "modprobe $LMQ_MOD $p fails"
	fi
done

# boundary values that must work: PARAMS, then the value to expect in sysfs
GOOD=("nr_devices=0" "nr_devices=1024 max_part=255" "hw_queue_depth=1"
	"hw_queue_depth=4096 nr_hw_queues=1" "nr_hw_queues=64" "stack_reserve=1024"
	"mode=kthread" "mode=aio nr_devices=2" "mode=direct max_part=15")
for g in "${GOOD[@]}"; do
	if ! modprobe $LMQ_MOD $g; then t_fail "modprobe $LMQ_MOD $g"; continue; fi
	bad=
	for kv in $g; do
		k=${kv%%=*} v=${kv#*=}
		got=$(cat /sys/module/$LMQ_MOD/parameters/$k 2>/dev/null)
		[ "$got" = "$v" ] || bad+=" $k=$got"
	done
	[ -z "$bad" ] && t_ok "$g loads and shows in parameters/" || t_fail "$g: parameters show$bad"
	D=$(lmq_dev 0)
	if [ "$g" = nr_devices=0 ]; then
		t_is "$(ls -d /sys/block/$LMQ_NAME[0-9]* 2>/dev/null | wc -l)" 0 "nr_devices=0: no device"
		t_is "$(lmq-ioctl ctl-add $LMQ_CTL 0)" OK "nr_devices=0: LOOP_CTL_ADD 0 works"
		udevadm settle 2>/dev/null; sleep 0.2
	fi
	if [ "$g" = "nr_devices=1024 max_part=255" ]; then
		t_is "$(ls -d /sys/block/$LMQ_NAME[0-9]* | wc -l)" 1024 "1024 devices"
		D=$(lmq_dev 1023)
	fi
	if [ -b $D ] && [ "$(lmq-ioctl set-fd $D $W/img)" = OK ]; then
		dd if=$W/d of=$D bs=64k oflag=direct conv=fsync status=none
		t_is "$(dd if=$D bs=64k count=16 iflag=direct status=none | sha256sum)" "$(sha256sum <$W/d)" \
			"$g: $D reads back"
		lmq-ioctl clr-fd $D >/dev/null
	else
		t_fail "$g: cannot attach $D"
	fi
	lmq_unload; t_is "$?" 0 "$g: unloads"
done
t_done

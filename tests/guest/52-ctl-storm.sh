#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 52-ctl-storm: LOOP_CTL_ADD / LOOP_CTL_REMOVE / LOOP_CTL_GET_FREE from three
# processes over the same indexes, opens of devices being added and removed,
# attach/detach of the same devices from several processes, and rmmod
# attempts all at once.  Only the documented errnos may appear, nothing may
# hang, rmmod must always be refused; afterwards every extra device can be
# removed, every device is unbound and the module unloads.
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

command -v lmq-hammer >/dev/null || { echo "1..0 # SKIP lmq-hammer not installed"; exit 77; }
W=/tmp/t52
T=${STORM_SECONDS:-20}
mkdir -p $W
lmq_load 4 || { t_fail "load $LMQ_MOD"; t_done; }
exec 7<$LMQ_CTL		# holds the module: every rmmod must fail
for i in 1 2 3 4; do truncate -s 4M $W/f$i; done

pids=() outs=()
start() {	# start NAME lmq-hammer-args...
	local n=$1
	shift
	lmq-hammer "$@" >$W/h.$n 2>&1 &
	pids+=($!) outs+=($n)
}
for i in 1 2 3; do start ctl$i -t $T -s $i ctl $LMQ_CTL 4 15; done
start att0a -t $T attach $(lmq_dev 0) $W/f1
start att0b -t $T attach $(lmq_dev 0) $W/f2
start att1a -t $T attach $(lmq_dev 1) $W/f3
start att1b -t $T attach $(lmq_dev 1) $W/f4
# opens of devices that come and go: ENOENT (no node) and ENXIO (being removed)
start open5 -t $T -a ENOENT,ENXIO openclose $(lmq_dev 5)
start open6 -t $T -a ENOENT,ENXIO openclose $(lmq_dev 6)
start open2 -t $T openclose $(lmq_dev 2)
start rmmod -t $T rmmod $LMQ_MOD

ctl_ok=0 att_ok=0 cycles=0
for k in "${!pids[@]}"; do
	wait ${pids[$k]}; rc=$?
	n=${outs[$k]}
	line=$(cat $W/h.$n)
	t_diag "$n: $line"
	ok=$(sed -n 's/.* iterations, \([0-9]*\) ok.*/\1/p' $W/h.$n)
	ok=${ok:-0}
	t_is "$rc" 0 "$n: no unexpected errno, no hang"
	case $n in
	ctl*) ctl_ok=$((ctl_ok + ok)) ;;
	att*) att_ok=$((att_ok + ok)) ;;
	esac
	[ $n = rmmod ] || cycles=$((cycles + ok))
done
[ $ctl_ok -ge 100 ] && t_ok "control storm: $ctl_ok successful ADD/REMOVE/GET_FREE" ||
	t_fail "control storm: only $ctl_ok successful ADD/REMOVE/GET_FREE"
[ $att_ok -ge 20 ] && t_ok "attach storm: $att_ok successful attaches+detaches" ||
	t_fail "attach storm: only $att_ok successful attaches+detaches"
t_diag "storm cycles: $cycles"
exec 7<&-

# remove every extra device; each must go away
left=0
for d in /sys/block/$LMQ_NAME[0-9]*; do
	[ -e "$d" ] || continue
	i=${d##*/$LMQ_NAME}
	case $i in *[!0-9]*) continue;; esac
	[ "$i" -ge 4 ] || continue
	r=$(lmq-ioctl ctl-remove $LMQ_CTL $i 2>/dev/null | head -n1)
	[ "$r" = OK ] || { t_diag "ctl-remove $i: $r"; left=$((left + 1)); }
done
t_is "$left" 0 "every extra device removed"
n=$(ls -d /sys/block/$LMQ_NAME[0-9]* 2>/dev/null | wc -l)
t_is "$n" 4 "the 4 load-time devices remain"
nb=0
for d in /sys/block/$LMQ_NAME[0-9]*; do [ -e $d/loop/backing_file ] && nb=$((nb + 1)); done
t_is "$nb" 0 "every device unbound"
# each device still attaches
for i in 0 1 2 3; do
	r=$(lmq-ioctl set-fd $(lmq_dev $i) $W/f1)$(lmq-ioctl clr-fd $(lmq_dev $i))
	t_is "$r" OKOK "$(lmq_dev $i) attaches and detaches after the storm"
done
lmq_unload; t_is "$?" 0 "$LMQ_MOD unloads"
t_is "$(ls -d /sys/block/$LMQ_NAME[0-9]* 2>/dev/null | wc -l)" 0 "no $LMQ_NAME disk left after unload"
t_done

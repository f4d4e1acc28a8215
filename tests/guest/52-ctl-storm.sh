#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 52-ctl-storm: LOOP_CTL_ADD / LOOP_CTL_REMOVE / LOOP_CTL_GET_FREE from three
# processes over the same indexes, opens of devices being added and removed,
# attach/detach of the same devices from several processes, and rmmod
# attempts all at once.  Only the documented errnos may appear, nothing may
# hang, rmmod must always be refused; afterwards every extra device can be
# removed, every device is unbound and the module unloads.
# timeout: 400
DESCRIPTION="LOOP_CTL_ADD/REMOVE/GET_FREE, opens, attaches and rmmod all at once"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	command -v lmq-hammer >/dev/null || skip_all "lmq-hammer not installed"
}
. /tests/lib/guest.sh

W=/tmp/t52
T=${STORM_SECONDS:-20}
mkdir -p $W
lmq_load 4 || { fail "load $LMQ_MOD"; stop_testing; }
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
	diag "$n: $line"
	ok=$(sed -n 's/.* iterations, \([0-9]*\) ok.*/\1/p' $W/h.$n)
	ok=${ok:-0}
	is "$rc" 0 "$n: no unexpected errno, no hang"
	case $n in
	ctl*) ctl_ok=$((ctl_ok + ok)) ;;
	att*) att_ok=$((att_ok + ok)) ;;
	esac
	[ $n = rmmod ] || cycles=$((cycles + ok))
done
[ $ctl_ok -ge 100 ] && pass "control storm: $ctl_ok successful ADD/REMOVE/GET_FREE" ||
	fail "control storm: only $ctl_ok successful ADD/REMOVE/GET_FREE"
[ $att_ok -ge 20 ] && pass "attach storm: $att_ok successful attaches+detaches" ||
	fail "attach storm: only $att_ok successful attaches+detaches"
diag "storm cycles: $cycles"
exec 7<&-

# remove every extra device; each must go away
left=0
for d in /sys/block/$LMQ_NAME[0-9]*; do
	[ -e "$d" ] || continue
	i=${d##*/$LMQ_NAME}
	case $i in *[!0-9]*) continue;; esac
	[ "$i" -ge 4 ] || continue
	r=$(lmq-ioctl ctl-remove $LMQ_CTL $i 2>/dev/null | head -n1)
	[ "$r" = OK ] || { diag "ctl-remove $i: $r"; left=$((left + 1)); }
done
is "$left" 0 "every extra device removed"
n=$(ls -d /sys/block/$LMQ_NAME[0-9]* 2>/dev/null | wc -l)
is "$n" 4 "the 4 load-time devices remain"
nb=0
for d in /sys/block/$LMQ_NAME[0-9]*; do [ -e $d/loop/backing_file ] && nb=$((nb + 1)); done
is "$nb" 0 "every device unbound"
# each device still attaches
for i in 0 1 2 3; do
	r=$(lmq-ioctl set-fd $(lmq_dev $i) $W/f1)$(lmq-ioctl clr-fd $(lmq_dev $i))
	is "$r" OKOK "$(lmq_dev $i) attaches and detaches after the storm"
done
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
is "$(ls -d /sys/block/$LMQ_NAME[0-9]* 2>/dev/null | wc -l)" 0 "no $LMQ_NAME disk left after unload"
done_testing

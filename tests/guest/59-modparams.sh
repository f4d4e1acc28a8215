#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 59-modparams: modprobe with a bad value of any module parameter fails and
# leaves nothing loaded; boundary values load, show in
# /sys/module/loopmq/parameters, give working devices, and unload.
# timeout: 300
DESCRIPTION="bad module parameter values are refused, boundary values work"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	lmq_is_mq || skip_all "loopmq-only parameters"
}
. /tests/lib/guest.sh

W=/tmp/t59
mkdir -p $W
truncate -s 8M $W/img
head -c 1M /dev/urandom >$W/d
BAD=(mode=bogus mode= mode=DIRECT mode=direct,aio nr_devices=-1 nr_devices=1025
	nr_devices=abc nr_devices=1x max_part=-1 max_part=256 max_part=abc
	hw_queue_depth=0 hw_queue_depth=4097 hw_queue_depth=-1 hw_queue_depth=
	nr_hw_queues=-1 nr_hw_queues=1025 nr_hw_queues=abc stack_reserve=100
	stack_reserve=1023 stack_reserve=abc stack_reserve=99999999999 nr_devices=4294967296
	nowait_adaptive=2 nowait_adaptive=abc stack_probe=maybe dio_default=2
	replace_loop=maybe "replace_loop=1 max_loop=-1" "replace_loop=1 max_loop=abc")
# max_loop without replace_loop (which replace mode's modprobe.d adds)
[ "$LMQ_DRIVER" = replace ] || BAD+=(max_loop=4)
for p in "${BAD[@]}"; do
	# unquoted: an entry may name two parameters
	# shellcheck disable=SC2086
	if modprobe $LMQ_MOD $p 2>/dev/null; then
		fail "modprobe $LMQ_MOD $p succeeded"
		modprobe -r $LMQ_MOD
	else
		grep -q "^$LMQ_MOD " /proc/modules && { fail "$p: failed but the module is loaded"; modprobe -r $LMQ_MOD; } ||
			pass "modprobe $LMQ_MOD $p fails"
	fi
done

# boundary values that must work: PARAMS, then the value to expect in sysfs
GOOD=("nr_devices=0" "nr_devices=1024 max_part=255" "hw_queue_depth=1"
	"hw_queue_depth=4096 nr_hw_queues=1" "nr_hw_queues=64" "stack_reserve=1024"
	"mode=kthread" "mode=aio nr_devices=2" "mode=direct max_part=15"
	"nowait_adaptive=N stack_probe=Y" "nowait_adaptive=Y stack_probe=N dio_default=Y")
for g in "${GOOD[@]}"; do
	if ! modprobe $LMQ_MOD $g; then fail "modprobe $LMQ_MOD $g"; continue; fi
	bad=
	for kv in $g; do
		k=${kv%%=*} v=${kv#*=}
		got=$(cat /sys/module/$LMQ_MOD/parameters/$k 2>/dev/null)
		[ "$got" = "$v" ] || bad+=" $k=$got"
	done
	[ -z "$bad" ] && pass "$g loads and shows in parameters/" || fail "$g: parameters show$bad"
	D=$(lmq_dev 0)
	if [ "$g" = nr_devices=0 ]; then
		is "$(ls -d /sys/block/$LMQ_NAME[0-9]* 2>/dev/null | wc -l)" 0 "nr_devices=0: no device"
		is "$(lmq-ioctl ctl-add $LMQ_CTL 0)" OK "nr_devices=0: LOOP_CTL_ADD 0 works"
		udevadm settle 2>/dev/null; sleep 0.2
	fi
	if [ "$g" = "nr_devices=1024 max_part=255" ]; then
		is "$(ls -d /sys/block/$LMQ_NAME[0-9]* | wc -l)" 1024 "1024 devices"
		D=$(lmq_dev 1023)
	fi
	if [ -b $D ] && [ "$(lmq-ioctl set-fd $D $W/img)" = OK ]; then
		dd if=$W/d of=$D bs=64k oflag=direct conv=fsync status=none
		is "$(dd if=$D bs=64k count=16 iflag=direct status=none | sha256sum)" "$(sha256sum <$W/d)" \
			"$g: $D reads back"
		lmq-ioctl clr-fd $D >/dev/null
	else
		fail "$g: cannot attach $D"
	fi
	lmq_unload; is "$?" 0 "$g: unloads"
done
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 25-bad-input: every documented bad input gets the stock loop driver's errno.
# Each case runs on the stock loop driver AND on the driver under test in the
# same boot: the stock result must equal the documented errno (proving the
# case) and the driver under test must give the same word.
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

W=/tmp/t25
mkdir -p $W/dir
truncate -s 8M $W/a; truncate -s 8M $W/b; truncate -s 4M $W/small
printf 'BBBBBBBB' | dd of=$W/b conv=notrunc status=none

modprobe loop max_loop=4 || { t_fail "modprobe loop"; t_done; }
if lmq_is_mq; then
	lmq_load 4 || { t_fail "load $LMQ_MOD"; t_done; }
fi

# r CMD ARGS...: run lmq-ioctl, print only the outcome word.
r() { lmq-ioctl "$@" 2>/dev/null | head -n1 | awk '{ print $1 }'; }
unbind() { local i; for i in 0 1 2 3; do r clr-fd "$P$i" >/dev/null; done; }

# Cases: each takes P (device prefix) and C (control node), leaves every
# device unbound, prints one word.
c_set_fd_bound()     { r set-fd ${P}0 $W/a >/dev/null; r set-fd ${P}0 $W/b; unbind; }
c_configure_bound()  { r set-fd ${P}0 $W/a >/dev/null; r configure ${P}0 $W/b 0 0; unbind; }
c_clr_unbound()      { r clr-fd ${P}0; }
c_get_unbound()      { r get-status ${P}0; }
c_set_status_unbound() { r set-status-raw ${P}0 0 0 0; }
c_bs_1000()          { r set-fd ${P}0 $W/a >/dev/null; r set-block-size ${P}0 1000; unbind; }
c_bs_8192()          { r set-fd ${P}0 $W/a >/dev/null; r set-block-size ${P}0 8192; unbind; }
c_bs_unbound()       { r set-block-size ${P}0 4096; }
c_dio_unbound()      { r set-dio ${P}0 1; }
c_capacity_unbound() { r set-capacity ${P}0; }
c_dir()              { r set-fd ${P}0 dir:$W/dir; unbind; }
c_pipe()             { r set-fd ${P}0 pipe; unbind; }
c_socket()           { r set-fd ${P}0 socket; unbind; }
c_badfd()            { r set-fd ${P}0 badfd; unbind; }
c_self()             { r set-fd ${P}0 ${P}0; unbind; }
c_unbound_backing()  { r set-fd ${P}0 ${P}1; unbind; }
c_cycle() {
	# P1 -> a (ro), P0 -> P1 (ro); changing P1's backing to P0 closes a loop.
	r configure ${P}1 ro:$W/a 1 0 >/dev/null
	r configure ${P}0 ro:${P}1 1 0 >/dev/null
	r -r change-fd ${P}1 ro:${P}0
	r clr-fd ${P}0 >/dev/null; unbind
}
c_cfg_flag2()        { r configure ${P}0 $W/a 2 0; unbind; }
c_cfg_flag_high()    { r configure ${P}0 $W/a 0x100 0; unbind; }
c_cfg_bs()           { r configure ${P}0 $W/a 0 1000; unbind; }
c_cfg_overflow()     { r configure ${P}0 $W/a 0 0 0x8000000000000000; unbind; }
c_status_overflow()  { r set-fd ${P}0 $W/a >/dev/null; r set-status ${P}0 0x8000000000000000 0 0; unbind; }
c_changefd_rw()      { r set-fd ${P}0 $W/a >/dev/null; r change-fd ${P}0 $W/b; unbind; }
c_changefd_unbound() { r change-fd ${P}0 $W/b; }
c_changefd_size()    { r configure ${P}0 ro:$W/a 1 0 >/dev/null; r -r change-fd ${P}0 ro:$W/small; unbind; }
c_changefd_ok() {
	local rc data
	r configure ${P}0 ro:$W/a 1 0 >/dev/null
	rc=$(r -r change-fd ${P}0 ro:$W/b)
	data=$(dd if=${P}0 bs=512 count=1 iflag=direct status=none 2>/dev/null | head -c 8)
	echo "$rc:$data"; unbind
}
c_ctl_remove_bound() { r set-fd ${P}2 $W/a >/dev/null; r ctl-remove $C 2; unbind; }
c_ctl_remove_open()  { local w; exec {w}<${P}3; r ctl-remove $C 3; exec {w}<&-; }
c_ctl_add_exist()    { r ctl-add $C 0; }
c_ctl_remove_missing() { r ctl-remove $C 77; }
c_ctl_remove_neg()   { r ctl-remove $C -1; }
c_ctl_add_remove() {
	local a b gone=no
	a=$(r ctl-add $C 9); [ -b ${P}9 ] && a="$a+node"
	b=$(r ctl-remove $C 9); lmq_wait_gone ${P}9 && gone=yes
	echo "$a,$b,gone=$gone"
}
c_ro_write() {	# write(2) to a read-only device
	r configure ${P}0 ro:$W/a 1 0 >/dev/null
	r pwrite ${P}0 0 4096; unbind
}

CASES=(
	"set_fd_bound EBUSY" "configure_bound EBUSY" "clr_unbound ENXIO"
	"get_unbound ENXIO" "set_status_unbound ENXIO" "bs_1000 EINVAL"
	"bs_8192 EINVAL" "bs_unbound ENXIO" "dio_unbound ENXIO"
	"capacity_unbound ENXIO" "dir EINVAL" "pipe EINVAL" "socket EINVAL"
	"badfd EBADF" "self EBADF" "unbound_backing EINVAL" "cycle EBADF"
	"cfg_flag2 EINVAL" "cfg_flag_high EINVAL" "cfg_bs EINVAL"
	"cfg_overflow EOVERFLOW" "status_overflow EOVERFLOW" "changefd_rw EINVAL"
	"changefd_unbound ENXIO" "changefd_size EINVAL" "changefd_ok OK:BBBBBBBB"
	"ctl_remove_bound EBUSY" "ctl_remove_open EBUSY" "ctl_add_exist EEXIST"
	"ctl_remove_missing ENODEV" "ctl_remove_neg EINVAL"
	"ctl_add_remove OK+node,OK,gone=yes" "ro_write EPERM"
)
for c in "${CASES[@]}"; do
	set -- $c
	stock=$(P=/dev/loop C=/dev/loop-control c_$1)
	t_is "$stock" "$2" "stock loop: $1"
	if lmq_is_mq; then
		got=$(P=$LMQ_PREFIX C=$LMQ_CTL c_$1)
		t_is "$got" "$stock" "$LMQ_NAME: $1 same as stock"
	fi
done

if lmq_is_mq; then
	D=$(lmq_dev 0) S=$(lmq_sys 0)/loopmq/mode
	t_is "$(r set-mode $D 9)" EINVAL "LOOPMQ_SET_MODE mode 9"
	t_is "$(r set-mode-flags $D direct 1)" EINVAL "LOOPMQ_SET_MODE nonzero flags"
	t_is "$(lmq-ioctl get-mode $D 2>/dev/null)" "OK $(cat $S)" "LOOPMQ_GET_MODE equals sysfs, reserved zeroed"
	for m in direct kthread aio auto; do
		r set-mode $D $m >/dev/null
		t_is "$(cat $S)" "$m" "LOOPMQ_SET_MODE $m shows in sysfs"
	done
	if echo bogus >$S 2>/dev/null; then t_fail "sysfs mode accepted 'bogus'"
	else t_ok "sysfs mode refuses 'bogus'"; fi
	t_is "$(cat $S)" auto "mode unchanged after a bad write"
	t_run "LOOPMQ_GET_STATS on an unbound device" lmq-stats $D
fi

unbind_all() { local p; for p in /dev/loop $LMQ_PREFIX; do P=$p unbind; done; }
unbind_all
lmq_is_mq && { modprobe -r loopmq; t_is "$?" 0 "$LMQ_MOD unloads"; }
modprobe -r loop
t_done

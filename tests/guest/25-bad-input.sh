#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 25-bad-input: every documented bad input gets the stock loop driver's errno.
# Each case runs on the stock loop driver AND on the driver under test in the
# same boot: the stock result must equal the documented errno (proving the
# case) and the driver under test must give the same word.
DESCRIPTION="every documented bad input gets the stock loop driver's errno"
requires() {
	lmq_needs_stock_loop
	require_cmd lmq-ioctl lmq-stats fio setpriv
}
. /tests/lib/guest.sh

W=/tmp/t25
mkdir -p $W/dir
truncate -s 8M $W/a; truncate -s 8M $W/b; truncate -s 4M $W/small
printf 'BBBBBBBB' | dd of=$W/b conv=notrunc status=none

modprobe loop max_loop=4 || { fail "modprobe loop"; stop_testing; }
if lmq_is_mq; then
	lmq_load 4 || { fail "load $LMQ_MOD"; stop_testing; }
fi

# r CMD ARGS...: run lmq-ioctl, print only the outcome word.
r() { word1 "$(lmq-ioctl "$@" 2>/dev/null)"; }
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
# The changing ioctls from a read-only open: EPERM without CAP_SYS_ADMIN
# (setpriv drops it from the bounding and inheritable sets), allowed with
# it; reading the status needs neither.
noadmin() { setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin -- "$@"; }
c_ro_changes() {
	local out=
	r set-fd ${P}0 $W/a >/dev/null
	out+=$(word1 "$(noadmin lmq-ioctl -r set-status ${P}0 0 0 0 2>/dev/null)"),
	out+=$(word1 "$(noadmin lmq-ioctl -r set-status-old ${P}0 0 0 2>/dev/null)"),
	out+=$(word1 "$(noadmin lmq-ioctl -r set-capacity ${P}0 2>/dev/null)"),
	out+=$(word1 "$(noadmin lmq-ioctl -r set-dio ${P}0 0 2>/dev/null)"),
	out+=$(word1 "$(noadmin lmq-ioctl -r set-block-size ${P}0 512 2>/dev/null)"),
	out+=$(word1 "$(noadmin lmq-ioctl -r get-status ${P}0 2>/dev/null)"),
	out+=$(r -r set-status ${P}0 0 0 0)
	echo "$out"; unbind
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
	"ro_changes EPERM,EPERM,EPERM,EPERM,EPERM,OK,OK"
)
for c in "${CASES[@]}"; do
	set -- $c
	if [ "$1" = socket ] && [ ! -e /proc/net/unix ]; then
		skip "socket" "this kernel has no AF_UNIX sockets"
		continue
	fi
	stock=$(P=/dev/loop C=/dev/loop-control c_$1)
	is "$stock" "$2" "stock loop: $1"
	if lmq_is_mq; then
		got=$(P=$LMQ_PREFIX C=$LMQ_CTL c_$1)
		is "$got" "$stock" "$LMQ_NAME: $1 same as stock"
	fi
done

if lmq_is_mq; then
	D=$(lmq_dev 0) S=$(lmq_sys 0)/loopmq/mode
	is "$(r set-mode $D 9)" EINVAL "LOOPMQ_SET_MODE mode 9"
	is "$(r set-mode-flags $D direct 1)" EINVAL "LOOPMQ_SET_MODE nonzero flags"
	is "$(lmq-ioctl get-mode $D 2>/dev/null)" "OK $(cat $S)" "LOOPMQ_GET_MODE equals sysfs, reserved zeroed"
	for m in direct kthread aio auto; do
		r set-mode $D $m >/dev/null
		is "$(cat $S)" "$m" "LOOPMQ_SET_MODE $m shows in sysfs"
	done
	if echo bogus >$S 2>/dev/null; then fail "sysfs mode accepted 'bogus'"
	else pass "sysfs mode refuses 'bogus'"; fi
	is "$(cat $S)" auto "mode unchanged after a bad write"
	check_quiet "LOOPMQ_GET_STATS on an unbound device" lmq-stats $D
fi

unbind_all() { local p; for p in /dev/loop $LMQ_PREFIX; do P=$p unbind; done; }
unbind_all
lmq_is_mq && { modprobe -r loopmq; is "$?" 0 "$LMQ_MOD unloads"; }
modprobe -r loop
done_testing

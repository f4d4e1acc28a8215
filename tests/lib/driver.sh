# SPDX-License-Identifier: GPL-2.0
# The common start of the driver and robustness tests (tests/guest/1x-6x):
# the driver under test, TAP names over tap.sh, and device helpers.
# Source it first:  . /tests/lib/driver.sh
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
# lmq_stat0 N KEY: that counter, 0 where there is none (the stock driver)
lmq_stat0() { local v; lmq_is_mq && v=$(lmq_stat "$1" "$2"); echo "${v:-0}"; }
# alive PID: the process exists and is not a zombie
alive() {
	local s
	{ read -r s </proc/$1/stat; } 2>/dev/null || return 1
	s=${s##*) }
	[ "${s%% *}" != Z ]
}
# dms ARGS: dmsetup, not waiting for udev (the guest has none)
dms() { dmsetup --noudevsync --verifyudev "$@"; }
# lmq_wait_gone PATH [TENTHS]: wait for PATH to disappear.
lmq_wait_gone() {
	local i
	for ((i = 0; i < ${2:-50}; i++)); do [ -e "$1" ] || return 0; sleep 0.1; done
	return 1
}
require_cmd lmq-ioctl lmq-stats fio
t_diag "driver under test: $LMQ_DRIVER ($LMQ_PREFIX*), kernel $(uname -r)"

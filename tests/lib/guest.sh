# SPDX-License-Identifier: GPL-2.0
# The guest-test library: every tests/guest/*.sh sources it, and nothing else.
# A test is laid out like this (tests/README.md, "Writing a guest test"):
#
#   #!/bin/bash
#   # SPDX-License-Identifier: GPL-2.0
#   # timeout: 300               (in the first 10 lines; the harness reads it)
#   # NN-name: what it checks and why, at any length.
#   DESCRIPTION="what it checks, in one line"
#   requires() {                 (optional) skip_all "reason" when it cannot run
#   	require_cmd fio
#   	lmq_is_mq || skip_all "loopmq only: ..."
#   }
#   . /tests/lib/guest.sh        prints the description, runs requires()
#   ...the body: lmq_load, checks...
#   done_testing                 the last command: its status is the test's
#
# Sourcing it sets `set -u` and PATH, works out the driver under test, prints
# "# NAME: DESCRIPTION" and the driver, then calls requires() if the test
# defined one.  The assertions are tap.sh's (see there): check, check_quiet,
# check_fail, is, isnt, like, expect_errno, pass, fail, skip, diag, skip_all,
# require_cmd, require_module, done_testing, stop_testing.
#
# The driver under test: loopmq, the stock loop driver to validate a test
# itself (LMQ_DRIVER=loop in the environment, or lmq_driver=loop on the
# guest's kernel command line: tests/vm/run --append lmq_driver=loop), or
# loopmq in replace mode (lmq_driver=replace: replace_loop=1 from
# modprobe.d, devices /dev/loopN, /dev/loop-control; a test that needs the
# stock driver beside it calls lmq_needs_stock_loop in requires()).  Same
# script, same ABI.  Set here, for each:
#   LMQ_DRIVER  loopmq|loop|replace  LMQ_MOD   the module (loopmq | loop)
#   LMQ_NAME    device name prefix   LMQ_PREFIX  /dev/$LMQ_NAME
#   LMQ_CTL     the control node     LMQ_MODES   the dispatch modes to cover
#                                                ("stock" for loop)
#   LOSETUP     util-linux losetup (empty if there is none)
#   LOOPMQCTL   loopmqctl (empty if there is none); for the stock driver
#               LOOPMQCTL_PREFIX=loop is exported, the tool's test-only
#               switch that makes it drive /dev/loopN
#
# Driver and devices:
#   lmq_is_mq                  true unless the driver under test is stock loop
#   lmq_load [NR] [PARAM=V...] load the driver (NR devices: nr_devices= or
#                              max_loop=; mode= is dropped for stock loop);
#                              true once the control node (and device NR-1)
#                              exist
#   lmq_unload                 detach every device, unload the driver; its
#                              status says whether the module went away
#   lmq_detach_all             detach every bound device (LOOP_CLR_FD)
#   lmq_dev N / lmq_sys N      /dev/<name>N, /sys/block/<name>N
#   lmq_mode N MODE            set device N's dispatch mode (no-op for loop)
#   lmq_stat N KEY             one counter of device N's loopmq/stats
#   lmq_stat0 N KEY            the same, 0 where there is none (stock loop)
#   lmq_wait_gone PATH [TENTHS]  wait (default 5 s) for PATH to disappear
#   lmq_backing TYPE [SIZE]    make a backing file, print its path: tmpfs (a
#                              sparse file in /tmp), ext4 or xfs (fallocated,
#                              on the scratch disk mkfs'd and mounted on
#                              /mnt/lmq-TYPE), raw (the scratch disk itself)
#   lmq_cleanup                lmq_unload and unmount /mnt/lmq-*
# By device path (DEV is /dev/<name>N or <name>N):
#   sysv DEV REL               cat /sys/block/<dev>/REL
#   bound DEV / unbound DEV DESC   DEV has a backing file / pass if it has not
#   nbound                     how many devices of the driver are bound
#   snapshot                   every device with its binding, mode, ro, block
#                              size (one sorted list, to compare states)
# Misc:
#   word1 TEXT                 the first word of TEXT's first line, e.g.
#                              word1 "$(lmq-ioctl ...)": OK or the errno name
#   run CMD...                 $out (stdout), $err (stderr), $rc; returns 0
#   alive PID                  the process exists and is not a zombie
#   dms ARGS...                dmsetup without waiting for udev (none here)
#
# The harness cleans up after every test (tests/README.md): a test needs no
# cleanup of its own unless it wants a known state in the middle.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
. /tests/lib/tap.sh

# loopmq's device names in LMQ_DRIVER's mode (replace: the stock names)
_lmq_mq_names() {
	if [ "$LMQ_DRIVER" = replace ]; then
		LMQ_NAME=loop LMQ_CTL=/dev/loop-control
	else
		LMQ_NAME=loopmq LMQ_CTL=/dev/loopmq-control
	fi
}
LMQ_DRIVER=${LMQ_DRIVER:-$(sed -n 's/.*lmq_driver=\([a-z]*\).*/\1/p' /proc/cmdline 2>/dev/null)}
LMQ_DRIVER=${LMQ_DRIVER:-loopmq}
if [ "$LMQ_DRIVER" = loop ]; then
	LMQ_MOD=loop LMQ_NAME=loop LMQ_CTL=/dev/loop-control
	LMQ_MODES=${LMQ_MODES:-stock}
	export LOOPMQCTL_PREFIX=loop
else
	[ "$LMQ_DRIVER" = replace ] || LMQ_DRIVER=loopmq
	LMQ_MOD=loopmq
	_lmq_mq_names
	if [ "$LMQ_DRIVER" = replace ]; then
		# loopmq in replace mode (replace_loop=1): every load of
		# loopmq, lmq_load's or a test's own modprobe, gets it from
		# modprobe.d
		mkdir -p /etc/modprobe.d
		echo "options loopmq replace_loop=1" >/etc/modprobe.d/lmq-replace.conf
	fi
	# the module's own list (its mode parameter's description), not a copy
	LMQ_MODES=${LMQ_MODES:-$(modinfo -p loopmq 2>/dev/null |
		sed -n 's/^mode:.*one of: \([a-z ]*\)\..*/\1/p')}
	if [ -z "$LMQ_MODES" ]; then
		echo "not ok 1 - guest.sh: no dispatch modes in 'modinfo -p loopmq'"
		exit 1
	fi
	unset LOOPMQCTL_PREFIX
fi
LMQ_PREFIX=/dev/$LMQ_NAME
LMQ_SCRATCH=${SCRATCH:-/dev/vda}
LOOPMQCTL=$(command -v loopmqctl) || LOOPMQCTL=
LOSETUP=
for _l in /usr/sbin/losetup /sbin/losetup /usr/bin/losetup /bin/losetup; do
	[ -x "$_l" ] && "$_l" --version 2>/dev/null | grep -q util-linux && { LOSETUP=$_l; break; }
done
unset _l

lmq_is_mq()  { [ "$LMQ_DRIVER" != loop ]; }
# for a test that loads the stock loop driver beside the one under test:
# in replace mode, where the stock driver cannot load, the test runs
# loopmq beside it (loopmqN, /dev/loopmq-control) instead
lmq_needs_stock_loop() {
	[ "$LMQ_DRIVER" = replace ] || return 0
	rm -f /etc/modprobe.d/lmq-replace.conf
	LMQ_DRIVER=loopmq
	_lmq_mq_names
	LMQ_PREFIX=/dev/$LMQ_NAME
	diag "replace mode: this test uses the stock loop driver, so loopmq runs beside it"
}
lmq_dev()    { echo "$LMQ_PREFIX$1"; }
lmq_sys()    { echo "/sys/block/$LMQ_NAME$1"; }

lmq_load() {
	local nr= p args=()
	case ${1:-} in [0-9]*) nr=$1; shift ;; esac
	for p in "$@"; do
		case $p in mode=*) lmq_is_mq && args+=("$p") ;; *) args+=("$p") ;; esac
	done
	if [ -n "$nr" ]; then
		if lmq_is_mq; then args=(nr_devices="$nr" "${args[@]}"); else args=(max_loop="$nr" "${args[@]}"); fi
	fi
	modprobe "$LMQ_MOD" "${args[@]}" || return 1
	udevadm settle 2>/dev/null
	[ -c "$LMQ_CTL" ] || return 1
	[ -z "$nr" ] || [ -b "$(lmq_dev $((nr - 1)))" ]
}

lmq_detach_all() {
	local d
	for d in /sys/block/$LMQ_NAME[0-9]*; do
		[ -e "$d/loop/backing_file" ] || continue
		lmq-ioctl clr-fd "/dev/${d##*/}" >/dev/null 2>&1
	done
	return 0
}
lmq_unload() { lmq_detach_all; sleep 0.2; modprobe -r "$LMQ_MOD" 2>/dev/null || rmmod "$LMQ_MOD"; }

# LMQ_SLOW=1 on the debug kernel (KASAN, lockdep and kmemleak run guests
# 3-10 times slower than the Debian kernels, which are the *-amd64
# releases): tests size repetitions by it, never what they check.
LMQ_SLOW=0
case $(uname -r) in *-amd64) ;; *) LMQ_SLOW=1 ;; esac

# Counters and modes are read with builtins: tests read them in loops, and
# a fork and exec costs 0.1-0.2 s on the debug kernel under TCG.
lmq_mode() {
	local m
	lmq_is_mq || return 0
	echo "$2" >"$(lmq_sys "$1")/loopmq/mode" || return 1
	read -r m <"$(lmq_sys "$1")/loopmq/mode" && [ "$m" = "$2" ]
}
lmq_stat() {
	local k v
	while read -r k v; do
		[ "$k" = "$2" ] && { echo "$v"; return 0; }
	done <"$(lmq_sys "$1")/loopmq/stats"
}
# word1 TEXT: the first word of TEXT's first line (what a command's answer
# is, e.g. lmq-ioctl's OK or errno name), without a pipeline
word1() {
	local x=${1%%$'\n'*}
	x=${x#"${x%%[![:space:]]*}"}
	echo "${x%%[[:space:]]*}"
}
# The bios queued to a disk, each with the task that submitted it
# (block:block_bio_queue): bio_trace_on DISK (vda) starts, bio_trace_off
# FILE stops and writes "COUNT [task]" lines to FILE.
LMQ_TRACE=/sys/kernel/tracing
bio_trace_on() {
	local maj min ev=$LMQ_TRACE/events/block/block_bio_queue
	[ -e $LMQ_TRACE/trace ] || mount -t tracefs nodev $LMQ_TRACE 2>/dev/null
	IFS=: read -r maj min </sys/block/$1/dev &&
		echo "dev == $(((maj << 20) | min))" >$ev/filter || return 1
	echo >$LMQ_TRACE/trace
	echo 1 >$ev/enable
}
bio_trace_off() {
	local ev=$LMQ_TRACE/events/block/block_bio_queue
	echo 0 >$ev/enable
	echo 0 >$ev/filter
	grep -o '\[[^]]*\]$' $LMQ_TRACE/trace | sort | uniq -c | tr -s ' ' >"$1"
}
lmq_stat0() { local v; lmq_is_mq && v=$(lmq_stat "$1" "$2"); echo "${v:-0}"; }

lmq_wait_gone() {
	local i
	for ((i = 0; i < ${2:-50}; i++)); do [ -e "$1" ] || return 0; sleep 0.1; done
	return 1
}

# _lmq_fs TYPE: the scratch disk carries a TYPE file system mounted on
# /mnt/lmq-TYPE (the other one is unmounted first)
_lmq_fs() {
	local fs=$1 m=/mnt/lmq-$1 other
	mountpoint -q "$m" && return 0
	for other in /mnt/lmq-ext4 /mnt/lmq-xfs; do
		mountpoint -q "$other" && { umount "$other" || return 1; }
	done
	mkdir -p "$m"
	case $fs in
	ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$LMQ_SCRATCH" >/dev/null;;
	xfs) mkfs.xfs -q -f "$LMQ_SCRATCH" >/dev/null;;
	esac || return 1
	mount -t "$fs" "$LMQ_SCRATCH" "$m"
}
_lmq_n=0
lmq_backing() {
	local type=$1 size=${2:-64M} f
	_lmq_n=$((_lmq_n + 1))
	case $type in
	tmpfs)
		f=/tmp/lmq-backing-$_lmq_n.img
		truncate -s "$size" "$f" || return 1;;
	ext4|xfs)
		_lmq_fs "$type" || { echo "lmq_backing: no $type on $LMQ_SCRATCH" >&2; return 1; }
		f=/mnt/lmq-$type/backing-$_lmq_n.img
		fallocate -l "$size" "$f" || return 1;;
	raw)
		umount /mnt/lmq-ext4 /mnt/lmq-xfs 2>/dev/null
		f=$LMQ_SCRATCH;;
	*)
		echo "lmq_backing: unknown type '$type'" >&2
		return 1;;
	esac
	echo "$f"
}
lmq_cleanup() {
	lmq_unload
	umount /mnt/lmq-ext4 /mnt/lmq-xfs 2>/dev/null
	return 0
}

sysv() { cat "/sys/block/${1##*/}/$2" 2>/dev/null; }
bound() { [ -e "/sys/block/${1##*/}/loop/backing_file" ]; }
unbound() { if bound "$1"; then fail "$2" "$1 is bound"; else pass "$2"; fi; }
nbound() {
	local d n=0
	for d in /sys/block/$LMQ_NAME[0-9]*; do [ -e "$d/loop/backing_file" ] && n=$((n + 1)); done
	echo $n
}
# one grep: forks are slow under TCG
snapshot() {
	grep -s . /sys/block/$LMQ_NAME[0-9]*/{dev,ro,loop/backing_file,loop/offset,loop/sizelimit,loopmq/mode,queue/logical_block_size} |
		sort
}

run() {
	local e
	e=$(mktemp)
	out=$("$@" 2>"$e")
	rc=$?
	err=$(cat "$e")
	rm -f "$e"
	return 0
}
alive() {
	local s
	{ read -r s </proc/$1/stat; } 2>/dev/null || return 1
	s=${s##*) }
	[ "${s%% *}" != Z ]
}
dms() { dmsetup --noudevsync --verifyudev "$@"; }
# writeback_off / writeback_on: the flusher's periodic write-back off, so
# that only what a test does writes dirty pages back, and on again as it
# was (the harness's cleanup turns it on after a test that ended early)
writeback_off() {
	read -r _lmq_writeback </proc/sys/vm/dirty_writeback_centisecs
	echo 0 >/proc/sys/vm/dirty_writeback_centisecs
}
writeback_on() {
	echo "${_lmq_writeback:-500}" >/proc/sys/vm/dirty_writeback_centisecs
}

diag "${TEST_NAME:-${0##*/}}: ${DESCRIPTION:-(no DESCRIPTION)}"
diag "driver under test: $LMQ_DRIVER ($LMQ_PREFIX*), kernel $(uname -r)"
if declare -F requires >/dev/null; then requires; fi

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 27-losetup-compat: util-linux losetup (the real one, not busybox's) drives
# the device: attach, attach with --direct-io=on -o 4096 --sizelimit,
# --sector-size, list with -l / -l -J / --raw showing the right backing file,
# offset, sizelimit, dio and read-only, -c (set capacity), -d detach, and
# -f --show / -j on the stock names when the driver is loop.
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

[ -n "$LOSETUP" ] && ! readlink -f "$LOSETUP" | grep -q busybox ||
	{ echo "1..0 # SKIP util-linux losetup not found"; exit 77; }
t_diag "losetup: $LOSETUP ($($LOSETUP --version))"
[ -b /dev/vda ] && mkfs.ext4 -q -F /dev/vda && mkdir -p /mnt/t27 && mount /dev/vda /mnt/t27 ||
	{ t_fail "ext4 on vda"; t_done; }
F=/mnt/t27/img
head -c 16M /dev/urandom >$F
lmq_load 2 || { t_fail "load $LMQ_MOD"; t_done; }
D=$(lmq_dev 0)

# 1. plain attach
t_run "losetup $D $F" $LOSETUP $D $F
t_is "$(cat $(lmq_sys 0)/loop/backing_file)" "$F" "sysfs backing_file"
t_is "$(cmp $D $F && echo same)" same "device content equals the file"
out=$($LOSETUP -l -n -O NAME,BACK-FILE,OFFSET,DIO,RO $D)
t_is "$(echo $out)" "$D $F 0 0 0" "losetup -l -O NAME,BACK-FILE,OFFSET,DIO,RO"
t_run "losetup -d" $LOSETUP -d $D
t_is "$(lmq-ioctl get-status $D)" ENXIO "unbound after losetup -d"

# 2. direct I/O and an offset
t_run "losetup --direct-io=on -o 4096 --sizelimit 8M" \
	$LOSETUP --direct-io=on -o 4096 --sizelimit $((8 << 20)) $D $F
j=$($LOSETUP -l -J $D)
t_diag "losetup -l -J: $(echo $j)"
t_is "$(echo "$j" | jq -r '.loopdevices[0].name')" "$D" "JSON name"
t_is "$(echo "$j" | jq -r '.loopdevices[0]."back-file"')" "$F" "JSON back-file"
t_is "$(echo "$j" | jq -r '.loopdevices[0].offset')" 4096 "JSON offset"
t_is "$(echo "$j" | jq -r '.loopdevices[0].sizelimit')" $((8 << 20)) "JSON sizelimit"
t_is "$(echo "$j" | jq -r '.loopdevices[0].dio')" true "JSON dio"
t_is "$(cat $(lmq_sys 0)/loop/dio)" 1 "sysfs dio"
t_is "$(blockdev --getsize64 $D)" $((8 << 20)) "size = sizelimit"
t_is "$(dd if=$D bs=4k count=16 iflag=direct status=none | sha256sum)" \
	"$(dd if=$F bs=4k skip=1 count=16 status=none | sha256sum)" "device reads file from offset 4096"
t_run "losetup --direct-io=off (LOOP_SET_DIRECT_IO)" $LOSETUP --direct-io=off $D
t_is "$(cat $(lmq_sys 0)/loop/dio)" 0 "sysfs dio after --direct-io=off"
t_run "losetup -d" $LOSETUP -d $D

# 3. sector size, read-only, --show
t_is "$($LOSETUP --show -r -b 4096 $D $F)" "$D" "losetup --show -r -b 4096"
t_is "$(blockdev --getss $D)" 4096 "logical block size 4096"
t_is "$(cat /sys/block/${D##*/}/queue/logical_block_size)" 4096 "sysfs logical_block_size"
t_is "$($LOSETUP -l -n -O RO,LOG-SEC $D | tr -s ' ' | sed 's/^ //')" "1 4096" "losetup -l RO and LOG-SEC"
t_run "losetup -d" $LOSETUP -d $D

# 4. capacity (-c) and a second device; -a lists both (stock names only)
t_run "losetup $D $F" $LOSETUP $D $F
t_run "losetup $(lmq_dev 1) $F -o 1M" $LOSETUP -o 1M $(lmq_dev 1) $F
head -c 4M /dev/urandom >>$F
t_run "losetup -c" $LOSETUP -c $D
t_is "$(blockdev --getsize64 $D)" $((20 << 20)) "size after losetup -c"
l=$($LOSETUP -l -n -O NAME,OFFSET $(lmq_dev 1) | tr -s ' ')
t_is "$l" "$(lmq_dev 1) 1048576" "losetup -l of the second device"
la=$($LOSETUP -a 2>&1)
t_diag "losetup -a: $(echo $la)"
if lmq_is_mq; then
	t_diag "losetup -a / -j / -f scan /sys/block/loop* only; not asserted for $LMQ_NAME"
else
	echo "$la" | grep -q "^$D: .*($F)" && t_ok "losetup -a lists $D" || t_fail "losetup -a misses $D"
	t_is "$($LOSETUP -j $F -O NAME -n | sort | tr '\n' ' ')" "$D $(lmq_dev 1) " "losetup -j"
fi
t_run "losetup -d both" $LOSETUP -d $D $(lmq_dev 1)
t_is "$(lmq-ioctl get-status $(lmq_dev 1))" ENXIO "second device unbound"

# 5. device reuse
t_run "attach again after detach (device reuse)" $LOSETUP $D $F
t_is "$(cmp -n $((16 << 20)) $D $F && echo same)" same "content after reuse"
t_run "losetup -d" $LOSETUP -d $D

umount /mnt/t27
lmq_unload; t_is "$?" 0 "$LMQ_MOD unloads"
t_done

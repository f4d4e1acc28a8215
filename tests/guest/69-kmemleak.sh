#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# 69-kmemleak (debug kernel only; skipped where kmemleak is absent): after a
# workload that exercises the driver (load with several devices, every
# mode, I/O, mode switches, LOOP_CTL_ADD/REMOVE, partitions, unload) and
# whatever earlier tests of the same boot did, a kmemleak scan must report
# no leaked object allocated from the driver's code.  Objects the scan
# reports from elsewhere are listed as diagnostics; note that the harness
# fails any test whose dmesg shows "suspected memory leak", which a scan
# that finds anything prints, so in practice the scan must find nothing.
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

KL=/sys/kernel/debug/kmemleak
[ -e $KL ] || { echo "1..0 # SKIP no kmemleak (not the debug kernel)"; exit 77; }
W=/tmp/t69
mkdir -p $W
for i in 0 1 2 3; do truncate -s 16M $W/img$i; done
lmq_load 4 max_part=4 || { t_fail "load $LMQ_MOD"; t_done; }
base=$(awk -v m=$LMQ_MOD '$1 == m { print $6 }' /proc/modules)
size=$(awk -v m=$LMQ_MOD '$1 == m { print $2 }' /proc/modules)
t_diag "$LMQ_MOD core at $base, $size bytes"

# workload
for i in 0 1 2 3; do
	D=$(lmq_dev $i)
	t_is "$(lmq-ioctl configure $D $W/img$i $(( i % 2 ? 16 : 8 )) 0)" OK "attach $D"
done
for mode in $LMQ_MODES; do
	for i in 0 1; do [ "$mode" = stock ] || lmq_mode $i $mode || t_fail "$mode: set mode"; done
	fio --name=kl --filename=$(lmq_dev 0):$(lmq_dev 1) --rw=randrw --bs=4k --ioengine=libaio \
		--iodepth=16 --direct=1 --size=8M --io_size=4M --verify=crc32c \
		--output-format=terse >$W/fio.out 2>&1
	rc=$?
	t_is "$rc" 0 "$mode: fio verify on two devices"
	[ $rc = 0 ] || sed 's/^/#   /' $W/fio.out | tail -n 8
	dd if=/dev/zero of=$(lmq_dev 2) bs=4k count=512 conv=fsync status=none
	t_is "$?" 0 "$mode: buffered write + fsync"
done
for i in $(seq 10); do
	lmq-ioctl ctl-add $LMQ_CTL 20 >/dev/null; lmq-ioctl ctl-remove $LMQ_CTL 20 >/dev/null
done
lmq_is_mq && for i in $(seq 5); do lmq-stats $(lmq_dev 0) >/dev/null; echo 0 >$(lmq_sys 0)/loopmq/stats; done
for i in 0 1 2 3; do lmq-ioctl clr-fd $(lmq_dev $i) >/dev/null; done

# scan while loaded (symbols resolve), then after unload
scan() {
	sleep 6			# kmemleak ignores objects younger than 5 s
	echo scan >$KL; echo scan >$KL
	cat $KL
}
scan >$W/loaded.txt
lmq_unload; t_is "$?" 0 "$LMQ_MOD unloads"
scan >$W/unloaded.txt
# an object is ours when a backtrace frame names the module, or lies in
# the module's (now freed) core range
ours() {
	awk -v m="[$LMQ_MOD]" -v base="$base" -v size="$size" '
		function hex(s,  i, c, v) { v = 0; s = tolower(s); sub(/^0x/, "", s)
			for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1
				if (c < 0) break; v = v * 16 + c } return v }
		BEGIN { lo = hex(base); hi = lo + size }
		/^unreferenced object/ { if (blk != "" && mine) print blk; blk = $0; mine = 0; next }
		{ blk = blk "\n" $0
		  if (index($0, m)) mine = 1
		  if (match($0, /0x[0-9a-f]+/) && base != "") { a = hex(substr($0, RSTART, RLENGTH)); if (a >= lo && a < hi) mine = 1 } }
		END { if (blk != "" && mine) print blk }' "$1"
}
total=$(grep -c '^unreferenced object' $W/unloaded.txt $W/loaded.txt | awk -F: '{ s += $2 } END { print s + 0 }')
mine=$( { ours $W/loaded.txt; ours $W/unloaded.txt; } | grep -c '^unreferenced object')
t_diag "kmemleak: $total reports in all (loaded + unloaded scans), $mine from $LMQ_MOD"
{ ours $W/loaded.txt; ours $W/unloaded.txt; } | head -n 80 | sed 's/^/#   /'
if [ "$mine" -eq 0 ] && [ "$total" -gt 0 ]; then
	grep -A12 '^unreferenced object' $W/unloaded.txt | head -n 40 | sed 's/^/#   other: /'
fi
t_is "$mine" 0 "kmemleak: no leak from $LMQ_MOD"
echo clear >$KL
t_done

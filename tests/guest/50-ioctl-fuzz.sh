#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# 50-ioctl-fuzz: tests/progs/ioctl-fuzz (seeded random ioctls, bad pointers,
# odd sizes, control device, bound/unbound/detaching devices) first against
# the stock loop driver (validates the fuzzer: it must pass there), then
# against the driver under test; afterwards a device must still attach,
# write, read back the same data, detach, and the module must unload.
# FUZZ_SEED / FUZZ_CALLS (environment or lmq_fuzz_seed= / lmq_fuzz_calls= on
# the kernel command line) reproduce or resize a run.
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

command -v ioctl-fuzz >/dev/null || { echo "1..0 # SKIP ioctl-fuzz not installed"; exit 77; }
kcmd() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" /proc/cmdline; }
SEED=${FUZZ_SEED:-$(kcmd lmq_fuzz_seed)}
SEED=${SEED:-$(( $(date +%s) % 100000 ))}
CALLS=${FUZZ_CALLS:-$(kcmd lmq_fuzz_calls)}
# 100000 calls: about 100 s under TCG on the Debian kernels, less on the
# debug kernel (measured 1600 calls/s there: no udev, small kernel).
CALLS=${CALLS:-100000}
W=/tmp/t50
mkdir -p $W
t_diag "seed $SEED, $CALLS calls on $LMQ_NAME (reproduce: FUZZ_SEED=$SEED FUZZ_CALLS=$CALLS)"

# fuzz NAME PREFIX CTL NDEV CALLS JOBS SEED
fuzz() {
	local name=$1 out=$W/fuzz-$1.out rc t0=$SECONDS
	shift
	ioctl-fuzz -p "$1" -c "$2" -d "$3" -n "$4" -j "$5" -s "$6" -t $W >$out 2>&1
	rc=$?
	sed 's/^/#   /' $out | grep -v '   0 ok$' | head -n 60
	t_is "$rc" 0 "$name: ioctl-fuzz -p $1 -d $3 -n $4 -j $5 -s $6 exits 0 ($((SECONDS - t0)) s)"
	grep -q '^ioctl-fuzz: PASS' $out && t_ok "$name: fuzzer reports PASS" ||
		t_fail "$name: fuzzer did not report PASS"
}

# The fuzzer against the stock driver: proves it finds nothing where the
# ABI is the reference (a fuzzer bug would show here, not on loopmq).
if modprobe loop max_loop=4 2>/dev/null && [ -c /dev/loop-control ]; then
	fuzz stock-loop /dev/loop /dev/loop-control 4 $((CALLS / 10)) 2 "$SEED"
	modprobe -r loop; t_is "$?" 0 "stock loop unloads after fuzzing"
else
	t_skip "stock loop driver not available"
fi

if lmq_is_mq; then
	lmq_load 4 || { t_fail "load $LMQ_MOD"; t_done; }
	# single worker: the call sequence is exactly reproducible from the seed
	fuzz "$LMQ_NAME-1" $LMQ_PREFIX $LMQ_CTL 4 $((CALLS / 2)) 1 "$SEED"
	# two workers on the same devices: detaches race the other's calls
	fuzz "$LMQ_NAME-2" $LMQ_PREFIX $LMQ_CTL 4 $((CALLS / 4)) 2 "$((SEED + 1))"
else
	lmq_load 4 || { t_fail "load $LMQ_MOD"; t_done; }
	fuzz "$LMQ_NAME" $LMQ_PREFIX $LMQ_CTL 4 $((CALLS / 2)) 2 "$SEED"
fi

# Every device unbound after the fuzzing.
nb=0
for d in /sys/block/$LMQ_NAME[0-9]*; do [ -e $d/loop/backing_file ] && nb=$((nb + 1)); done
t_is "$nb" 0 "no device left bound"

# The device still works: attach, write, read back, compare, detach.
D=$(lmq_dev 0)
head -c 8M /dev/urandom >$W/data
truncate -s 8M $W/img
t_is "$(lmq-ioctl set-fd $D $W/img)" OK "attach a file to $D after fuzzing"
for mode in $LMQ_MODES; do
	[ "$mode" = stock ] || lmq_mode 0 $mode || t_fail "set mode $mode"
	dd if=$W/data of=$D bs=64k oflag=direct status=none && sync
	got=$(dd if=$D bs=64k iflag=direct status=none | sha256sum | cut -d' ' -f1)
	t_is "$got" "$(sha256sum <$W/data | cut -d' ' -f1)" "$mode: data written through $D reads back"
	t_is "$(sha256sum <$W/img | cut -d' ' -f1)" "$(sha256sum <$W/data | cut -d' ' -f1)" \
		"$mode: and is in the backing file"
	: >$W/img; truncate -s 8M $W/img
done
t_is "$(lmq-ioctl clr-fd $D)" OK "detach $D"
lmq_unload; t_is "$?" 0 "$LMQ_MOD unloads"
t_run "no $LMQ_MOD left in /proc/modules" sh -c "! grep -q '^$LMQ_MOD ' /proc/modules"
rm -rf $W
t_done

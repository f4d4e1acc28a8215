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
DESCRIPTION="seeded random ioctls against stock loop, then the driver under test"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	command -v ioctl-fuzz >/dev/null || skip_all "ioctl-fuzz not installed"
}
. /tests/lib/guest.sh

kcmd() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" /proc/cmdline; }
SEED=${FUZZ_SEED:-$(kcmd lmq_fuzz_seed)}
SEED=${SEED:-$(( $(date +%s) % 100000 ))}
CALLS=${FUZZ_CALLS:-$(kcmd lmq_fuzz_calls)}
# 50000 calls on every kernel: on the debug kernel (about 1600 calls/s)
# KASAN turns a corruption that the fuzzer cannot see into a report, on
# the Debian kernels (about 30 s under TCG) the part is errnos, hangs and
# crashes.  Each run draws a new seed, so coverage adds up over runs.
CALLS=${CALLS:-50000}
W=/tmp/t50
mkdir -p $W
# The seed goes into every failure line, and a guest that dies takes this
# "(reproduce: ...)" note into the harness's "guest died" line.
REPRO="tests/vm/run --kernel $(uname -r) --append 'lmq_fuzz_seed=$SEED lmq_fuzz_calls=$CALLS'"
diag "seed $SEED, $CALLS calls on $LMQ_NAME (reproduce: $REPRO tests/guest/50-ioctl-fuzz.sh)"

# fuzz NAME PREFIX CTL NDEV CALLS JOBS SEED
fuzz() {
	local name=$1 out=$W/fuzz-$1.out rc t0=$SECONDS
	shift
	ioctl-fuzz -p "$1" -c "$2" -d "$3" -n "$4" -j "$5" -s "$6" -t $W >$out 2>&1
	rc=$?
	sed 's/^/#   /' $out | grep -v '   0 ok$' | head -n 60
	is "$rc" 0 "$name: ioctl-fuzz -p $1 -d $3 -n $4 -j $5 -s $6 exits 0 ($((SECONDS - t0)) s, seed $SEED)"
	grep -q '^ioctl-fuzz: PASS' $out && pass "$name: fuzzer reports PASS" ||
		fail "$name: fuzzer did not report PASS (seed $SEED: $REPRO)"
}

# The fuzzer against the stock driver: proves it finds nothing where the
# ABI is the reference (a fuzzer bug would show here, not on loopmq).
if modprobe loop max_loop=4 2>/dev/null && [ -c /dev/loop-control ]; then
	fuzz stock-loop /dev/loop /dev/loop-control 4 $((CALLS / 10)) 2 "$SEED"
	modprobe -r loop; is "$?" 0 "stock loop unloads after fuzzing"
else
	skip "stock loop driver not available"
fi

if lmq_is_mq; then
	lmq_load 4 || { fail "load $LMQ_MOD"; stop_testing; }
	# single worker: the call sequence is exactly reproducible from the seed
	fuzz "$LMQ_NAME-1" $LMQ_PREFIX $LMQ_CTL 4 $((CALLS / 2)) 1 "$SEED"
	# two workers on the same devices: detaches race the other's calls
	fuzz "$LMQ_NAME-2" $LMQ_PREFIX $LMQ_CTL 4 $((CALLS / 4)) 2 "$((SEED + 1))"
else
	lmq_load 4 || { fail "load $LMQ_MOD"; stop_testing; }
	fuzz "$LMQ_NAME" $LMQ_PREFIX $LMQ_CTL 4 $((CALLS / 2)) 2 "$SEED"
fi

# Every device unbound after the fuzzing.
nb=0
for d in /sys/block/$LMQ_NAME[0-9]*; do [ -e $d/loop/backing_file ] && nb=$((nb + 1)); done
is "$nb" 0 "no device left bound"

# The device still works: attach, write, read back, compare, detach.
D=$(lmq_dev 0)
head -c 8M /dev/urandom >$W/data
truncate -s 8M $W/img
is "$(lmq-ioctl set-fd $D $W/img)" OK "attach a file to $D after fuzzing"
for mode in $LMQ_MODES; do
	[ "$mode" = stock ] || lmq_mode 0 $mode || fail "set mode $mode"
	dd if=$W/data of=$D bs=64k oflag=direct status=none && sync
	got=$(dd if=$D bs=64k iflag=direct status=none | sha256sum | cut -d' ' -f1)
	is "$got" "$(sha256sum <$W/data | cut -d' ' -f1)" "$mode: data written through $D reads back"
	is "$(sha256sum <$W/img | cut -d' ' -f1)" "$(sha256sum <$W/data | cut -d' ' -f1)" \
		"$mode: and is in the backing file"
	: >$W/img; truncate -s 8M $W/img
done
is "$(lmq-ioctl clr-fd $D)" OK "detach $D"
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
check_quiet "no $LMQ_MOD left in /proc/modules" sh -c "! grep -q '^$LMQ_MOD ' /proc/modules"
rm -rf $W
done_testing

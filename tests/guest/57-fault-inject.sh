#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# 57-fault-inject (debug kernel only; skipped where
# /sys/kernel/debug/failslab is absent): FAILSLAB (task-filter; make-it-fail
# set by tests/progs/lmq-failslab around one operation) at 10% and 60% during
# module load, device add/attach/mode switch, I/O and detach/remove; then
# FAIL_MAKE_REQUEST (30% and 100%) on the backing block device (brd) and on
# the device itself under I/O.  Every operation may fail, but cleanly:
# afterwards (with injection off) the state is consistent, the device works,
# data written reads back, every device detaches and the module unloads.
DESCRIPTION="FAILSLAB and FAIL_MAKE_REQUEST: every failure is clean"
requires() {
	[ -d /sys/kernel/debug/failslab ] && [ -d /sys/kernel/debug/fail_make_request ] ||
		skip_all "no failslab/fail_make_request (not the debug kernel)"
	require_cmd lmq-ioctl lmq-stats fio
	command -v lmq-failslab >/dev/null || skip_all "lmq-failslab not installed"
}
. /tests/lib/guest.sh

FS=/sys/kernel/debug/failslab FM=/sys/kernel/debug/fail_make_request
W=/tmp/t57
mkdir -p $W
truncate -s 16M $W/img
head -c 1M /dev/urandom >$W/d
# Forks are what this test spends its time on under KASAN and TCG (a
# two-stage pipeline costs about 0.4 s there): results are parsed with
# shell builtins, not head, awk or cut.
sha() { local x; x=$(sha256sum); echo "${x%% *}"; }
WANT=$(sha <$W/d)

# lmq-failslab sets /proc/self/make-it-fail around the system calls of one
# operation only (module load, ioctl, I/O), so failures hit the kernel paths
# under test rather than exec and libc.
slab_on() {
	echo Y >$FS/task-filter; echo N >$FS/ignore-gfp-wait; echo 0 >$FS/verbose
	echo 1 >$FS/interval; echo -1 >$FS/times; echo "$1" >$FS/probability
}
slab_off() { echo 0 >$FS/probability; }
fs() { word1 "$(timeout 120 lmq-failslab "$@" 2>/dev/null)"; }
r() { word1 "$(timeout 120 lmq-ioctl "$@" 2>&1)"; }
bound() { [ -e "$(lmq_sys $1)/loop/backing_file" ]; }
# works N: attach (if needed), write, read back, detach, without injection
works() {
	local D=$(lmq_dev $1)
	bound $1 || [ "$(r set-fd $D $W/img$1)" = OK ] || return 1
	dd if=$W/d of=$D bs=64k oflag=direct conv=fsync status=none || return 1
	[ "$(dd if=$D bs=64k count=16 iflag=direct status=none | sha)" = "$WANT" ] || return 1
	[ "$(r clr-fd $D)" = OK ]
}
for i in 0 1 2 3; do truncate -s 16M $W/img$i; done
if lmq_is_mq; then KO=$(modinfo -n $LMQ_MOD) PARAMS="nr_devices=4"
else KO=$(modinfo -n loop) PARAMS="max_loop=4"; fi
[ -f "$KO" ] || { fail "no module file for $LMQ_MOD"; stop_testing; }
# tally NAME RESULT...: count OK / errno results
tally() { local n=$1 x ok=0 bad=0; shift; for x in "$@"; do [ "$x" = OK ] && ok=$((ok + 1)) || bad=$((bad + 1)); done; echo "$ok OK, $bad failed"; }

# Two failslab rates: a low one, where most operations complete and the
# failures land in their error paths one at a time, and a high one, where
# most fail and the unwinding of partly done work is what runs.
for P in 10 60; do
	# --- module load: the loader and the driver's init under failslab ---
	# Opt-in (FAULT_LOAD=1): the module loader's vmalloc failures make the
	# kernel print a warn_alloc stack ("Call Trace:"), which the harness
	# counts as a splat whatever the driver does.
	res=()
	for i in $(seq $([ "${FAULT_LOAD:-0}" = 1 ] && echo 8 || echo 0)); do
		slab_on $P; x=$(fs load $KO "$PARAMS"); slab_off
		res+=("$x")
		if grep -q "^$LMQ_MOD " /proc/modules; then
			[ "$x" = OK ] || fail "P=$P%: load failed ($x) but the module is loaded"
			lmq_unload || fail "P=$P%: unload after an injected load"
		elif [ "$x" = OK ]; then
			fail "P=$P%: load said OK, module not loaded"
		fi
	done
	if [ ${#res[@]} -gt 0 ]; then
		diag "P=$P%: module load under failslab: $(tally load "${res[@]}")"
		pass "P=$P%: ${#res[@]} loads under failslab, each loaded or failed cleanly"
	fi
	lmq_load 4 || { fail "P=$P%: clean load after injected loads"; continue; }

	# --- add / attach / detach / remove under failslab ---
	# 4 rounds of 7 operations (28 per rate) on the 4 devices in turn:
	# each device goes through every operation once per rate
	res=()
	for i in $(seq 4); do
		D=$(lmq_dev $((i % 4)))
		slab_on $P
		res+=("$(fs configure $D $W/img$((i % 4)))" "$(fs clr $D)" "$(fs setfd $D $W/img$((i % 4)))"
			"$(fs clr $D)" "$(fs add $LMQ_CTL $((10 + i % 3)))" "$(fs remove $LMQ_CTL $((10 + i % 3)))"
			"$(fs getfree $LMQ_CTL)")
		slab_off
	done
	diag "P=$P%: control ops under failslab: $(tally ctl "${res[@]}")"
	for i in 10 11 12 13 14 15; do [ -e $(lmq_sys $i) ] && r ctl-remove $LMQ_CTL $i >/dev/null; done
	for i in 0 1 2 3; do
		works $i && pass "P=$P%: $(lmq_dev $i) works after injected control ops" ||
			fail "P=$P%: $(lmq_dev $i) broken after injected control ops"
	done
	n=$(ls -d /sys/block/$LMQ_NAME[0-9]* | wc -l)
	[ "$n" -ge 4 ] && pass "P=$P%: $n devices present" || fail "P=$P%: only $n devices"

	# --- I/O under failslab, every mode ---
	is "$(r set-fd $(lmq_dev 0) $W/img0)" OK "P=$P%: attach for I/O"
	for mode in $LMQ_MODES; do
		[ "$mode" = stock ] || lmq_mode 0 $mode || fail "P=$P% $mode: set mode"
		res=()
		slab_on $P
		for i in $(seq 4); do res+=("$(fs io $(lmq_dev 0))"); done
		slab_off
		diag "P=$P% $mode: I/O under failslab: $(tally io "${res[@]}")"
		dd if=$W/d of=$(lmq_dev 0) bs=64k oflag=direct conv=fsync status=none
		is "$(dd if=$(lmq_dev 0) bs=64k count=16 iflag=direct status=none | sha)" "$WANT" \
			"P=$P% $mode: data reads back after I/O under failslab"
	done
	# --- detach under failslab ---
	slab_on $P; x=$(fs clr $(lmq_dev 0)); slab_off
	if [ "$x" = OK ]; then
		lmq_wait_gone $(lmq_sys 0)/loop/backing_file 30 && pass "P=$P%: detach under failslab: OK, unbound" ||
			fail "P=$P%: detach said OK, device still bound"
	else
		is "$(r clr-fd $(lmq_dev 0))" OK "P=$P%: detach under failslab failed ($x), the retry works"
	fi
	lmq_unload; is "$?" 0 "P=$P%: $LMQ_MOD unloads"
done
slab_off

# --- FAIL_MAKE_REQUEST on the backing device (brd) ---
modprobe brd rd_nr=1 rd_size=16384 || { fail "modprobe brd"; stop_testing; }
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)
echo 0 >$FM/verbose; echo 1 >$FM/interval; echo -1 >$FM/times
for dio in 16 0; do
	is "$(r configure $D /dev/ram0 $dio 0)" OK "attach /dev/ram0 (flags $dio)"
	for mode in $LMQ_MODES; do
		[ "$mode" = stock ] || lmq_mode 0 $mode || fail "$mode: set mode"
		for P in 30 100; do
			echo $P >$FM/probability; echo 1 >/sys/block/ram0/make-it-fail
			# at 100% every call fails: 4 (2 reads, 2 writes) show it
			ok=0 eio=0 other=0 n=$((P == 100 ? 4 : 8))
			for i in $(seq $n); do
				if [ $((i % 2)) = 0 ]; then x=$(r pwrite $D $((i * 65536)) 65536 direct)
				else x=$(r pread $D $((i * 65536)) 65536 direct); fi
				[ $dio = 0 ] && [ $((i % 2)) = 0 ] && [ "$x" = OK ] && x=$(r fsync $D)
				case $x in OK) ok=$((ok + 1));; EIO) eio=$((eio + 1));; *) other=$((other + 1)); diag "got '$x'";; esac
			done
			echo 0 >/sys/block/ram0/make-it-fail; echo 0 >$FM/probability
			diag "flags=$dio $mode P=$P%: $ok ok, $eio EIO, $other other"
			if [ $P = 100 ]; then
				[ $eio -gt 0 ] && [ $other = 0 ] && pass "flags=$dio $mode: backing I/O failing always gives EIO" ||
					fail "flags=$dio $mode P=100: ok=$ok eio=$eio other=$other"
			else
				[ $other = 0 ] && pass "flags=$dio $mode P=$P%: only OK or EIO, nothing hung" ||
					fail "flags=$dio $mode P=$P%: unexpected results"
			fi
		done
		dd if=$W/d of=$D bs=64k oflag=direct conv=fsync status=none
		is "$(dd if=$D bs=64k count=16 iflag=direct status=none | sha)" "$WANT" \
			"flags=$dio $mode: works again with injection off"
	done
	is "$(r clr-fd $D)" OK "detach from /dev/ram0"
done

# --- FAIL_MAKE_REQUEST on the device itself ---
if [ -e $(lmq_sys 0)/make-it-fail ]; then
	is "$(r set-fd $D $W/img)" OK "attach a file"
	echo 100 >$FM/probability; echo 1 >$(lmq_sys 0)/make-it-fail
	is "$(r pread $D 0 4096 direct)" EIO "bios to the device failed by the block layer: EIO"
	echo 0 >$(lmq_sys 0)/make-it-fail; echo 0 >$FM/probability
	is "$(r pread $D 0 4096 direct)" OK "and it reads again"
	is "$(r clr-fd $D)" OK "detach"
fi
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
modprobe -r brd
done_testing

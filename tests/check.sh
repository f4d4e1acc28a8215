#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The `make check` driver: builds, style, sparse, tools, harness self-tests,
# then every tests/guest/*.sh in a guest of each kernel, then the crash
# consistency trials (tests/crash/run, not with --quick or --debug-only).
#
#   tests/check.sh [--quick] [--debug-only] [--kernel K]... [--no-selftest]
#                  [--guest 'GLOB']
#     --quick        no sparse, self-tests, debug kernel or crash trials
#     --debug-only   only the debug kernel: build it, run the guest tests on it
#     --kernel K     guest runs only on K (6.1, 6.12, debug; repeatable)
#     --no-selftest  skip tests/selftest/
#     --guest GLOB   only the guest tests tests/guest/GLOB (default '*.sh')
#
# Prints one "ok N step" / "not ok N step" line per step, then
# "N passed, N failed"; exits non-zero if any step failed.
set -uo pipefail
# One compound command: bash parses all of it before running any, so an
# edit to this file cannot break a run in progress.
{
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
quick= debug_only= selftest=1 kernels=() guest='*.sh'
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; selftest=; shift;;
	--debug-only) debug_only=1; shift;;
	--kernel) kernels+=("$2"); shift 2;;
	--no-selftest) selftest=; shift;;
	--guest) guest=$2; shift 2;;
	*) sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2;;
	esac
done
have_debug=
[ -x scripts/debug-kernel.sh ] && have_debug=1
if [ ${#kernels[@]} -eq 0 ]; then
	if [ -n "$debug_only" ]; then
		kernels=(debug)
	else
		kernels=(6.1 6.12)
		[ -n "$have_debug" ] && [ -z "$quick" ] && kernels+=(debug)
	fi
fi

logdir=$top/build/check
mkdir -p "$logdir"
steps=() results=() times=() npass=0 nfail=0
logname() { echo "$logdir/$(echo "$1" | tr -c 'A-Za-z0-9.-' '_').log"; }
record() {	# record NAME RC SECONDS LOG
	steps+=("$1") times+=("$3")
	if [ "$2" -eq 0 ]; then
		results+=(ok); npass=$((npass + 1)); echo "=== ok: $1 (${3}s)"
	else
		results+=("not ok"); nfail=$((nfail + 1)); echo "=== not ok: $1 (status $2, ${3}s, log $4)"
	fi
}
step() {	# step "name" CMD...: run, show output, record the outcome
	local name=$1 rc log s0
	shift
	log=$(logname "$name") s0=$(date +%s)
	echo "=== $name"
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	record "$name" "$rc" $(($(date +%s) - s0)) "$log"
	return "$rc"
}
# Steps in the background, several at once (guests of different kernels:
# the two cores are seldom both busy with one TCG guest).  Their output is
# shown, in start order, when pwait collects them.
pnames=() ppids=() pt0=()
pstart() {	# pstart "name" CMD...
	local name=$1 log
	shift
	log=$(logname "$name")
	echo "=== $name: started in the background (log $log)"
	( "$@" >"$log" 2>&1; echo $? >"$log.rc" ) &
	pnames+=("$name") ppids+=($!) pt0+=("$(date +%s)")
}
pwait() {
	local i log rc
	for i in "${!ppids[@]}"; do
		wait "${ppids[i]}"
		log=$(logname "${pnames[i]}")
		rc=$(cat "$log.rc" 2>/dev/null || echo 1)
		echo "=== ${pnames[i]}"
		cat "$log"
		record "${pnames[i]}" "$rc" $(($(date +%s) - pt0[i])) "$log"
	done
	pnames=() ppids=() pt0=()
}

# Every guest test runs on every kernel, the debug kernel (KASAN, lockdep,
# kmemleak) included: the whole suite took it 38 minutes (2272 s, with two
# other guests running on the 2-core host).
guest_run() {	# guest_run K: the guest tests on kernel K
	# shellcheck disable=SC2206
	local scripts=(tests/guest/$guest)

	tests/vm/run --kernel "$1" "${scripts[@]}"
}

t0=$(date +%s)
if [ -z "$debug_only" ]; then
	step "make modules-all" make --no-print-directory modules-all
	step "make style" make --no-print-directory style
	[ -z "$quick" ] && step "make sparse" make --no-print-directory sparse
	[ -f tools/Makefile ] && step "make -C tools" make --no-print-directory -C tools
	[ -f tools/Makefile ] && [ -z "$quick" ] &&
		step "make -C tools check" make --no-print-directory -C tools check
	[ -x tests/host-dkms.sh ] && [ -z "$quick" ] && [ "$(id -u)" = 0 ] &&
		step "dkms build for every kernel" tests/host-dkms.sh
	if [ -n "$selftest" ]; then
		for s in tests/selftest/[0-9]*.sh; do
			[ -f "$s" ] && step "selftest $(basename "$s" .sh)" "$s"
		done
	fi
fi
# The Debian kernels' suites run at the same time, with doubled test
# timeouts; the debug kernel's (CPU-bound: KASAN) runs alone after them.
for k in "${kernels[@]}"; do
	[ "$k" = debug ] && continue
	if [ ${#kernels[@]} -gt 1 ]; then
		HARNESS_TIMEOUT_SCALE=2 pstart "guest tests on $k" guest_run "$k"
	else
		step "guest tests on $k" guest_run "$k"
	fi
done
pwait
for k in "${kernels[@]}"; do
	[ "$k" = debug ] || continue
	if [ -z "$have_debug" ]; then
		step "debug kernel" bash -c 'echo "scripts/debug-kernel.sh is missing"; exit 1'
		continue
	fi
	step "build debug kernel" scripts/debug-kernel.sh --build || continue
	step "guest tests on $k" guest_run "$k"
done
# crash consistency (tests/crash/run): kill QEMU while loopmq flushes
if [ -z "$quick" ] && [ -z "$debug_only" ]; then
	ck=()
	for k in "${kernels[@]}"; do [ "$k" = debug ] || ck+=(--kernel "$k"); done
	[ ${#ck[@]} -gt 0 ] && step "crash consistency" tests/crash/run "${ck[@]}"
fi

echo
echo "=== summary ($(($(date +%s) - t0))s)"
for i in "${!steps[@]}"; do
	echo "${results[i]} $((i + 1)) ${steps[i]} (${times[i]}s)"
done
echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ] && [ "$npass" -gt 0 ]
exit
}

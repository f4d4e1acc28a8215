#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The `make check` driver: builds, style, sparse, tools, harness self-tests,
# then the tests/guest/*.sh in a guest of each kernel (split_suite), then the crash
# consistency trials (tests/crash/run) and the mutants (tests/mutants/run),
# neither with --quick or --debug-only.
#
#   tests/check.sh [--quick] [--debug-only] [--kernel K]... [--no-selftest]
#                  [--guest 'GLOB'] [--full] [--list]
#     --quick        no sparse, self-tests, debug kernel, crash trials or mutants
#     --debug-only   only the debug kernel: build it, run the guest tests on it
#     --kernel K     guest runs only on K (6.1, 6.12, debug; repeatable);
#                    K:replace runs K's guest suite against loopmq in
#                    replace mode (tests/vm/run --driver replace)
#     --no-selftest  skip tests/selftest/
#     --guest GLOB   only the guest tests tests/guest/GLOB (default '*.sh')
#     --full         every Debian kernel runs the whole suite (by default
#                    tests outside BOTH_SET run on one of them a day;
#                    the debug kernel all of DEBUG_SET, not a third of
#                    it; every mutant and self-test, not today's)
#     --list         print what each guest job and the self-test lane
#                    would run today, and exit (CHECK_DAY=D: on day D)
#
# Prints one "ok N step" / "not ok N step" line per step, then
# "N passed, N failed"; exits non-zero if any step failed.
set -uo pipefail
# One compound command: bash parses all of it before running any, so an
# edit to this file cannot break a run in progress.
{
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
quick= debug_only= selftest=1 kernels=() guest='*.sh' full= list=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; selftest=; shift;;
	--debug-only) debug_only=1; shift;;
	--kernel) kernels+=("$2"); shift 2;;
	--no-selftest) selftest=; shift;;
	--guest) guest=$2; shift 2;;
	--full) full=1; shift;;
	--list) list=1; shift;;
	*) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2;;
	esac
done
have_debug=
[ -x scripts/debug-kernel.sh ] && have_debug=1
if [ ${#kernels[@]} -eq 0 ]; then
	if [ -n "$debug_only" ]; then
		kernels=(debug)
	else
		# The guest suite runs in both of loopmq's modes, beside the
		# stock driver on 6.1 (and the debug kernel) and in its place
		# on 6.12: one suite per kernel is what the time budget holds.
		kernels=(6.1 6.12:replace)
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
# Steps in the background: bg runs one and leaves its output, status and
# time in files; collect shows and records it.
bg() {	# bg NAME CMD...
	local name=$1 log s0 rc
	shift
	log=$(logname "$name") s0=$(date +%s)
	rm -f "$log.rc"
	"$@" >"$log" 2>&1
	rc=$?
	echo "$rc $(($(date +%s) - s0))" >"$log.rc"
	return "$rc"
}
collect() {	# collect NAME: a background step's output and outcome
	local log rc=1 sec=0
	log=$(logname "$1")
	[ -f "$log.rc" ] || return 0	# never started (an earlier step failed)
	read -r rc sec <"$log.rc"
	echo "=== $1"
	cat "$log"
	record "$1" "$rc" "$sec" "$log"
}

# guest_run K[:replace][%P] [TEST-NAME...]: guest tests on kernel K; with
# %P only part P of PARTS (every PARTS-th script from the P-th on)
guest_run() {
	local scripts=() all=() t drv=() k=${1%\%*} p="" i
	case $1 in *%*) p=${1##*%};; esac
	if [ $# -gt 1 ]; then
		for t in "${@:2}"; do all+=("tests/guest/$t.sh"); done
	elif [ "$k" = debug ] && [ -z "$debug_only" ] && [ "$guest" = '*.sh' ]; then
		for t in $DEBUG_SET; do all+=("tests/guest/$t.sh"); done
		[ -n "$full" ] || mapfile -t all < <(share "$DEBUG_DAILY" 3 0 "${all[@]}")
	elif [ "${k#*:}" = loop ] && [ "$guest" = '*.sh' ]; then
		for t in $CONTROL_SET; do all+=("tests/guest/$t.sh"); done
	else
		# shellcheck disable=SC2206
		all=(tests/guest/$guest)
		[ -n "$split" ] && [ "$guest" = '*.sh' ] && mapfile -t all < <(split_suite "$k" "${all[@]}")
	fi
	for i in "${!all[@]}"; do
		[ -z "$p" ] || [ $((i % PARTS + 1)) = "$p" ] && scripts+=("${all[i]}")
	done
	if [ ${#scripts[@]} -eq 0 ]; then
		echo "no guest tests in part $p of $PARTS"; return 0
	fi
	if [ -n "$list" ]; then
		echo "$(kname "$k")${p:+, part $p of $PARTS}:" "${scripts[@]##*/}"
		return 0
	fi
	[ "${k%%:*}" = debug ] && { debug_built || return 1; }
	case $k in *:replace) drv=(--driver replace);; *:loop) drv=(--driver loop);; esac
	tests/vm/run --kernel "${k%%:*}" "${drv[@]}" --must-run tests/skips "${scripts[@]}"
}

# The day of the year modulo N (CHECK_DAY=D, a day of the year, overrides
# it): make check runs a share of some work one day and the rest on the
# following days.
day_index() { echo $(( ${CHECK_DAY:-10#$(date +%j)} % $1 )); }
day_parity() { day_index 2; }

# The harness self-tests mostly wait (for timeouts, for guests that hang on
# purpose): they run in the background beside the guest suites.  Those
# that boot guests take CPU from the start of the run, when the debug
# kernel builds: the verdict tests (10, 12) run one day, the guest and
# emulator deaths (20, 25) the next (--full: all); the others every day.
SELFTEST_DAY0='10-verdicts 12-verdict-patterns'
SELFTEST_DAY1='20-guest-death 25-emulator-death'
selftest_today() {	# selftest_today NAME: does it run today?
	local other=$SELFTEST_DAY0
	[ -n "$full" ] && return 0
	[ "$(day_parity)" = 0 ] && other=$SELFTEST_DAY1
	case " $other " in *" $1 "*) return 1;; esac
}

# Both Debian kernels' suites every day: the tests whose subject is where
# the kernels differ (loopmq_compat.h: the queue limits and their update,
# the open mode, the holder of a block-device backing, the media change,
# buffered NOWAIT, the plug's clock) or where loopmq meets the kernel's
# own ABI (losetup, partitions, capacity, replace mode), and the data
# path in every mode.  Every other test runs on one Debian kernel a day,
# on 6.1 one day and on 6.12 (in replace mode) the next (split_suite):
# two days of make check run the whole suite on both.  tests/README.md,
# "Where make check spends its time", says what this saves.
BOTH_SET='00-environment 00-module-load 10-verify-matrix 11-mode-switch
20-flush-discard 21-readonly 23-partitions 24-capacity 27-losetup-compat
31-dio-default 32-replace-loop 76-nested-plug 82-remap 85-nowait-backing
92-dio-auto 93-nowait-read-noio'
share() {	# share DAILY N I SCRIPT...: the scripts in DAILY, and of the
		# others every N-th from today's offset on: lane I's share
	local daily=" $(echo $1) " n=$2 i=$3 d j=0 t
	shift 3
	d=$(day_index "$n")
	for t in "$@"; do
		case $daily in *" $(basename "$t" .sh) "*) echo "$t"; continue;; esac
		[ $(((j + d) % n)) = "$i" ] && echo "$t"
		j=$((j + 1))
	done
}
split_suite() {	# split_suite K SCRIPT...: Debian kernel K's share today
	local k=$1 ki=0 t
	shift
	for t in "${debian[@]}"; do [ "$t" = "$k" ] && break; ki=$((ki + 1)); done
	share "$BOTH_SET" ${#debian[@]} $ki "$@"
}

# The debug kernel (KASAN, lockdep, kmemleak) runs guests 3-10 times slower
# than the Debian kernels: all the tests there take over an hour of the two
# cores.  make check runs on it the tests that exist to find races, leaks,
# lifetime and locking bugs, the inline-dispatch safety tests among them;
# make check-debug (--debug-only) runs every test there.  The others run on
# 6.1 and 6.12 only: the data-path and interface tests 10-verify-matrix,
# 12-stacking, 20-flush-discard, 21-readonly, 22-enospc, 23-partitions,
# 24-capacity, 27-losetup-compat, 28-stats, 29-compat-ioctl32, 30-rotational,
# 31-dio-default, 32-replace-loop, 40-45 (loopmqctl),
# 53-short-backing-read, 59-modparams, 60-scale, and 80-power-loss (needs
# dm-log-writes, not in the debug kernel); also 25-bad-input (its errnos
# are the same there; 50-ioctl-fuzz drives the ioctls' bad-input paths
# under KASAN), and 82-remap (the remap path runs there in 83-pinned,
# 84-pin-races and 89-remap-pool).  83-pinned runs there on one file
# system a day.
DEBUG_SET='00-module-load 11-mode-switch 19-stack-usage
26-detach-under-load 50-ioctl-fuzz 51-ioctl-races 52-ctl-storm 55-dm-faults
56-enospc-race 57-fault-inject 58-sysfs-garbage 69-kmemleak
70-signal-storm 71-remove-open-race 72-detach-partition-race
73-detach-inflight-aio 74-frozen-backing 75-dirty-throttle 76-nested-plug
77-backing-cycle 78-lockdep-inline 83-pinned 84-pin-races 89-remap-pool
92-dio-auto 93-nowait-read-noio'

# Of the debug set, make check runs these every day: the checks only a
# debug kernel can make of the inline dispatch's safety (lockdep's view of
# the submitter's locks, the plug and NOIO order under lockdep) and the
# module's load.  The others run every third day, a third of them a day
# (share; --full: all): each race, leak and lifetime test meets KASAN,
# lockdep and kmemleak at least every third day.  (Half a day, as
# before, took make check to 55.1 minutes on a fresh machine at 6f1f934,
# where the debug kernel's build costs ~1000-1200 s of the two cores; a
# third, 49.9 minutes at d3d1f5d.)
DEBUG_DAILY='00-module-load 76-nested-plug 78-lockdep-inline'

# The control: the tests whose expectations are the stock driver's
# (errnos, the loop ABI, losetup, data, flush and discard, partitions,
# statistics in /proc and sysfs) run against the stock loop driver
# itself (tests/vm/run --driver loop): a test that fails there expects
# something of loopmq the reference driver does not do.  The whole suite
# takes ~800 s there (tests/README.md, "The stock driver as control");
# this set ~260 s.
CONTROL_SET='10-verify-matrix 20-flush-discard 21-readonly 22-enospc
23-partitions 24-capacity 25-bad-input 26-detach-under-load 27-losetup-compat
28-stats 29-compat-ioctl32 30-rotational 40-loopmqctl-attach 41-loopmqctl-list
42-loopmqctl-errors 44-loopmqctl-busy 53-short-backing-read 55-dm-faults
85-nowait-backing 87-memcg'

# The pool: jobs any lane may take once it is free, longest first: the
# debug suite's parts after the first (they wait for the build), the
# mutants, the parts of the Debian kernels' suites after the first, the
# stock-driver control, then the crash trials, one job per Debian kernel
# (the first carries the negative control).  Two lanes take from it: the host lane after its own suite,
# the debug lane after the debug suite's first part.  (A third, the
# self-test lane, made things slower: three guests on the two cores cost 21% more QEMU
# CPU for the same 6.1 suite, 1414 s against 1167, and starved the debug
# kernel's build on a fresh machine.)  A job is taken by creating its
# claim directory, which only one lane can do.
pool=()
# Each kernel's trials start where the previous kernel's ended: with one
# per mode (4) per kernel, one run covers every mode with dio off (the first kernel) and on
# (the second) on one file system, ext4 on even days of the year and xfs
# on odd ones (tests/crash/run's combinations: mode, then dio, then fs);
# each kernel's four trials have each image kind once.
crash_job() {	# crash_job K FIRST: K's trials; FIRST adds the control
	local ctl=--no-control i=0 k nm n day
	nm=$(scripts/names.sh modes | wc -l) n=${CRASH_TRIALS:-$nm}
	[ "$2" = 1 ] && ctl=
	for k in "${debian[@]}"; do [ "${k%%:*}" = "$1" ] && break; i=$((i + 1)); done
	day=$(day_parity)
	HARNESS_TIMEOUT_SCALE=${HARNESS_TIMEOUT_SCALE:-3} \
		tests/crash/run --trials "$n" --first $(((i * n + day * 2 * nm) % (4 * nm))) \
		--kernel "$1" $ctl
}
first_crash=
kname() {	# kname K[:replace|:loop]: how a step names the kernel and mode
	case $1 in
	*:replace) echo "${1%%:*} (replace_loop=1)";;
	*:loop) echo "${1%%:*} (the stock loop driver: the control)";;
	*) echo "$1";;
	esac
}
job_name() {	# job_name JOB: the step name of a pool job
	case $1 in
	guest:*%*) local k=${1#guest:}
		echo "guest tests on $(kname "${k%\%*}"), part ${k##*%} of $PARTS";;
	guest:*) echo "guest tests on $(kname "${1#guest:}")";;
	crash:*) echo "crash consistency on ${1#crash:}";;
	mutants:*) echo "mutants on $(kname "${1#mutants:}")";;
	esac
}
# The mutants listed for a kernel, in name order, alternate between the
# days: each runs every second day, all of them with --full (a day's
# half is about 13 minutes of the two cores' time; the whole set put a
# fresh machine's make check at 57 minutes, over its 55).  Self-test 08
# dry-runs every patch every day.
mutants_share() {	# tests/mutants/run's --share for today
	if [ -n "$full" ]; then echo 0/1; else echo "$(day_parity)/2"; fi
}
mutants_job() {	# mutants_job K[:replace]: tests/mutants/run on K, today's
	local drv=()
	case $1 in *:replace) drv=(--driver replace);; esac
	tests/mutants/run --kernel "${1%%:*}" "${drv[@]}" --share "$(mutants_share)"
}
debug_ready() {	# has the debug lane's build ended (either way)?
	[ -f "$(logname "build debug kernel").rc" ]
}
# pool_run: run the pool's jobs no lane has taken yet, each time the
# first one left in the pool's order.  The debug suite's parts need the
# debug kernel: while its build runs, a lane takes any other job first,
# and waits for the build only when nothing else is left.  (Taking them
# in order, the host lane of a fresh machine's make check at 4ad49c9,
# done with 6.1's suite, waited 4 minutes for the build.)
pool_run() {
	local j took later force=
	while :; do
		took= later=
		for j in "${pool[@]}"; do
			[ -d "$logdir/claim.$j" ] && continue
			if [ -z "$force" ] && [ "${j#guest:debug}" != "$j" ] && ! debug_ready; then
				later=1; continue
			fi
			mkdir "$logdir/claim.$j" 2>/dev/null || continue
			took=1
			case $j in
			guest:*) HARNESS_TIMEOUT_SCALE=${HARNESS_TIMEOUT_SCALE:-3} \
				bg "$(job_name "$j")" guest_run "${j#guest:}";;
			crash:*) bg "$(job_name "$j")" crash_job "${j#crash:}" \
				"$([ "$j" = "$first_crash" ] && echo 1)";;
			mutants:*) HARNESS_TIMEOUT_SCALE=${HARNESS_TIMEOUT_SCALE:-3} \
				bg "$(job_name "$j")" mutants_job "${j#mutants:}";;
			esac
			break
		done
		[ -n "$took" ] && continue
		[ -n "$later" ] || return 0
		force=1
	done
}

debug_lane() {	# build the debug kernel, run its first part, then the pool
	bg "build debug kernel" scripts/debug-kernel.sh --build || return 1
	HARNESS_TIMEOUT_SCALE=${HARNESS_TIMEOUT_SCALE:-3} \
		bg "$(job_name guest:debug%1)" guest_run debug%1
	pool_run
}
debug_built() {	# wait for the debug lane's build (a pool job may come
		# first); fail if it failed
	local log rc=1
	log=$(logname "build debug kernel")
	while [ -n "$debug_pid" ] && [ ! -f "$log.rc" ] && kill -0 "$debug_pid" 2>/dev/null; do
		sleep 5
	done
	[ -f "$log.rc" ] && read -r rc _ <"$log.rc"
	[ "$rc" = 0 ] || echo "the debug kernel was not built (step: build debug kernel)"
	[ "$rc" = 0 ]
}

t0=$(date +%s)
rm -f "$logdir"/*.rc	# a background step's outcome is from this run or none
rm -rf "$logdir"/claim.*
# The Debian kernels' suites: the first runs in the host lane, the others
# go to the pool (not with --quick, which runs them side by side), each in
# PARTS parts: the debug lane, done with its own suite while the host lane
# is still on the second Debian suite, takes a part (measured: the host
# lane ran 6.1 then all of 6.12 and ended ~800 s after the debug lane).
PARTS=${SUITE_PARTS:-2}
debian=()
for k in "${kernels[@]}"; do [ "$k" = debug ] || debian+=("$k"); done
split=
[ -z "$quick" ] && [ -z "$full" ] && [ ${#debian[@]} -gt 1 ] && split=1
# The debug suite too: the debug lane runs part 1 after the build, the
# rest is in the pool, first, as the longest jobs (whichever lane is free
# takes them once the build is done).
for k in "${kernels[@]}"; do
	[ "$k" = debug ] && [ -n "$have_debug" ] || continue
	for ((i = 2; i <= PARTS; i++)); do pool+=("guest:debug%$i"); done
done
# mutants (tests/mutants/run): broken modules the suite must catch, on the
# first Debian kernel (6.1, where all but one of them can be seen) in the
# mode its suite runs in, today's half of them (mutants_share; the whole
# set of one kernel no longer fits the time budget: tests/README.md,
# "Mutants").  A long job: before the Debian suites' parts, so that it
# does not run alone at the end.
if [ -z "$quick" ] && [ -z "$debug_only" ] && [ ${#debian[@]} -gt 0 ]; then
	pool+=("mutants:${debian[0]}")
fi
if [ -z "$quick" ]; then
	for k in "${debian[@]:1}"; do
		for ((i = 1; i <= PARTS; i++)); do pool+=("guest:$k%$i"); done
	done
fi
# the control, on the newest Debian kernel (6.1's stock driver drops and
# re-adds partitions where 23-partitions forbids it)
if [ -z "$quick" ] && [ -z "$debug_only" ] && [ ${#debian[@]} -gt 0 ]; then
	pool+=("guest:${debian[${#debian[@]} - 1]%%:*}:loop")
fi
# then the crash consistency trials, the shortest jobs, last.
# Crash consistency (tests/crash/run): kill QEMU while loopmq flushes
# (see crash_job for which trials); the durability of flushes is the
# power-loss trials' job (80-power-loss).
if [ -z "$quick" ] && [ -z "$debug_only" ] && [ ${#debian[@]} -gt 0 ]; then
	for k in "${debian[@]}"; do pool+=("crash:${k%%:*}"); done
	first_crash=crash:${debian[0]%%:*}
fi
if [ -n "$list" ]; then	# --list: what each guest job runs today
	[ ${#debian[@]} -gt 0 ] && guest_run "${debian[0]}"
	for k in "${kernels[@]}"; do [ "$k" = debug ] && guest_run debug%1; done
	for j in "${pool[@]}"; do
		case $j in
		guest:*) guest_run "${j#guest:}";;
		mutants:*) k=${j#mutants:}
			echo "$(job_name "$j"):" $(tests/mutants/run --kernel "${k%%:*}" \
				--share "$(mutants_share)" --list);;
		*) echo "$(job_name "$j")";;
		esac
	done
	if [ -n "$selftest" ] && [ -z "$debug_only" ]; then
		for s in tests/selftest/[0-9]*.sh; do
			n=$(basename "$s" .sh)
			selftest_today "$n" && echo "selftest $n"
		done
	fi
	exit 0
fi
# Two lanes, one per core: the debug kernel's build and suite start at
# once in the background; host steps and the first Debian kernel's suite
# run here meanwhile (the self-tests, which mostly wait, beside them); both
# lanes then take what is left in the pool (pool_run).  Test timeouts are
# scaled for the shared cores (HARNESS_TIMEOUT_SCALE, tests/vm/run).
want_debug=
for k in "${kernels[@]}"; do [ "$k" = debug ] && want_debug=1; done
debug_pid=
if [ -n "$want_debug" ]; then
	if [ -n "$have_debug" ]; then
		echo "=== debug kernel build and guest tests: started in the background"
		debug_lane &
		debug_pid=$!
	else
		step "debug kernel" bash -c 'echo "scripts/debug-kernel.sh is missing"; exit 1'
	fi
fi
if [ -z "$debug_only" ]; then
	step "make modules-all" make --no-print-directory modules-all
	step "make style" make --no-print-directory style
	[ -z "$quick" ] && step "make sparse" make --no-print-directory sparse
	[ -f tools/Makefile ] && step "make -C tools" make --no-print-directory -C tools
	[ -f tools/Makefile ] && [ -z "$quick" ] &&
		step "make -C tools check" make --no-print-directory -C tools check
	[ -x tests/host-dkms.sh ] && [ -z "$quick" ] && [ "$(id -u)" = 0 ] &&
		step "dkms build for every kernel" tests/host-dkms.sh
	# every marked figure in README.md and docs/ against its committed run
	step "bench figures" bench/report.py --check-docs
fi
# The harness self-tests (SELFTEST_DAY0/1 above) in the background.
selftest_lane() {
	local s n
	for s in tests/selftest/[0-9]*.sh; do
		n=$(basename "$s" .sh)
		[ -f "$s" ] && selftest_today "$n" && bg "selftest $n" "$s"
	done
}
selftest_pid=
if [ -n "$selftest" ] && [ -z "$debug_only" ]; then
	echo "=== harness self-tests: started in the background"
	selftest_lane &
	selftest_pid=$!
fi
nk=0
for k in "${kernels[@]}"; do [ "$k" = debug ] || nk=$((nk + 1)); done
if [ -n "$quick" ] && [ "$nk" -gt 1 ]; then
	# no debug lane: the Debian kernels' suites share the cores
	for k in "${kernels[@]}"; do
		[ "$k" = debug ] && continue
		(HARNESS_TIMEOUT_SCALE=${HARNESS_TIMEOUT_SCALE:-2} bg "guest tests on $(kname "$k")" guest_run "$k") &
	done
	wait
	for k in "${kernels[@]}"; do [ "$k" = debug ] || collect "guest tests on $(kname "$k")"; done
else
	scale=1
	[ -n "$debug_pid" ] && scale=3
	if [ ${#debian[@]} -gt 0 ]; then
		HARNESS_TIMEOUT_SCALE=${HARNESS_TIMEOUT_SCALE:-$scale} \
			step "guest tests on $(kname "${debian[0]}")" guest_run "${debian[0]}"
	fi
fi
pool_run
if [ -n "$selftest_pid" ]; then
	wait "$selftest_pid"
	for s in tests/selftest/[0-9]*.sh; do
		[ -f "$s" ] && collect "selftest $(basename "$s" .sh)"
	done
fi
if [ -n "$debug_pid" ]; then
	echo "=== waiting for the debug kernel's lane"
	wait "$debug_pid"
	collect "build debug kernel"
	collect "$(job_name guest:debug%1)"
fi
for j in "${pool[@]}"; do collect "$(job_name "$j")"; done

echo
echo "=== summary ($(($(date +%s) - t0))s)"
for i in "${!steps[@]}"; do
	echo "${results[i]} $((i + 1)) ${steps[i]} (${times[i]}s)"
done
echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ] && [ "$npass" -gt 0 ]
exit
}

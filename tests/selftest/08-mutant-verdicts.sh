#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side: the mutant runner counts a kill only where the mutant's test
# failed as its "# Kill:" header says.  Judged from a made-up guest log
# (tests/mutants/run --log), no guest booted: a failed set-up (a mkfs) or
# another check than the header names, a test that passed or skipped, and
# a patch without the header are all failures of the run; a check or a
# harness verdict the header names is a kill.  Then every real mutant
# has a "# Kill:" header that is a valid extended regex, and applies to
# the tree, and the day's halves (--share) together run every mutant.
. "$(dirname "$0")/lib.sh"
d=$st_tmp/mutants
mkdir -p "$d"
mk() {	# mk NAME KILL-ERE [KERNELS]: a patch with a header only
	{
		echo "# Test: 20-flush-discard"
		[ -z "${3:-}" ] || echo "# Kernels: $3"
		echo "# What: self-test mutant $1"
		[ -z "$2" ] || echo "# Kill: $2"
	} >"$d/$1.patch"
}
mk by-check "^discard: read back zeroes"
mk by-setup "^discard: read back zeroes"
mk by-other "^discard: read back zeroes"
mk by-splat "^dmesg: BUG: "
mk passed "^discard"
mk skipped "^discard"
mk no-header ""
mk elsewhere "^discard" debug
log=$st_tmp/run.log
cat >"$log" <<'L'
not ok 1 01-by-check # exit status 1: discard: read back zeroes: got 'ab', want '00'
not ok 2 02-by-setup # exit status 1: mkfs.xfs /dev/vda: 'mkfs.xfs -f /dev/vda' exited 1
not ok 3 03-by-other # exit status 1: flush: the backing was written: got '0', want '1'
not ok 4 04-by-splat # dmesg: BUG: unable to handle page fault for address: 0000000000000008
ok 5 05-passed
ok 6 06-skipped # SKIP no xfs_io
not ok 7 07-no-header # exit status 1: discard: read back zeroes: got 'ab', want '00'
8 passed, 5 failed
L
out=$st_tmp/table
LMQ_MUTANTS=$d "$top/tests/mutants/run" --kernel 6.1 --log "$log" >"$out" 2>&1
rc=$?
cat "$out" | sed 's/^/# /'
st_ok $((rc == 0)) "a run with a mutant not killed as its header says fails"
st_line "the named check kills" "$out" '^by-check +20-flush-discard +killed: discard: read back zeroes'
st_line "a failed mkfs is no kill" "$out" '^by-setup +20-flush-discard +failed elsewhere: mkfs'
st_line "another check is no kill" "$out" '^by-other +20-flush-discard +failed elsewhere: flush'
st_line "a harness verdict the header names kills" "$out" '^by-splat +20-flush-discard +killed: dmesg: BUG'
st_line "a test that passed lets it survive" "$out" '^passed +20-flush-discard +survived$'
st_line "a test that skipped lets it survive" "$out" '^skipped +20-flush-discard +survived \(its test skipped\)'
st_line "no header, no kill" "$out" '^no-header +20-flush-discard +no # Kill: header'
grep -q '^elsewhere ' "$out"
st_ok $((! $?)) "a mutant listed for another kernel is not judged"
st_line "the count" "$out" '^2 passed, 5 failed$'

bad=0
for p in "$top"/tests/mutants/*.patch; do
	k=$(sed -n 's/^# Kill: *//p' "$p" | head -n 1)
	if [ -z "$k" ]; then
		echo "# $(basename "$p"): no # Kill: header"; bad=1; continue
	fi
	grep -Eq -- "$k" </dev/null
	[ $? = 2 ] && { echo "# $(basename "$p"): # Kill: is no valid ERE"; bad=1; }
done
st_ok $bad "every mutant names what must kill it (# Kill:, a valid ERE)"

# A patch that no longer applies fails the mutant step after the 6.1
# suite (a function moved to another file): say so here, in seconds.
bad=0
for p in "$top"/tests/mutants/*.patch; do
	patch --dry-run -s -p1 -d "$top" <"$p" >/dev/null 2>&1 ||
		{ echo "# $(basename "$p"): does not apply to the tree"; bad=1; }
done
st_ok $bad "every mutant applies to the tree (patch --dry-run)"

# make check runs a day's half (--share 0/2, 1/2): the two halves of
# each kernel's list are disjoint, of equal size give or take one, and
# together the whole list, which is every patch listed for the kernel.
for k in 6.1 6.12; do
	r=$top/tests/mutants/run
	all=$("$r" --kernel $k --list) h0=$("$r" --kernel $k --share 0/2 --list)
	h1=$("$r" --kernel $k --share 1/2 --list)
	want=$(for p in "$top"/tests/mutants/*.patch; do
		ks=$(sed -n 's/^# Kernels: *//p' "$p" | head -n 1)
		case " ${ks:-6.1 6.12} " in *" $k "*) basename "$p" .patch;; esac
	done)
	n0=$(grep -c . <<<"$h0") n1=$(grep -c . <<<"$h1")
	st_check "$k: --list is every mutant listed for $k ($(grep -c . <<<"$all"))" \
		[ "$all" = "$want" ]
	st_check "$k: the halves make the whole list, none twice ($n0 + $n1)" \
		[ "$(sort <<<"$h0$(printf '\n%s' "$h1")")" = "$(sort <<<"$all")" ]
	st_check "$k: the halves differ by one at most" [ $((n0 - n1)) -ge 0 -a $((n0 - n1)) -le 1 ]
done
st_done

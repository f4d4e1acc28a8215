#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# bench/report.py --check-docs can fail: in a scratch git repository with
# made-up result sets, a right figure passes, and a wrong figure, a missing
# run, a missing cell, a revision not in the repository, one that is not an
# ancestor of HEAD and a dirty run each fail; the forms the generated
# sections use (count, is=, except=, ctxsw, setting) pass, and a wrong count
# or an except= naming no cell fail.  Host only, no guest.
. "$(dirname "$0")/lib.sh"
r=$st_tmp/repo
mkdir -p "$r/docs/results"
git -C "$r" init -q
git -C "$r" -c user.name=t -c user.email=t@t commit -q --allow-empty -m base
base=$(git -C "$r" rev-parse HEAD)
git -C "$r" checkout -q -b side
git -C "$r" -c user.name=t -c user.email=t@t commit -q --allow-empty -m side
side=$(git -C "$r" rev-parse HEAD)
git -C "$r" checkout -q -
cell() {	# target mode iops run1 run2 run3 [workload]
	printf '{"kernel": "6.12", "target": "%s", "mode": "%s", "backing": "ram", "raw": "",
	  "workload": "%s", "ok": true, "iops": %s,
	  "iops_runs": [%s, %s, %s], "spread_pct": 0.2, "lat_p50_us": 4.2,
	  "ctxsw_per_io": 0.01}' "$1" "$2" "${7:-randread-4k-libaio-qd32}" "$3" "$4" "$5" "$6"
}
mkset() {	# name revision dirty
	mkdir -p "$r/docs/results/$1"
	{
		echo "["
		cell dm-linear "" 100000.0 99900 100000 100100; echo ","
		cell loop dio-on 50000.0 49900 50000 50100; echo ","
		cell loop dio-off 60000.0 59900 60000 60100; echo ","
		cell loopmq auto 90000.0 89900 90000 90100; echo ","
		w=randwrite-512-sync-qd1
		cell dm-linear "" 100000.0 99900 100000 100100 $w; echo ","
		cell loop dio-on 50000.0 49900 50000 50100 $w; echo ","
		cell loop dio-off 40000.0 39900 40000 40100 $w; echo ","
		cell loopmq auto 45000.0 44900 45000 45100 $w
		echo "]"
	} >"$r/docs/results/$1/bench.json"
	printf 'date: 2026-12-06\nrevision: %s\ndirty: %s\n' "$2" "$3" \
		>"$r/docs/results/$1/meta.txt"
}
mkset good "$base" no
mkset dirty "$base" dirty
mkset alien 0123456789abcdef0123456789abcdef01234567 no
mkset side "$side" no
fig='ratio loopmq:auto/dm-linear kernel=6.12 backing=ram workload=randread-4k-libaio-qd32 fmt=.1%'
doc() {	# name text
	printf '%s\n' "$2" >"$st_tmp/$1.md"
}
doc right "loopmq reaches 90.0%<!-- fig good: $fig --> of dm-linear, 1.20x<!-- fig good: median ratio loopmq:auto/loop:best workload=* fmt=.2x --> stock loop (\`<!-- fig nowhere: iops x fmt=.1 -->\` in code is not a figure)"
doc wrong "loopmq reaches 91.0%<!-- fig good: $fig --> of dm-linear"
doc digits "loopmq reaches 190.0%<!-- fig good: $fig --> of dm-linear"
doc norun "loopmq reaches 90.0%<!-- fig no-such-run: $fig --> of dm-linear"
doc nocell "loopmq reaches 90.0%<!-- fig good: ratio loopmq:auto/dm-linear backing=lat10us fmt=.1% -->"
doc alien "loopmq reaches 90.0%<!-- fig alien: $fig --> of dm-linear"
doc side "loopmq reaches 90.0%<!-- fig side: $fig --> of dm-linear"
doc dirty "loopmq reaches 90.0%<!-- fig dirty: $fig --> of dm-linear"
# The aggregates and selectors the generated sections use (--doc-section):
# count, count with is=, except=, ctxsw, setting.
doc forms "2<!-- fig good: count ratio loopmq:auto/loop:best kernel=6.12 fmt=.0 -->, \
1<!-- fig good: count verdict loopmq:auto/loop:best kernel=6.12 is=ahead fmt=.0 -->, \
0<!-- fig good: count verdict loopmq:auto/dm-linear kernel=6.12 is=ahead,tie fmt=.0 -->, \
dio-off<!-- fig good: setting loop:best workload=randread-4k-libaio-qd32 fmt=word -->, \
0.010<!-- fig good: ctxsw loopmq:auto workload=randread-4k-libaio-qd32 fmt=.3 -->, \
90.0%<!-- fig good: max ratio loopmq:auto/dm-linear except=ram/randwrite-512-sync-qd1 fmt=.1% -->"
doc badexcept "90.0%<!-- fig good: max ratio loopmq:auto/dm-linear except=ram/randread-4k-psync-qd1 fmt=.1% -->"
doc badcount "3<!-- fig good: count ratio loopmq:auto/loop:best kernel=6.12 fmt=.0 -->"
chk() { "$top/bench/report.py" --check-docs --root "$r" "$st_tmp/$1.md" >"$st_tmp/$1.out" 2>&1; }
st_check "a right figure passes" chk right
st_line "two figures checked" "$st_tmp/right.out" '^2 passed, 0 failed$'
st_check "count, is=, except=, ctxsw and setting pass" chk forms
st_line "six figures checked" "$st_tmp/forms.out" '^6 passed, 0 failed$'
for t in wrong digits norun nocell alien side dirty badexcept badcount; do
	chk "$t"
	st_ok $(( $? == 0 )) "--check-docs fails: $t"
	st_line "$t: one figure failed" "$st_tmp/$t.out" '^0 passed, 1 failed$'
done
st_line "the wrong figure's message" "$st_tmp/wrong.out" "says '91.0%', the data 90.0%"
st_line "the missing run's message" "$st_tmp/norun.out" 'no run docs/results/no-such-run'
st_line "the revision not in the repository" "$st_tmp/alien.out" 'is not in this repository'
st_line "the revision not in HEAD's history" "$st_tmp/side.out" 'is not an ancestor of HEAD'
st_line "the dirty run" "$st_tmp/dirty.out" 'its tree was dirty'
st_line "the missing cell" "$st_tmp/nocell.out" "no loopmq:auto cell with backing=lat10us"
st_line "an except= that selects no cell" "$st_tmp/badexcept.out" 'is not a selected loopmq:auto cell'
st_line "a wrong count" "$st_tmp/badcount.out" "says '3', the data 2"
st_done

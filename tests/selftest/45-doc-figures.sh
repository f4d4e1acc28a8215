#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# bench/report.py --check-docs can fail: in a scratch git repository with
# made-up result sets, a right figure passes, and a wrong figure, a missing
# run, a missing cell, a revision not in the repository, one that is not an
# ancestor of HEAD and a dirty run each fail.  Host only, no guest.
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
cell() {	# target mode iops run1 run2 run3
	printf '{"kernel": "6.12", "target": "%s", "mode": "%s", "backing": "ram", "raw": "",
	  "workload": "randread-4k-libaio-qd32", "ok": true, "iops": %s,
	  "iops_runs": [%s, %s, %s], "spread_pct": 0.2, "lat_p50_us": 4.2,
	  "ctxsw_per_io": 0.01}' "$@"
}
mkset() {	# name revision dirty
	mkdir -p "$r/docs/results/$1"
	{
		echo "["
		cell dm-linear "" 100000.0 99900 100000 100100; echo ","
		cell loop dio-on 50000.0 49900 50000 50100; echo ","
		cell loop dio-off 60000.0 59900 60000 60100; echo ","
		cell loopmq auto 90000.0 89900 90000 90100
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
doc right "loopmq reaches 90.0%<!-- fig good: $fig --> of dm-linear, 1.50x<!-- fig good: ratio loopmq:auto/loop:best workload=* fmt=.2x --> stock loop (\`<!-- fig nowhere: iops x fmt=.1 -->\` in code is not a figure)"
doc wrong "loopmq reaches 91.0%<!-- fig good: $fig --> of dm-linear"
doc digits "loopmq reaches 190.0%<!-- fig good: $fig --> of dm-linear"
doc norun "loopmq reaches 90.0%<!-- fig no-such-run: $fig --> of dm-linear"
doc nocell "loopmq reaches 90.0%<!-- fig good: ratio loopmq:auto/dm-linear backing=lat10us fmt=.1% -->"
doc alien "loopmq reaches 90.0%<!-- fig alien: $fig --> of dm-linear"
doc side "loopmq reaches 90.0%<!-- fig side: $fig --> of dm-linear"
doc dirty "loopmq reaches 90.0%<!-- fig dirty: $fig --> of dm-linear"
chk() { "$top/bench/report.py" --check-docs --root "$r" "$st_tmp/$1.md" >"$st_tmp/$1.out" 2>&1; }
st_check "a right figure passes" chk right
st_line "two figures checked" "$st_tmp/right.out" '^2 passed, 0 failed$'
for t in wrong digits norun nocell alien side dirty; do
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
st_done

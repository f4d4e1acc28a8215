#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build loopmq.ko (and the test-only modules under tests/) for one kernel
# build tree, with W=1, in a scratch copy so several kernels never share
# object files.  Any compiler or modpost warning fails the build.
#
#   scripts/build-module.sh KDIR OUTDIR [extra make args, e.g. C=2]
#
# OUTDIR receives loopmq.ko and the test modules.
set -euo pipefail
kdir=$1 out=$2; shift 2
top=$(cd "$(dirname "$0")/.." && pwd)
work=$out/src
rm -rf "$work"; mkdir -p "$work"
( cd "$top" && cp --parents Kbuild $(ls ./*.c ./*.h 2>/dev/null) include/uapi/*.h "$work"/ )
log=$out/build.log
: >"$log"
make -C "$kdir" M="$work" W=1 "$@" modules >>"$log" 2>&1 || {
	cat "$log" >&2; echo "build-module.sh: loopmq build failed for $kdir" >&2; exit 1; }
for t in "$top"/tests/modules/*/Kbuild; do
	[ -f "$t" ] || continue
	d=$out/$(basename "$(dirname "$t")")
	rm -rf "$d"; cp -r "$(dirname "$t")" "$d"
	make -C "$kdir" M="$d" W=1 "$@" modules >>"$log" 2>&1 || {
		cat "$log" >&2; echo "build-module.sh: test module build failed in $d" >&2; exit 1; }
	cp "$d"/*.ko "$out"/
done
if grep -E 'warning:|error:|WARNING:' "$log" >&2; then
	echo "build-module.sh: warnings building for $kdir (see above)" >&2
	exit 1
fi
cp "$work/loopmq.ko" "$out/"

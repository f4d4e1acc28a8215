#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Print the installed Debian kernels loopmq targets, one per line:
#   <series> <kernel release>        e.g. "6.1 6.1.0-57-amd64"
# Only kernels with both an image and a build tree are listed.
# With an argument (a series such as 6.12, or a full release), print just
# that kernel's release, or fail.
set -euo pipefail

list() {
	local d rel series
	for d in /lib/modules/*/build; do
		[ -f "$d/Makefile" ] || continue
		rel=${d#/lib/modules/}; rel=${rel%/build}
		[ -f "/boot/vmlinuz-$rel" ] || continue
		series=$(echo "$rel" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
		echo "$series $rel"
	done | sort -V
}

if [ $# -eq 0 ]; then
	list
	exit 0
fi
rel=$(list | awk -v k="$1" '$1 == k || $2 == k { print $2 }' | tail -n 1)
[ -n "$rel" ] || { echo "kernels.sh: no installed kernel matches '$1'" >&2; exit 1; }
echo "$rel"

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Unpack Debian's linux-source-6.1 once into the cache and print the tree.
# make style (checkpatch) and the debug kernel's build call this at the
# same time on a fresh machine: one unpacks, the other waits for it (a
# lock beside the tree), or both would empty and fill the same directory.
set -euo pipefail
cache=${LOOPMQ_CACHE:-/var/cache/loopmq}
tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1)
[ -n "$tarball" ] || { echo "linux-source.sh: linux-source-6.1 is not installed" >&2; exit 1; }
tree=$cache/linux-source-6.1
stamp=$tree/.loopmq-unpacked
mkdir -p "$cache"
exec 8>"$tree.lock"
flock 8
if [ ! -f "$stamp" ] || [ "$tarball" -nt "$stamp" ]; then
	rm -rf "$tree"
	tar -C "$cache" -xf "$tarball"
	touch "$stamp"
fi
exec 8>&-
echo "$tree"

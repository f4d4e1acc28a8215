#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Unpack Debian's linux-source-6.1 once into the cache and print the tree.
set -euo pipefail
cache=${LOOPMQ_CACHE:-/var/cache/loopmq}
tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1)
[ -n "$tarball" ] || { echo "linux-source.sh: linux-source-6.1 is not installed" >&2; exit 1; }
tree=$cache/linux-source-6.1
stamp=$tree/.loopmq-unpacked
if [ ! -f "$stamp" ] || [ "$tarball" -nt "$stamp" ]; then
	mkdir -p "$cache"
	rm -rf "$tree"
	tar -C "$cache" -xf "$tarball"
	touch "$stamp"
fi
echo "$tree"

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build (once) and locate loopmq's debug kernel: Debian's linux-source-6.1,
# `make tinyconfig` + tests/debug-kernel.config (KASAN, lockdep, kmemleak,
# fault injection, the block drivers the tests use).
#
#   scripts/debug-kernel.sh --build   build unless cached, then --print
#   scripts/debug-kernel.sh --print   print the lines below, fail if not built
#   scripts/debug-kernel.sh --key     print the cache key
#
# --print output:
#   bzImage=<path to the kernel image>
#   build=<kernel build dir, usable as KDIR for out-of-tree modules>
#   modules=<dir holding lib/modules/<release>/ (decompressed .ko files)>
#   release=<kernel release>
#
# The cache lives outside the repo, in $LOOPMQ_CACHE (/var/cache/loopmq)
# /debug-kernel-<linux-source version>-<sha256 of the fragment, 16 hex>/,
# so an edit to the fragment or a new linux-source-6.1 builds a new kernel.
# The shared source tree is only read: the build uses O=<cache>/build.
# Environment: JOBS (default 2), NICE (default 10).
#
# Booting it under QEMU TCG: add pci=noacpi (or acpi=off) to the command
# line.  With KASAN + lockdep the ACPI interpreter runs the PCI routing
# method (_PRT) into its 30 s loop timeout, virtio-blk gets no interrupt and
# the boot hangs; tests/vm/run --kernel debug adds pci=noacpi.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
frag=$top/tests/debug-kernel.config
cache_root=${LOOPMQ_CACHE:-/var/cache/loopmq}
jobs=${JOBS:-2}
niceness=${NICE:-10}

die() { echo "debug-kernel.sh: $*" >&2; exit 1; }

key() {
	local ver sum
	ver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null) ||
		die "linux-source-6.1 is not installed (scripts/install-deps.sh)"
	[ -f "$frag" ] || die "missing $frag"
	sum=$(sha256sum "$frag" | cut -c1-16)
	echo "${ver}-${sum}"
}

dir() { echo "$cache_root/debug-kernel-$(key)"; }

# tinyconfig starts from a 32-bit configuration, so CONFIG_FRAME_WARN keeps
# the 32-bit default (1024) after 64BIT=y.  External modules built against
# this tree are checked at 2048 instead, the 64-bit default and Debian's
# value (KASAN's stack redzones grow frames); the threshold only decides
# which compiler warnings appear, so the kernel is not rebuilt for it.
frame_warn_for_modules() {
	local b=$1/build
	[ -f "$1/.frame-warn-2048" ] && return 0
	sed -i 's/^CONFIG_FRAME_WARN=.*/CONFIG_FRAME_WARN=2048/' "$b/.config" "$b/include/config/auto.conf"
	sed -i 's/^#define CONFIG_FRAME_WARN .*/#define CONFIG_FRAME_WARN 2048/' "$b/include/generated/autoconf.h"
	grep -qx 'CONFIG_FRAME_WARN=2048' "$b/include/config/auto.conf" ||
		die "could not set CONFIG_FRAME_WARN for external modules in $b"
	touch "$1/.frame-warn-2048"
}

print() {
	local d rel
	d=$(dir)
	[ -f "$d/.built" ] || die "debug kernel not built yet ($d): run $0 --build"
	rel=$(cat "$d/build/include/config/kernel.release")
	[ -f "$d/build/arch/x86/boot/bzImage" ] || die "no bzImage in $d/build"
	[ -d "$d/mods/lib/modules/$rel" ] || die "no modules in $d/mods"
	echo "bzImage=$d/build/arch/x86/boot/bzImage"
	echo "build=$d/build"
	echo "modules=$d/mods"
	echo "release=$rel"
}

# Every line of the fragment must be in the final .config as written;
# "# CONFIG_X is not set" is satisfied by an absent CONFIG_X too.
verify_config() {
	local cfg=$1 line sym bad=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*)
			grep -qxF -- "$line" "$cfg" || {
				sym=${line%%=*}
				echo "debug-kernel.sh: asked '$line', got '$(grep -E "^(# )?$sym[= ]" "$cfg" || echo "$sym absent")'" >&2
				bad=1
			}
			;;
		"# CONFIG_"*" is not set")
			sym=${line#\# }; sym=${sym%% *}
			if grep -qE "^$sym=" "$cfg"; then
				echo "debug-kernel.sh: asked '$line', got '$(grep -E "^$sym=" "$cfg")'" >&2
				bad=1
			fi
			;;
		esac
	done <"$frag"
	return $bad
}

build() {
	local d src b start rel
	d=$(dir)
	mkdir -p "$cache_root"
	exec 9>"$d.lock"
	flock 9		# one build per key at a time; a waiter then finds it built
	if [ -f "$d/.built" ]; then
		frame_warn_for_modules "$d"
		print
		return
	fi
	src=$("$top/scripts/linux-source.sh")
	start=$(date +%s)
	b=$d/build
	rm -rf "$d"
	mkdir -p "$b"
	echo "debug-kernel.sh: building in $d (log: $d/build.log)" >&2
	{
		make -C "$src" O="$b" tinyconfig
		# merge_config.sh makes its temporary files in the current dir.
		(cd "$b" && "$src/scripts/kconfig/merge_config.sh" -m -O "$b" "$b/.config" "$frag")
		make -C "$src" O="$b" olddefconfig
	} >"$d/build.log" 2>&1 || { tail -n 40 "$d/build.log" >&2; die "configuration failed"; }
	verify_config "$b/.config" || die "olddefconfig dropped or changed options (see above); fix $frag"
	nice -n "$niceness" make -C "$src" O="$b" -j"$jobs" bzImage modules >>"$d/build.log" 2>&1 ||
		{ tail -n 60 "$d/build.log" >&2; die "kernel build failed"; }
	make -C "$src" O="$b" INSTALL_MOD_PATH="$d/mods" modules_install >>"$d/build.log" 2>&1 ||
		{ tail -n 40 "$d/build.log" >&2; die "modules_install failed"; }
	rel=$(cat "$b/include/config/kernel.release")
	# The guest gets the modules without the symlinks back into this tree.
	rm -f "$d/mods/lib/modules/$rel/build" "$d/mods/lib/modules/$rel/source"
	if find "$d/mods" -name '*.ko.*' | grep -q .; then
		die "compressed modules in $d/mods (CONFIG_MODULE_COMPRESS_NONE lost?)"
	fi
	frame_warn_for_modules "$d"
	echo "$(( $(date +%s) - start ))" >"$d/build-seconds"
	touch "$d/.built"
	echo "debug-kernel.sh: built $rel in $(cat "$d/build-seconds") s" >&2
	print
}

case "${1:-}" in
--build) build ;;
--print) print ;;
--key) key ;;
*) echo "usage: $0 --build | --print | --key" >&2; exit 2 ;;
esac

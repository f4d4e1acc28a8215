#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install every Debian package loopmq needs to build, test and benchmark.
# Idempotent: does nothing when everything is already there.
set -euo pipefail

PKGS_MAIN=(
	build-essential bc bison flex libelf-dev libssl-dev dwarves
	qemu-system-x86 fio busybox-static cpio kmod xz-utils zstd
	e2fsprogs xfsprogs util-linux dmsetup sparse linux-source-6.1 patch
	gnuplot-nox python3 jq man-db groff-base dkms gcc-multilib
	linux-image-amd64 linux-headers-amd64
)
PKGS_BPO=(linux-image-amd64 linux-headers-amd64)

missing() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q '^install ok installed$' || echo "$p"
	done
}

have_kernel() {	# $1 = 6.1 | 6.12
	compgen -G "/lib/modules/$1.*-amd64/build/Makefile" >/dev/null ||
		compgen -G "/lib/modules/$1.*+deb12-amd64/build/Makefile" >/dev/null
}

need=$(missing "${PKGS_MAIN[@]}")
if [ -z "$need" ] && have_kernel 6.1 && have_kernel 6.12; then
	exit 0
fi

[ "$(id -u)" = 0 ] || { echo "install-deps: must run as root" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive

# bookworm-backports: the same archive host and components as bookworm.
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	uri=$(grep -rhs -m1 '^URIs:.*debian/\?$' /etc/apt/sources.list.d/ | awk '{print $2}')
	[ -n "$uri" ] || uri=$(grep -hs -m1 '^deb .*bookworm ' /etc/apt/sources.list | awk '{print $2}')
	[ -n "$uri" ] || uri=http://deb.debian.org/debian
	cat >/etc/apt/sources.list.d/loopmq-backports.sources <<SRC
Types: deb
URIs: $uri
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

apt-get update -q -o Acquire::Retries=3
apt-get install -y -q --no-install-recommends "${PKGS_MAIN[@]}"
have_kernel 6.12 ||
	apt-get install -y -q --no-install-recommends -t bookworm-backports "${PKGS_BPO[@]}"
have_kernel 6.1 && have_kernel 6.12 || {
	echo "install-deps: kernel headers for 6.1 and 6.12 still missing" >&2
	exit 1
}

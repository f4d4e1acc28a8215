#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# host-dkms: the module builds through DKMS with the top-level dkms.conf for
# every installed kernel (scripts/kernels.sh).  Copies the module sources to
# /usr/src/loopmq-<version>, runs `dkms add` and `dkms build -k <kernel>`,
# checks the built module (name, vermagic, license, the module parameters
# docs/INTERFACES.md promises), then `dkms remove --all` and checks nothing is left.
# Runs on the host as root; does not install into /lib/modules.
#   tests/host-dkms.sh [--rev REV]   (default: the working tree; --rev takes
#                                    the sources as committed in git REV)
# Prints TAP and "N passed, N failed"; exit 0 only if everything passed,
# 77 when it cannot run here (not root, no dkms).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rev=
case ${1:-} in
--rev) rev=${2:?--rev needs a git revision};;
"") ;;
*) echo "usage: $0 [--rev REV]" >&2; exit 2;;
esac
tree=$top
if [ -n "$rev" ]; then
	tree=$(mktemp -d)
	trap 'rm -rf "$tree"' EXIT
	git -C "$top" archive "$rev" | tar -x -C "$tree" ||
		{ echo "Bail out! cannot export git revision $rev"; echo "0 passed, 1 failed"; exit 1; }
fi
n=0 npass=0 nfail=0
ok()   { n=$((n + 1)); npass=$((npass + 1)); echo "ok $n - $*"; }
nok()  { n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n - $*"; }
diag() { echo "# $*"; }
# t DESC CMD...: pass when CMD exits 0, show its output otherwise
t() {
	local d=$1 out rc
	shift
	out=$("$@" 2>&1); rc=$?
	if [ $rc -eq 0 ]; then ok "$d"; else
		nok "$d (exit $rc)"
		printf '%s\n' "$out" | tail -n 25 | sed 's/^/#   /'
	fi
	return $rc
}
finish() {
	echo "$npass passed, $nfail failed"
	[ "$nfail" -eq 0 ] && [ "$npass" -gt 0 ]
	exit $?
}
skip_all() { echo "1..0 # SKIP $*"; echo "0 passed, 0 failed"; exit 77; }

[ "$(id -u)" = 0 ] || skip_all "needs root"
command -v dkms >/dev/null || skip_all "no dkms (scripts/install-deps.sh installs it)"

conf=$tree/dkms.conf
[ -f "$conf" ] || { nok "dkms.conf exists at the top level"; finish; }
ok "dkms.conf exists at the top level"
# conf VAR: a value from dkms.conf (sourced as dkms does, in a subshell)
conf() {
	# shellcheck disable=SC1090
	(set +u; kernelver=K dkms_tree=T; . "$conf" >/dev/null 2>&1; eval "echo \"\${$1}\"")
}
name=$(conf PACKAGE_NAME) ver=$(conf PACKAGE_VERSION)
mod=$(conf 'BUILT_MODULE_NAME[0]') dest=$(conf 'DEST_MODULE_LOCATION[0]')
auto=$(conf AUTOINSTALL)
[ "$name" = loopmq ] && ok "PACKAGE_NAME is loopmq" || nok "PACKAGE_NAME is '$name', want loopmq"
[ -n "$ver" ] && ok "PACKAGE_VERSION is set ($ver)" || { nok "PACKAGE_VERSION is set"; finish; }
[ "$mod" = loopmq ] && ok "BUILT_MODULE_NAME is loopmq" || nok "BUILT_MODULE_NAME is '$mod'"
[ "$dest" = /extra ] && ok "DEST_MODULE_LOCATION is /extra" || nok "DEST_MODULE_LOCATION is '$dest'"
[ "$auto" = yes ] && ok "AUTOINSTALL is yes" || nok "AUTOINSTALL is '$auto'"

src=/usr/src/$name-$ver
marker=$src/.loopmq-host-dkms
exec 9>/run/lock/loopmq-host-dkms.lock
flock -w 600 9 || { nok "lock /run/lock/loopmq-host-dkms.lock"; finish; }

cleanup() {
	dkms remove "$name/$ver" --all >/dev/null 2>&1
	[ -f "$marker" ] && rm -rf "$src"
	[ "$tree" != "$top" ] && rm -rf "$tree"
}
if [ -e "$src" ]; then
	if [ -f "$marker" ]; then
		diag "removing what an earlier run left in $src"
		cleanup
	else
		nok "$src exists and was not made by this script: not touching it"
		finish
	fi
fi
trap cleanup EXIT

# the module sources: what Kbuild names, the headers, the uapi header
mkdir -p "$src"
: >"$marker"
files=(Kbuild dkms.conf)
[ -f "$tree/Makefile" ] && files+=(Makefile)
for f in "$tree"/loopmq*.c "$tree"/loopmq*.h; do
	[ -f "$f" ] && files+=("$(basename "$f")")
done
missing=
for o in $(sed -n 's/^loopmq-[a-z]*[[:space:]]*[:+]\?=//p' "$tree/Kbuild"); do
	[ -f "$tree/${o%.o}.c" ] || missing="$missing ${o%.o}.c"
done
[ -z "$missing" ] && ok "every object Kbuild names has its source" ||
	nok "sources missing for Kbuild objects:$missing"
t "copy the module sources to $src" \
	bash -c 'cd "$1" && cp -a "${@:3}" "$2"/ && cp -a include "$2"/' _ "$tree" "$src" "${files[@]}"

t "dkms add $name/$ver" dkms add "$name/$ver"
kernels=$("$top/scripts/kernels.sh" | awk '{ print $2 }')
[ -n "$kernels" ] || nok "scripts/kernels.sh lists kernels"
for k in $kernels; do
	if [ ! -d "/lib/modules/$k/build" ]; then
		nok "headers for $k are installed (/lib/modules/$k/build)"
		continue
	fi
	if ! t "dkms build -k $k" dkms build "$name/$ver" -k "$k"; then
		log=/var/lib/dkms/$name/$ver/build/make.log
		[ -f "$log" ] && tail -n 20 "$log" | sed 's/^/#   make.log: /'
		continue
	fi
	ko=$(ls /var/lib/dkms/"$name/$ver/$k"/*/module/"$mod".ko* 2>/dev/null | head -n 1)
	if [ -z "$ko" ]; then
		nok "$mod.ko for $k in /var/lib/dkms"
		continue
	fi
	ok "$mod.ko for $k in /var/lib/dkms ($(basename "$ko"))"
	tmp=$(mktemp -d)
	case $ko in
	*.xz) xz -dc "$ko" >"$tmp/$mod.ko";;
	*.zst) zstd -qdc "$ko" >"$tmp/$mod.ko";;
	*.gz) gzip -dc "$ko" >"$tmp/$mod.ko";;
	*) cp "$ko" "$tmp/$mod.ko";;
	esac
	vm=$(modinfo -F vermagic "$tmp/$mod.ko" 2>/dev/null)
	[ "${vm%% *}" = "$k" ] && ok "$k: vermagic is '$k ...'" ||
		nok "$k: vermagic is '$vm', want '$k ...'"
	lic=$(modinfo -F license "$tmp/$mod.ko" 2>/dev/null)
	[ "$lic" = GPL ] && ok "$k: license GPL" || nok "$k: license is '$lic'"
	parms=$( { modinfo -F parm "$tmp/$mod.ko"; modinfo -F parmtype "$tmp/$mod.ko"; } 2>/dev/null | cut -d: -f1 | sort -u | tr '\n' ' ')
	want="dio_default hw_queue_depth max_loop max_part mode nr_devices nr_hw_queues nowait_adaptive replace_loop stack_probe stack_reserve "
	miss=
	for p in $want; do [[ " $parms" == *" $p "* ]] || miss="$miss $p"; done
	[ -z "$miss" ] && ok "$k: parameters $want" ||
		nok "$k: parameters missing:$miss (has: $parms)"
	nm=$(modinfo -F name "$tmp/$mod.ko" 2>/dev/null)
	[ "$nm" = "$mod" ] && ok "$k: module name $mod" || nok "$k: module name '$nm'"
	rm -rf "$tmp"
	st=$(dkms status "$name/$ver" -k "$k" 2>/dev/null)
	[[ $st == *": built"* ]] &&
		ok "$k: dkms status says built" || nok "$k: dkms status is '$st'"
done

t "dkms remove $name/$ver --all" dkms remove "$name/$ver" --all
rm -rf "$src"
trap - EXIT
[ "$tree" != "$top" ] && rm -rf "$tree"
left=$(dkms status "$name" 2>/dev/null)
[ -z "$left" ] && [ ! -e "/var/lib/dkms/$name/$ver" ] && [ ! -e "$src" ] &&
	ok "nothing left (dkms status, /var/lib/dkms, /usr/src)" ||
	nok "left behind: '$left' $(ls -d /var/lib/dkms/$name/$ver "$src" 2>/dev/null)"
finish

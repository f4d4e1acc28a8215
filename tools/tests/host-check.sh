#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side checks of tools/ that need no device and no root: the build with
# -Werror, lmqdev unit checks, the man pages (groff -ww without warnings,
# man -l renders), --help lists every option the man page documents, the
# page names every direct-I/O setting and reason, --direct-io's argument
# (accepted and refused values, the message), `make install` into a DESTDIR.  Run by `make -C tools check`.
# Prints TAP and "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
n=0 np=0 nf=0
ok()  { n=$((n + 1)); np=$((np + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); nf=$((nf + 1)); echo "not ok $n - $*"; }
t() {
	local d=$1 out rc
	shift
	out=$("$@" 2>&1); rc=$?
	if [ $rc -eq 0 ]; then ok "$d"; else nok "$d (exit $rc)"; printf '%s\n' "$out" | tail -n 15 | sed 's/^/#   /'; fi
}

t "make (-Wall -Wextra -Werror)" make -s all
out=$(./tests/unit 2>&1); rc=$?
printf '%s\n' "$out" | grep '^not ok' | sed 's/^/#   /'
[ $rc -eq 0 ] && ok "lmqdev unit checks: $(tail -n 1 <<<"$out")" || nok "lmqdev unit checks: $(tail -n 1 <<<"$out")"
for m in man/loopmqctl.8 man/loopmq.4; do
	w=$(groff -ww -z -man "$m" 2>&1)
	[ -z "$w" ] && ok "$m: groff -ww -z -man gives no warning" || { nok "$m: groff warnings"; echo "$w" | sed 's/^/#   /'; }
	r=$(MANWIDTH=80 man -l "$m" 2>&1 >/dev/null)
	[ -z "$r" ] && ok "$m: man -l renders without messages" || { nok "$m: man -l: $r"; }
done
help=$(./loopmqctl --help)
page=$(MANWIDTH=200 man -l man/loopmqctl.8 2>/dev/null)
miss=
# the long options of the longopts[] table
for o in $(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)",.*/--\1/p' loopmqctl.c | sort -u); do
	grep -q -- "$o" <<<"$help" || miss="$miss help:$o"
	grep -q -- "$o" <<<"$page" || miss="$miss man:$o"
done
[ -z "$miss" ] && ok "every long option is in --help and in loopmqctl(8)" || nok "options missing:$miss"
cols=$(awk '/^Available output columns/ { f = 1; next } f && !NF { exit } f { print $1 }' <<<"$help")
miss=
for c in $cols; do grep -q -- "$c" <<<"$page" || miss="$miss $c"; done
[ -n "$cols" ] && [ -z "$miss" ] && ok "every column ($(wc -w <<<"$cols")) is in loopmqctl(8)" || nok "columns missing from the man page:$miss"
# the names of include/uapi/loopmq.h's lists (modes, paths, fallback
# reasons as sysfs shows them, direct-I/O settings and reasons) are in
# loopmq(4) and docs/INTERFACES.md
names="$(../scripts/names.sh modes) $(../scripts/names.sh paths) $(../scripts/names.sh fallbacks | sed 's/^/fb_/')
$(../scripts/names.sh dio-settings) $(../scripts/names.sh dio-reasons)"
page4=$(MANWIDTH=200 man -l man/loopmq.4 2>/dev/null)
miss=
for w in $names; do
	grep -qw -- "$w" <<<"$page4" || miss="$miss loopmq.4:$w"
	grep -qw -- "$w" ../docs/INTERFACES.md || miss="$miss INTERFACES.md:$w"
done
[ -n "$names" ] && [ -z "$miss" ] && ok "every mode, path, fallback and direct-I/O name ($(wc -w <<<"$names")) is in loopmq(4) and INTERFACES.md" ||
	nok "names missing from the documents:$miss"
# the direct-I/O settings and reasons loopmqctl shows are in its page
names="$(../scripts/names.sh dio-settings) $(../scripts/names.sh dio-reasons)"
miss=
for w in $names; do grep -qw -- "$w" <<<"$page" || miss="$miss $w"; done
[ -n "$names" ] && [ -z "$miss" ] && ok "every direct-I/O setting and reason ($(wc -w <<<"$names")) is in loopmqctl(8)" ||
	nok "direct-I/O names missing from loopmqctl(8):$miss"
# --direct-io's argument, checked before any device is touched: each
# setting's name (and 1, 0) passes on to the device (a prefix no driver
# has: its node is missing), anything else is refused with the names
noprefix=lmqnone
for v in $(../scripts/names.sh dio-settings) 1 0; do
	out=$(LOOPMQCTL_PREFIX=$noprefix ./loopmqctl --direct-io="$v" 3 2>&1); rc=$?
	want="loopmqctl: /dev/${noprefix}3: cannot open device: No such file or directory (is the $noprefix module loaded? try 'modprobe $noprefix')"
	[ $rc -eq 1 ] && [ "$out" = "$want" ] && ok "--direct-io=$v is accepted (the device comes next)" ||
		nok "--direct-io=$v is accepted: exit $rc, '$out'"
done
expected="expected $(../scripts/names.sh dio-settings | sed -e ':a' -e 'N;$!ba' -e 's/\n\([^\n]*\)$/ or \1/' -e 's/\n/, /g')"
for v in bogus AUTO '' 2 on,auto; do
	out=$(LOOPMQCTL_PREFIX=$noprefix ./loopmqctl --direct-io="$v" 3 2>/dev/null); rc=$?
	err=$(LOOPMQCTL_PREFIX=$noprefix ./loopmqctl --direct-io="$v" 3 2>&1 >/dev/null)
	[ $rc -eq 1 ] && [ -z "$out" ] && [ "$err" = "loopmqctl: invalid --direct-io argument '$v' ($expected)" ] &&
		ok "--direct-io='$v' refused: $err" || nok "--direct-io='$v' refused: exit $rc, stdout '$out', stderr '$err'"
done
err=$(LOOPMQCTL_PREFIX=$noprefix ./loopmqctl --direct-io=auto -d 3 2>&1); rc=$?
[ $rc -eq 1 ] && [ "$err" = "loopmqctl: option --direct-io is only allowed when attaching a file or with one device
Try 'loopmqctl --help' for more information." ] && ok "--direct-io=auto with -d refused" ||
	nok "--direct-io=auto with -d refused: exit $rc, '$err'"
help_dio=$(grep -o -- '--direct-io\[=<[^>]*>\]' <<<"$help")
[ "$help_dio" = "--direct-io[=<$(../scripts/names.sh dio-settings | paste -sd '|')>]" ] &&
	ok "--help names the settings: $help_dio" || nok "--help names the settings: '$help_dio'"
# docs/modprobe.d-example.conf: modprobe parses it, and it sets only the
# parameters docs/INTERFACES.md documents
ex=../docs/modprobe.d-example.conf
if [ -f "$ex" ]; then
	opts=$(modprobe -C "$ex" -c 2>/dev/null | sed -n 's/^options loopmq //p')
	[ -n "$opts" ] && ok "modprobe -C parses $ex: $opts" || nok "modprobe -C parses $ex"
	bad=
	for kv in $opts; do
		grep -q -e "\`${kv%%=*}\`" -e "\`${kv%%=*}=" ../docs/INTERFACES.md || bad="$bad ${kv%%=*}"
	done
	[ -z "$bad" ] && ok "its parameters are documented in INTERFACES.md" || nok "undocumented parameters:$bad"
else
	nok "$ex exists"
fi
d=$(mktemp -d)
t "make install DESTDIR=... PREFIX=/usr" make -s install DESTDIR="$d" PREFIX=/usr
for f in usr/sbin/loopmqctl usr/share/man/man8/loopmqctl.8 usr/share/man/man4/loopmq.4; do
	[ -f "$d/$f" ] && ok "installed /$f" || nok "installed /$f"
done
[ -x "$d/usr/sbin/loopmqctl" ] && "$d/usr/sbin/loopmqctl" -V | grep -q '^loopmqctl from loopmq ' &&
	ok "installed loopmqctl -V" || nok "installed loopmqctl -V"
rm -rf "$d"
echo "$np passed, $nf failed"
[ $nf -eq 0 ]

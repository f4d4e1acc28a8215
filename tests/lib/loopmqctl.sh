# SPDX-License-Identifier: GPL-2.0
# The common start of the loopmqctl tests (tests/guest/4x): the tool, the
# driver under test, TAP and device helpers.  Source it: . /tests/lib/loopmqctl.sh
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
. /tests/lib/tap.sh
LMQ_DRIVER=${LMQ_DRIVER:-$(sed -n 's/.*lmq_driver=\([a-z]*\).*/\1/p' /proc/cmdline 2>/dev/null)}
LMQ_DRIVER=${LMQ_DRIVER:-loopmq}
if [ "$LMQ_DRIVER" = loop ]; then
	P=loop MOD=loop
	export LOOPMQCTL_PREFIX=loop
else
	P=loopmq MOD=loopmq
	unset LOOPMQCTL_PREFIX
fi
CTL=$(command -v loopmqctl) || skip_all "no loopmqctl in the guest"
LOSETUP=
for l in /usr/sbin/losetup /sbin/losetup /usr/bin/losetup /bin/losetup; do
	[ -x "$l" ] && "$l" --version 2>/dev/null | grep -q util-linux && { LOSETUP=$l; break; }
done
is_mq() { [ "$P" = loopmq ]; }
# run CMD...: $out (stdout), $err (stderr), $rc
run() {
	local e
	e=$(mktemp)
	out=$("$@" 2>"$e")
	rc=$?
	err=$(cat "$e")
	rm -f "$e"
	return 0
}
# sysv DEV REL: /sys/block/<dev>/REL
sysv() { cat "/sys/block/${1##*/}/$2" 2>/dev/null; }
bound() { [ -e "/sys/block/${1##*/}/loop/backing_file" ]; }
# unbound DEV DESC: pass when DEV has no backing file
unbound() { if bound "$1"; then fail "$2" "$1 is bound"; else pass "$2"; fi; }
# nbound: how many of our devices are bound
nbound() {
	local d n=0
	for d in /sys/block/$P[0-9]*; do [ -e "$d/loop/backing_file" ] && n=$((n + 1)); done
	echo $n
}
# snapshot: every device of ours with its binding, mode, ro and block
# size (one grep: forks are slow under TCG)
snapshot() {
	grep -s . /sys/block/$P[0-9]*/{dev,ro,loop/backing_file,loop/offset,loop/sizelimit,loopmq/mode,queue/logical_block_size} |
		sort
}
detach_all_ours() {
	local d
	for d in /sys/block/$P[0-9]*; do
		[ -e "$d/loop/backing_file" ] && "$CTL" -d "/dev/${d##*/}" 2>/dev/null
	done
	return 0
}
load_driver() {
	modprobe "$MOD" "$@" || skip_all "cannot load $MOD"
	for _ in $(seq 50); do [ -c /dev/$P-control ] && break; sleep 0.1; done
	[ -c /dev/$P-control ] || skip_all "no /dev/$P-control"
}

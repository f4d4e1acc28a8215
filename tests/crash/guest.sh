#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# The guest side of one crash-consistency boot (run by tests/crash/run, not
# by make check's guest runs).  From the kernel command line:
#   crash.prev=K:MODE:DIO:FS:ALLOC:IO   check trial K's image: mount /dev/vda
#       (journal replay), attach img through loopmq (mode MODE, direct I/O
#       DIO) and run "lmq-crashwriter check" with trial K's log (the host
#       puts it on the virtio disk with serial loopmq-clog)
#   crash.next=K:MODE:DIO:FS:ALLOC:IO:SEED   set up trial K: mkfs.FS /dev/vda
#       (or, after a clean check on the same FS, reuse it: rm the old img),
#       a 32 MiB img (ALLOC falloc: fallocate, sparse: truncate), attach it
#       (MODE, DIO), run "lmq-crashwriter write" (IO direct: O_DIRECT,
#       buffered: page cache, nosync: O_DIRECT that never syncs but logs as
#       if it did, the negative control) until the host kills the guest
# Everything for the host goes to /dev/ttyS2 (a host file):
#   CHECK-OUT <line>  the checker's output      CHECK K rc=N   its verdict
#   then the writer's TRIAL / RUNNING / S lines.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
prev= next=
for a in $(cat /proc/cmdline); do
	case $a in
	crash.prev=*) prev=${a#*=};;
	crash.next=*) next=${a#*=};;
	esac
done
chan=/dev/ttyS2
stty -F "$chan" raw -echo || exit 1
exec 7>"$chan"
say() { echo "$*" >&7; /usr/local/libexec/vmhelper drain 7; }
mnt=/mnt/crash
mkdir -p "$mnt"

# attach MODE DIO FILE: loopmq0 on FILE in MODE with direct I/O DIO
attach() {
	modprobe loopmq mode="$1" || return 1
	losetup --direct-io="$2" /dev/loopmq0 "$3" || return 1
	[ "$(cat /sys/block/loopmq0/loopmq/mode)" = "$1" ] || { echo "mode is not $1"; return 1; }
	local d; d=$(cat /sys/block/loopmq0/loop/dio)
	[ "$d" = "$([ "$2" = on ] && echo 1 || echo 0)" ] || { echo "dio is $d, want $2"; return 1; }
}
detach() {
	losetup -d /dev/loopmq0 2>/dev/null
	umount "$mnt" 2>/dev/null
	rmmod loopmq 2>/dev/null
	return 0
}

if [ -n "$prev" ]; then
	IFS=: read -r k mode dio pfs _ _ <<<"$prev"
	logdev=
	for s in /sys/block/vd*/serial; do
		[ "$(cat "$s")" = loopmq-clog ] && logdev=/dev/$(basename "$(dirname "$s")")
	done
	rc=2
	if [ -z "$logdev" ]; then
		out="no log disk"
	elif ! tr -d '\0' <"$logdev" >/tmp/prev.log; then
		out="cannot read $logdev"
	elif ! out=$(mount -t "$pfs" /dev/vda "$mnt" 2>&1); then
		out="mount -t $pfs /dev/vda failed: $out"
	elif ! out=$(attach "$mode" "$dio" "$mnt/img" 2>&1); then
		out="attach failed: $out"
	else
		out=$(lmq-crashwriter check /tmp/prev.log /dev/loopmq0 2>&1)
		rc=$?
	fi
	detach
	while IFS= read -r l; do say "CHECK-OUT $l"; done <<<"$out"
	say "CHECK $k rc=$rc"
	echo "crash check of trial $k: rc=$rc at $(cut -d' ' -f1 /proc/uptime)s"
	[ -n "$next" ] || exit "$rc"
fi

[ -n "$next" ] || exit 0
IFS=: read -r k mode dio fs alloc io seed <<<"$next"
echo "crash trial $k: $mode dio=$dio $fs $alloc $io seed $seed"
# the filesystem the check just mounted (journal replayed) is reused when it
# is the same kind and checked clean; else a new one
if [ "${rc:-}" = 0 ] && [ "$fs" = "${pfs:-}" ] && mount -t "$fs" /dev/vda "$mnt"; then
	rm -f "$mnt/img"
	echo "reusing the $fs filesystem"
else
	case $fs in
	ext4) mkfs.ext4 -F -q -E nodiscard /dev/vda || exit 1;;
	xfs) mkfs.xfs -f -q -K /dev/vda || exit 1;;
	*) echo "bad fs $fs"; exit 1;;
	esac
	mount -t "$fs" /dev/vda "$mnt" || exit 1
fi
case $alloc in
falloc) fallocate -l 32M "$mnt/img" || exit 1;;
sparse) truncate -s 32M "$mnt/img" || exit 1;;
*) echo "bad alloc $alloc"; exit 1;;
esac
sync
attach "$mode" "$dio" "$mnt/img" || exit 1
echo "crash trial $k: set up at $(cut -d' ' -f1 /proc/uptime)s"
bflag=
[ "$io" = buffered ] && bflag=-b
[ "$io" = nosync ] && bflag=-x
lmq-crashwriter write $bflag -s "$seed" -t "$k" -l "$chan" /dev/loopmq0
echo "lmq-crashwriter write exited with status $?"
exit 1

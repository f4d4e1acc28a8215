#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900
# The guest side of one crash-consistency boot (run by tests/crash/run, not
# by make check's guest runs).  From the kernel command line:
#   crash.prev=K:MODE:DIO:FS:ALLOC:IO   check trial K's image: mount /dev/vda
#       (journal replay), attach img through loopmq (mode MODE, direct I/O
#       DIO) and run "lmq-crashwriter check" with trial K's log (the host
#       puts it on the virtio disk with serial loopmq-clog); a pinned image
#       is checked through the file (what the remap path wrote to the disk
#       must be what the file holds); ALLOC bdev attaches /dev/vda's first
#       32 MiB instead
#   crash.next=K:MODE:DIO:FS:ALLOC:IO:SEED   set up trial K: mkfs.FS /dev/vda
#       (or, after a clean check on the same FS, reuse it: rm the old img),
#       a 32 MiB img (ALLOC falloc: fallocate, sparse: truncate, pinned:
#       written with zeroes, then pinned with loopmqctl --remap=pinned, so
#       every request takes the remap path to /dev/vda; bdev: no file
#       system, loopmq on /dev/vda's first 32 MiB, zeroed, which with DIO on
#       is the block-device remap path), attach it
#       (MODE, DIO), run "lmq-crashwriter write" (IO direct: O_DIRECT,
#       buffered: page cache, nosync: O_DIRECT that never syncs but logs as
#       if it did, the negative control) until the host kills the guest
# Everything for the host goes to /dev/ttyS2 (a host file):
#   UP                before anything touches a disk (if QEMU dies before
#                     this line, the host may boot the same trial again)
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
say UP
mnt=/mnt/crash
mkdir -p "$mnt"

# attach MODE DIO FILE [SIZELIMIT]: loopmq0 on FILE in MODE with direct I/O DIO
attach() {
	modprobe loopmq mode="$1" || return 1
	losetup --direct-io="$2" ${4:+--sizelimit "$4"} /dev/loopmq0 "$3" || return 1
	[ "$(cat /sys/block/loopmq0/loopmq/mode)" = "$1" ] || { echo "mode is not $1"; return 1; }
	local d; d=$(cat /sys/block/loopmq0/loop/dio)
	[ "$d" = "$([ "$2" = on ] && echo 1 || echo 0)" ] || { echo "dio is $d, want $2"; return 1; }
}
# remap_taken: a direct read of the device takes the remap path
remap_taken() {
	local a b
	a=$(awk '$1 == "remap" { print $2 }' /sys/block/loopmq0/loopmq/stats)
	dd if=/dev/loopmq0 of=/dev/null bs=4k count=1 iflag=direct status=none || return 1
	b=$(awk '$1 == "remap" { print $2 }' /sys/block/loopmq0/loopmq/stats)
	[ "${b:-0}" -gt "${a:-0}" ] && return 0
	echo "a direct read of /dev/loopmq0 did not take the remap path (remap ${a:-none} -> ${b:-none})"
	return 1
}
detach() {
	losetup -d /dev/loopmq0 2>/dev/null
	umount "$mnt" 2>/dev/null
	rmmod loopmq 2>/dev/null
	return 0
}

if [ -n "$prev" ]; then
	IFS=: read -r k mode dio pfs palloc _ <<<"$prev"
	src=$mnt/img lim=
	[ "$palloc" = bdev ] && src=/dev/vda lim=32M
	logdev=
	for s in /sys/block/vd*/serial; do
		[ "$(cat "$s")" = loopmq-clog ] && logdev=/dev/$(basename "$(dirname "$s")")
	done
	rc=2
	if [ -z "$logdev" ]; then
		out="no log disk"
	elif ! tr -d '\0' <"$logdev" >/tmp/prev.log; then
		out="cannot read $logdev"
	elif [ "$palloc" != bdev ] && ! out=$(mount -t "$pfs" /dev/vda "$mnt" 2>&1); then
		out="mount -t $pfs /dev/vda failed: $out"
	elif ! out=$(attach "$mode" "$dio" "$src" $lim 2>&1); then
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
if [ "$alloc" = bdev ]; then
	# no file system: a block the writer never made durable may read as
	# zeroes, nothing else, so the region starts zeroed
	dd if=/dev/zero of=/dev/vda bs=1M count=32 oflag=direct conv=fsync status=none || exit 1
# the filesystem the check just mounted (journal replayed) is reused when it
# is the same kind and checked clean; else a new one
elif [ "${rc:-}" = 0 ] && [ "$fs" = "${pfs:-}" ] && [ "${palloc:-}" != bdev ] &&
	mount -t "$fs" /dev/vda "$mnt"; then
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
src=$mnt/img lim=
case $alloc in
falloc) fallocate -l 32M "$src" || exit 1;;
sparse) truncate -s 32M "$src" || exit 1;;
pinned) dd if=/dev/zero of="$src" bs=1M count=32 conv=fsync status=none || exit 1;;
bdev) src=/dev/vda lim=32M;;
*) echo "bad alloc $alloc"; exit 1;;
esac
sync
attach "$mode" "$dio" "$src" $lim || exit 1
if [ "$alloc" = pinned ]; then
	loopmqctl --remap=pinned /dev/loopmq0 || exit 1
	[ "$(cat /sys/block/loopmq0/loopmq/pinned)" = 1 ] || { echo "loopmq0 is not pinned"; exit 1; }
fi
if [ "$alloc" = pinned ] || { [ "$alloc" = bdev ] && [ "$dio" = on ]; }; then
	remap_taken || exit 1
fi
echo "crash trial $k: set up at $(cut -d' ' -f1 /proc/uptime)s"
bflag=
[ "$io" = buffered ] && bflag=-b
[ "$io" = nosync ] && bflag=-x
lmq-crashwriter write $bflag -s "$seed" -t "$k" -l "$chan" /dev/loopmq0
echo "lmq-crashwriter write exited with status $?"
exit 1

# SPDX-License-Identifier: GPL-2.0
# loopmq helpers for guest tests: source it with ". /tests/lib/loopmq.sh".
#
#   lmq_load [PARAM=VALUE...]   modprobe loopmq with parameters; waits for
#                               /dev/loopmq-control; returns modprobe's status
#   lmq_unload                  detach every loopmq device, rmmod loopmq
#   lmq_backing TYPE SIZE       create a backing file and print its path:
#       tmpfs  a sparse file in /tmp
#       ext4   a fully allocated file on ext4 on the scratch disk /dev/vda
#       xfs    the same on xfs (mkfs'd once per test, mounted on /mnt/lmq-xfs)
#       raw    the scratch disk itself (SIZE ignored); unmounts ext4/xfs
#     Direct I/O needs ext4, xfs or raw on 6.1 (tmpfs has no O_DIRECT < 6.6).
#   lmq_cleanup                 lmq_unload, unmount /mnt/lmq-*
# The harness cleans up after every test anyway; these are for tests that
# want a known state in the middle.

LMQ_SCRATCH=${SCRATCH:-/dev/vda}
_lmq_n=0

lmq_load() {
	modprobe loopmq "$@" || return
	local i
	for i in $(seq 50); do
		[ -c /dev/loopmq-control ] && return 0
		sleep 0.1
	done
	echo "lmq_load: no /dev/loopmq-control after modprobe" >&2
	return 1
}

lmq_unload() {
	grep -q '^loopmq ' /proc/modules || return 0
	/usr/local/libexec/vmhelper detach-all
	local i
	for i in $(seq 20); do
		rmmod loopmq 2>/dev/null && return 0
		sleep 0.2
	done
	echo "lmq_unload: rmmod loopmq failed" >&2
	return 1
}

# _lmq_fs TYPE: make sure the scratch disk carries a TYPE filesystem mounted
# on /mnt/lmq-TYPE (the other filesystem is unmounted first)
_lmq_fs() {
	local fs=$1 m=/mnt/lmq-$1 other
	mountpoint -q "$m" && return 0
	for other in /mnt/lmq-ext4 /mnt/lmq-xfs; do
		mountpoint -q "$other" && { umount "$other" || return 1; }
	done
	mkdir -p "$m"
	case $fs in
	ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$LMQ_SCRATCH" >/dev/null;;
	xfs) mkfs.xfs -q -f "$LMQ_SCRATCH" >/dev/null;;
	esac || return 1
	mount -t "$fs" "$LMQ_SCRATCH" "$m"
}

lmq_backing() {
	local type=$1 size=${2:-64M} f
	_lmq_n=$((_lmq_n + 1))
	case $type in
	tmpfs)
		f=/tmp/lmq-backing-$_lmq_n.img
		truncate -s "$size" "$f" || return 1;;
	ext4|xfs)
		_lmq_fs "$type" || { echo "lmq_backing: no $type on $LMQ_SCRATCH" >&2; return 1; }
		f=/mnt/lmq-$type/backing-$_lmq_n.img
		fallocate -l "$size" "$f" || return 1;;
	raw)
		umount /mnt/lmq-ext4 /mnt/lmq-xfs 2>/dev/null
		f=$LMQ_SCRATCH;;
	*)
		echo "lmq_backing: unknown type '$type'" >&2
		return 1;;
	esac
	echo "$f"
}

lmq_cleanup() {
	lmq_unload
	umount /mnt/lmq-ext4 /mnt/lmq-xfs 2>/dev/null
	return 0
}

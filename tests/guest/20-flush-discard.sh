#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# 20-flush-discard: in every mode, with buffered and direct backing I/O:
#  - a flush (fsync of the device) puts the data on the backing disk itself:
#    read back from /dev/vda at the file's physical extents, bypassing every
#    page cache;
#  - a discard (BLKDISCARD) punches a hole in the backing file (fewer
#    allocated blocks, SEEK_HOLE finds it) and the range reads back zero;
#  - write-zeroes (BLKZEROOUT) reads back zero, through the device and in
#    the file, and the data around it is untouched.
DESCRIPTION="flush reaches the backing disk; discard punches holes; write-zeroes reads zero"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

M=/mnt/t20
mkdir -p $M
mkfs.ext4 -q -F -b 4096 /dev/vda >/dev/null && mount /dev/vda $M || { fail "ext4 on vda"; stop_testing; }
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)
head -c 4M /dev/urandom >/tmp/t20.data

# file_disk_sha FILE OFF LEN: sha256 of FILE's bytes [OFF, OFF+LEN) read from
# /dev/vda with O_DIRECT through the file's extent map (4 KiB aligned).
file_disk_sha() {
	local f=$1 off=$2 len=$3
	xfs_io -r -c "fiemap -v" "$f" | awk -v off=$((off / 512)) -v len=$((len / 512)) '
	/^ *[0-9]+:/ {
		split($2, l, /[\[\].:]+/); split($3, p, /[.:]+/)
		if ($3 == "hole") next
		ls = l[2]; le = l[3]; ps = p[1]
		s = (ls > off) ? ls : off; e = (le < off + len - 1) ? le : off + len - 1
		if (s <= e) printf "%d %d\n", ps + (s - ls), e - s + 1
	}' | while read -r sec cnt; do
		dd if=/dev/vda bs=512 skip="$sec" count="$cnt" iflag=direct status=none
	done | sha256sum
}

for mode in $LMQ_MODES; do
	for dio in off on; do
		tag="$mode/dio=$dio"
		F=$M/img.$mode.$dio
		rm -f $F; truncate -s 32M $F
		$LOSETUP --direct-io=$dio $D $F || { fail "$tag: attach"; continue; }
		lmq_mode 0 "$mode" || fail "$tag: set mode"
		is "$(cat $(lmq_sys 0)/loop/dio)" "$([ $dio = on ] && echo 1 || echo 0)" "$tag: loop/dio"

		# flush: data on the disk right after the device fsync
		dd if=/tmp/t20.data of=$D bs=1M seek=4 oflag=direct conv=fsync status=none ||
			fail "$tag: write+fsync"
		want=$(sha256sum </tmp/t20.data)
		is "$(file_disk_sha $F $((4 << 20)) $((4 << 20)))" "$want" "$tag: fsync'd data is on /dev/vda"

		# discard punches a hole
		sync
		b1=$(stat -c %b $F)
		is "$(lmq-ioctl discard $D $((5 << 20)) $((2 << 20)))" OK "$tag: BLKDISCARD 2 MiB"
		b2=$(stat -c %b $F)
		[ "$b2" -le $((b1 - 4096)) ] && pass "$tag: file blocks $b1 -> $b2 after discard" ||
			fail "$tag: file blocks $b1 -> $b2, want at least 4096 fewer"
		hole=$(xfs_io -r -c "seek -h $((4 << 20))" $F | awk '/^HOLE/ { print $2 }')
		is "$hole" $((5 << 20)) "$tag: SEEK_HOLE finds the discarded range"
		is "$(dd if=$D bs=1M skip=5 count=2 iflag=direct status=none | tr -d '\0' | wc -c)" 0 \
			"$tag: discarded range reads zero"
		is "$(dd if=$D bs=1M skip=4 count=1 iflag=direct status=none | cmp - /tmp/t20.data -n 1048576 && echo same)" \
			same "$tag: data before the discard intact"

		# write-zeroes
		is "$(lmq-ioctl zeroout $D $((7 << 20)) 65536)" OK "$tag: BLKZEROOUT 64 KiB"
		is "$(dd if=$D bs=64k skip=112 count=1 iflag=direct status=none | tr -d '\0' | wc -c)" 0 \
			"$tag: zeroed range reads zero"
		is "$(dd if=$D bs=64k skip=113 count=15 iflag=direct status=none | sha256sum)" \
			"$(dd if=/tmp/t20.data bs=64k skip=49 count=15 status=none | sha256sum)" \
			"$tag: data after the zeroed range intact"
		dd if=/dev/zero of=$D bs=4k count=1 oflag=direct conv=fsync status=none  # one more flush
		is "$(dd if=$F bs=64k skip=112 count=1 iflag=direct status=none | tr -d '\0' | wc -c)" 0 \
			"$tag: zeroed range is zero in the file"
		if lmq_is_mq; then
			e=$(lmq_stat 0 errors)
			is "$e" 0 "$tag: stats errors"
			diag "$tag stats: $(tr '\n' ' ' <$(lmq_sys 0)/loopmq/stats)"
		fi
		$LOSETUP -d $D || fail "$tag: detach"
		rm -f $F
	done
done
umount $M
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

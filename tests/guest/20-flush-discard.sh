#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# 20-flush-discard: in every mode, with buffered and direct backing I/O:
#  - a flush (fsync of the device) puts the data on the backing disk itself:
#    read back from /dev/vda at the file's physical extents, bypassing every
#    page cache, and flushes /dev/vda (its flush count grows: the read-back
#    alone cannot tell, since FIEMAP writes the file back first);
#  - a discard (BLKDISCARD) punches a hole in the backing file (fewer
#    allocated blocks, SEEK_HOLE finds it) and the range reads back zero;
#  - write-zeroes (BLKZEROOUT) reads back zero, through the device and in
#    the file, and the data around it is untouched;
#  - FUA (buffered backing): an O_DSYNC direct overwrite of a file on ext4
#    on the device, which ext4 sends as FUA writes without a flush, is on
#    the backing disk (the backing write made synchronous), read at the
#    place on /dev/vda mapped before the overwrite.
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

# file_disk_map FILE OFF LEN: where FILE's bytes [OFF, OFF+LEN) are on
# /dev/vda, "SECTOR COUNT" lines (4 KiB aligned).  xfs_io's FIEMAP syncs
# the file first (FIEMAP_FLAG_SYNC): the map of data that is to be checked
# for being on the disk must be taken before that data is written.
file_disk_map() {
	local f=$1 off=$2 len=$3
	xfs_io -r -c "fiemap -v" "$f" | awk -v off=$((off / 512)) -v len=$((len / 512)) '
	/^ *[0-9]+:/ {
		split($2, l, /[\[\].:]+/); split($3, p, /[.:]+/)
		if ($3 == "hole") next
		ls = l[2]; le = l[3]; ps = p[1]
		s = (ls > off) ? ls : off; e = (le < off + len - 1) ? le : off + len - 1
		if (s <= e) printf "%d %d\n", ps + (s - ls), e - s + 1
	}'
}
# disk_sha: sha256 of what the file_disk_map lines on stdin name, read from
# /dev/vda with O_DIRECT, bypassing every page cache
disk_sha() {
	while read -r sec cnt; do
		dd if=/dev/vda bs=512 skip="$sec" count="$cnt" iflag=direct status=none
	done | sha256sum
}
# file_disk_sha FILE OFF LEN: sha256 of FILE's bytes [OFF, OFF+LEN) on /dev/vda
file_disk_sha() { file_disk_map "$@" | disk_sha; }
# flushes that /dev/vda completed (its stat's 16th field, 5.5+)
vda_flushes() { awk '{ print $16 }' /sys/block/vda/stat; }
VDA_WC=$(cat /sys/block/vda/queue/write_cache)
diag "/dev/vda: $VDA_WC"

# fua_check TAG F: ext4 on $D (backed by F, buffered), a 1 MiB file on it
# overwritten with O_DIRECT|O_DSYNC.  ext4 (iomap) sends such an overwrite
# as FUA writes and no flush after them, since the device has FUA: the
# data must be on /dev/vda by FUA alone (a sync write of the backing).
fua_check() {
	local tag=$1 F=$2 U=/mnt/t20u ext off
	mkdir -p $U
	mkfs.ext4 -q -F -b 4096 $D >/dev/null && mount $D $U || { fail "$tag: ext4 on $D"; return; }
	dd if=/dev/zero of=$U/f bs=64k count=16 conv=fsync status=none && sync
	# f's blocks on $D, that is in F (one extent), and where those are on
	# vda: mapped now, before the overwrite
	ext=$(xfs_io -r -c "fiemap" $U/f | awk '/^[ \t]*[0-9]+:/ { n++; split($3, p, /[.:]+/); s = p[1] } END { print n + 0, s + 0 }')
	off=$((${ext#* } * 512))
	file_disk_map $F $off 1048576 >/tmp/t20.map
	head -c 1M /dev/urandom >/tmp/t20.fua
	dd if=/tmp/t20.fua of=$U/f bs=64k count=16 oflag=direct,dsync conv=notrunc status=none ||
		fail "$tag: O_DSYNC direct overwrite"
	if [ "${ext% *}" = 1 ]; then
		is "$(disk_sha </tmp/t20.map)" "$(sha256sum </tmp/t20.fua)" \
			"$tag: an O_DSYNC direct overwrite on ext4 on the device (FUA, no flush) is on /dev/vda"
	else
		fail "$tag: FUA check: the file on $D is not one extent" "$ext"
	fi
	umount $U || fail "$tag: umount $U"
}

for mode in $LMQ_MODES; do
	for dio in off on; do
		tag="$mode/dio=$dio"
		F=$M/img.$mode.$dio
		rm -f $F; truncate -s 32M $F
		$LOSETUP --direct-io=$dio $D $F || { fail "$tag: attach"; continue; }
		lmq_mode 0 "$mode" || fail "$tag: set mode"
		is "$(cat $(lmq_sys 0)/loop/dio)" "$([ $dio = on ] && echo 1 || echo 0)" "$tag: loop/dio"

		# flush: data on the disk right after the device fsync, and the
		# fsync reached vda as a flush: FIEMAP syncs the file itself, so
		# only vda's flush count can see a flush that loopmq dropped
		dd if=/tmp/t20.data of=$D bs=1M seek=4 oflag=direct status=none ||
			fail "$tag: write"
		f0=$(vda_flushes)
		xfs_io -c fsync $D || fail "$tag: fsync $D"
		f1=$(vda_flushes)
		if [ "$VDA_WC" = "write back" ]; then
			[ "$f1" -gt "$f0" ] && pass "$tag: the device's fsync made $((f1 - f0)) flushes of /dev/vda" ||
				fail "$tag: the device's fsync made no flush of /dev/vda" "flushes $f0 -> $f1"
		fi
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
		# FUA: with direct I/O every write is on the disk anyway
		[ $dio = off ] && fua_check "$tag" $F
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

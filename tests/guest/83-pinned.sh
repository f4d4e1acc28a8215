#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# 83-pinned: pinned image files (loopmq_pin.c, DOC: pin): the file's block
# map is held still with S_SWAPFILE and every request is remapped to the
# file system's disk.  On ext4 and on xfs, each on the scratch disk:
#
# - refusals: "loopmqctl --remap=pinned" of a sparse file, a file that
#   ends in a hole, a preallocated (unwritten) file, an xfs reflink copy,
#   a file on tmpfs, a swap file, a file pinned by another device, and a
#   caller without CAP_SYS_ADMIN fails with the errno the ABI documents, a
#   message naming the extent or condition (the swap file, the device that
#   pins it), and the device detached again; the file stays writable;
# - a process writing through a shared mapping made before the pin gets
#   SIGBUS, and what it wrote is what the device reads;
# - the contract: while pinned, write(2) (buffered and O_DIRECT), O_TRUNC,
#   truncate, fallocate (preallocate and punch), a shared writable mmap,
#   copy_file_range into it, unlink and rename refuse, on xfs also FICLONE
#   (both ways), FIDEDUPERANGE and XFS_IOC_SWAPEXT (xfs_fsr's ioctl), on
#   ext4 EXT4_IOC_MOVE_EXT (e4defrag's ioctl) and EXT4_IOC_SWAP_BOOT;
#   after the detach every one
#   of them succeeds on the same file; xfs_fsr and e4defrag leave the
#   pinned file's extents as they are, and defragment it once detached;
# - data: the image is fully written but fragmented on purpose (written
#   in 128 KiB pieces, each followed by a piece of another file), so
#   requests cross extents and their bios are split; fio crc32c write
#   then verify in every mode, every request remapped, none through the
#   file; the file read through the file system equals the device while
#   attached (a page cached by that read does not go stale: the remapped
#   write drops it) and after the detach;
# - the device: no discard, no larger than the file when pinned even if
#   the file grows (LOOP_SET_CAPACITY);
# - switching under load: fio verify while LOOPMQ_SET_REMAP pins and
#   unpins, the mode changes and a buffered reader reads the file;
# - freeze: with the file's file system frozen, a write to the device
#   does not reach the disk (its blocks there read unchanged) and does not
#   block in queue_rq; after the thaw it completes and reads back.
DESCRIPTION="pinned image files: refusals, the pin contract, data, switching, freeze"
requires() {
	require_cmd lmq-ioctl loopmqctl fio cmp xfs_io filefrag setpriv xfs_fsr e4defrag
	lmq_is_mq || skip_all "pinning is loopmq's"
}
. /tests/lib/guest.sh

W=/tmp/t83 MB=1048576 SZ=16
mkdir -p $W
[ "$LMQ_SLOW" = 1 ] && SZ=8
lmq_load 2 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) S=$(lmq_sys 0) D1=$(lmq_dev 1)

# A fully written image of MIB MiB whose blocks are scattered: written
# with O_DIRECT in 128 KiB pieces, each followed by a 4 KiB piece of
# another file, which takes the blocks the image would have grown into.
frag_image() {	# frag_image FILE MIB
	local f=$1 mib=$2 i args=()
	rm -f "$f" "$f.gap"
	args=(-f -d "$f" -c "open -f -d $f.gap")
	for ((i = 0; i < mib * 8; i++)); do
		args+=(-c "file 0" -c "pwrite -q -S $((i % 256)) $((i * 128 * 1024)) 128k"
		       -c "file 1" -c "pwrite -q $((i * 4096)) 4k")
	done
	xfs_io "${args[@]}" >/dev/null && sync && rm -f "$f.gap"
}
# xfs_fsr (XFS_IOC_SWAPEXT) or e4defrag (EXT4_IOC_MOVE_EXT), on $fs
defrag() { if [ $fs = xfs ]; then xfs_fsr -v "$1"; else e4defrag "$1"; fi; }
defrag_name() { if [ $fs = xfs ]; then echo xfs_fsr; else echo e4defrag; fi; }
extents() { filefrag "$1" | sed -n 's/.*: \([0-9]*\) extents\{0,1\} found/\1/p'; }
# refuse TAG FILE ERRNO TEXT: pinning FILE fails with ERRNO, loopmqctl's
# message holds TEXT, the device is free again and FILE writable
refuse() {
	local tag=$1 f=$2 e=$3 text=$4 out
	out=$(loopmqctl --remap=pinned $D "$f" 2>&1)
	[ $? != 0 ] && [[ $out == *"$text"* ]] &&
		pass "refuse $tag: $out" ||
		fail "refuse $tag" "loopmqctl said: $out (expected '$text')"
	unbound $D "refuse $tag: $D detached again"
	is "$(lmq-ioctl configure $D "$f" 0 512)" OK "refuse $tag: attach without pinning"
	is "$(lmq-ioctl set-remap $D 1)" "$e" "refuse $tag: LOOPMQ_SET_REMAP says $e"
	is "$(cat $S/loopmq/pinned)" 0 "refuse $tag: not pinned"
	is "$(lmq-ioctl clr-fd $D)" OK "refuse $tag: detach"
}
fio_verify() {	# fio_verify TAG [ARGS]
	local tag=$1 out
	shift
	out=$(fio --name=wv --filename=$D --ioengine=libaio --direct=1 --iodepth=16 \
		--rw=randwrite --bsrange=512-256k --size=$((SZ * MB)) --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --output-format=terse "$@" 2>&1)
	[ $? = 0 ] && pass "$tag: fio write then verify" ||
		{ fail "$tag: fio write then verify"; echo "$out" | tail -n 8 | sed 's/^/#   /'; }
}
filepath() {	# requests that went through the file
	echo $(($(lmq_stat 0 aio_inline) + $(lmq_stat 0 aio_async) + \
		$(lmq_stat 0 inline) + $(lmq_stat 0 kthread)))
}
same() {	# same TAG: the file reads what the device reads
	cmp -s <(dd if=$D bs=1M count=$SZ iflag=direct status=none) \
		<(head -c $((SZ * MB)) "$F")
	is "$?" 0 "$1: $F reads what $D reads"
}
# The errno an operation on the pinned file fails with, then succeeds with
# after the detach: "NAME|ERRNO|command...", run with bash -c.
OPS=()
op() { OPS+=("$1|$2|$3"); }
# xfs_io reports a failed command on stdout ("CMD: STRERROR") and exits
# 0: fail on any such line, whatever the error (a "succeeds" after the
# detach must not pass on an error the list did not foresee)
XERR="grep -E ': [A-Z][A-Za-z/]+( [A-Za-z/]+)*\$' && exit 1 || exit 0"

# Both file systems on the Debian kernels; on the debug kernel one, ext4
# on even days of the year and xfs on odd ones (it runs there for KASAN
# and lockdep over the pin and remap code, which is the same for both;
# LMQ_PIN_FS overrides).
FSES="ext4 xfs"
[ "$LMQ_SLOW" = 1 ] && FSES=$( [ $(( 10#$(date +%j) % 2 )) = 0 ] && echo ext4 || echo xfs)
FSES=${LMQ_PIN_FS:-$FSES}
for fs in $FSES; do
	_lmq_fs $fs || { fail "$fs: scratch file system"; continue; }
	M=/mnt/lmq-$fs F=/mnt/lmq-$fs/image
	blk=$(stat -f -c %S $M)

	# ---- refusals
	truncate -s ${SZ}M $M/sparse
	refuse "$fs sparse" $M/sparse EINVAL "a hole from offset 0"
	dd if=/dev/urandom of=$M/tail bs=1M count=1 conv=fsync status=none
	truncate -s ${SZ}M $M/tail
	refuse "$fs hole at the end" $M/tail EINVAL "a hole from offset $MB"
	fallocate -l ${SZ}M $M/prealloc
	refuse "$fs unwritten" $M/prealloc EINVAL "an unwritten (preallocated) extent at offset 0"
	dd if=/dev/urandom of=$M/plain bs=1M count=4 conv=fsync status=none
	if [ $fs = xfs ]; then
		if cp --reflink=always $M/plain $M/clone 2>/dev/null; then
			refuse "xfs reflink copy" $M/clone EINVAL "a shared (reflinked) extent at offset 0"
		else
			skip "xfs reflink copy" "no reflink on this xfs"
		fi
	fi
	dd if=/dev/urandom of=$W/tmpfs-img bs=1M count=4 status=none
	refuse "tmpfs" $W/tmpfs-img EOPNOTSUPP "only files on ext4 and xfs"
	# a swap file: busy (S_SWAPFILE), and loopmqctl says why (a blank in
	# its name: /proc/swaps writes it \040)
	sw="$M/swap file"
	dd if=/dev/zero of="$sw" bs=1M count=4 conv=fsync status=none
	chmod 600 "$sw"
	if mkswap -q "$sw" >/dev/null && swapon "$sw"; then
		refuse "$fs swap file" "$sw" EBUSY "it is in use as swap"
		swapoff "$sw"
	else
		fail "$fs: swapon of a swap file"
	fi
	rm -f "$sw"
	is "$(word1 "$(lmq-ioctl pwrite $M/plain 0 4096)")" OK "refusals: the files stay writable"

	# ---- pin a fragmented image
	frag_image $F $SZ || fail "$fs: fragmented image"
	n=$(extents $F)
	check "$fs: the image has $n extents (at least 8)" [ "${n:-0}" -ge 8 ]
	# a writer through a shared mapping made before the pin
	lmq-ioctl mmap-write $F $MB 90 &
	mw=$!
	sleep 0.5
	out=$(loopmqctl --remap=pinned $D $F 2>&1)
	pinned=$?
	is "$pinned" 0 "$fs: loopmqctl --remap=pinned $D $F${out:+ ($out)}"
	# the pin's SIGBUS ends the writer at its next write; without it the
	# writer would run forever: give it 5 s, then SIGKILL (137)
	for w in $(seq 50); do alive $mw || break; sleep 0.1; done
	kill -KILL $mw 2>/dev/null
	wait $mw
	is "$?" 135 "$fs: a writer through a mapping made before the pin got SIGBUS"
	# nothing below means anything on a file that is not pinned
	[ $pinned = 0 ] || stop_testing
	sum0=$(sha256sum <$F)
	is "$(cat $S/loopmq/pinned)" 1 "$fs: sysfs loopmq/pinned reads 1"
	is "$(sha256sum <$D)" "$sum0" "$fs: the device reads the image"
	is "$(cat $S/queue/discard_max_bytes)" 0 "$fs: no discard on a pinned file"
	out=$(loopmqctl --remap=pinned $D1 $F 2>&1)
	[[ $out == *"it is pinned by $D"* ]] &&
		pass "$fs: a second device cannot pin it ($out)" ||
		fail "$fs: a second device cannot pin it" "$out"
	out=$(setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin \
		lmq-ioctl set-remap $D 1 2>&1)
	# pinned already: asking again is a no-op, but not without the right
	is "$(word1 "$out")" EPERM "$fs: pinning needs CAP_SYS_ADMIN"

	# ---- the contract, while pinned; every operation succeeds later
	OPS=()
	dd if=/dev/urandom of=$M/other bs=1M count=$SZ conv=fsync status=none
	dd if=/dev/urandom of=$M/donor bs=1M count=$SZ conv=fsync status=none
	if [ $fs = xfs ]; then
		op "XFS_IOC_SWAPEXT" EINVAL "xfs_io -c 'swapext $M/donor' $F 2>&1 | $XERR"
	else
		op "EXT4_IOC_MOVE_EXT" ETXTBSY "lmq-ioctl move-ext $F $M/donor"
	fi
	op "write(2)" ETXTBSY "lmq-ioctl pwrite $F 0 4096"
	op "O_DIRECT write" ETXTBSY "lmq-ioctl pwrite $F 4096 4096 direct"
	op "O_TRUNC" ETXTBSY ": >$F; truncate -s ${SZ}M $F"
	op "truncate" ETXTBSY "truncate -s $MB $F && truncate -s ${SZ}M $F"
	op "fallocate punch" ETXTBSY "fallocate -p -o 0 -l 4096 $F"
	op "fallocate" ETXTBSY "fallocate -o 0 -l $((SZ * MB)) $F"
	op "shared writable mmap" ETXTBSY "xfs_io -c 'mmap -w 0 4096' $F 2>&1 | $XERR"
	op "copy_file_range into it" ETXTBSY "xfs_io -c 'copy_range -l 4096 $M/other' $F 2>&1 | $XERR"
	if [ $fs = xfs ]; then
		op "FICLONE into it" ETXTBSY "xfs_io -c 'reflink $M/other 0 0 4096' $F 2>&1 | $XERR"
		op "FICLONE from it" ETXTBSY "xfs_io -c 'reflink $F 0 0 4096' $M/other 2>&1 | $XERR"
		op "FIDEDUPERANGE" ETXTBSY "xfs_io -c 'dedupe $M/other 0 0 4096' $F 2>&1 | $XERR"
	else
		# last: once allowed, it leaves the file with the boot loader's blocks
		op "EXT4_IOC_SWAP_BOOT" EINVAL "lmq-ioctl swap-boot $F"
	fi
	for o in "${OPS[@]}"; do
		IFS='|' read -r name e cmd <<<"$o"
		expect_errno "$e" "$fs pinned: $name refuses with $e" bash -c "$cmd"
	done
	n0=$(extents $F)
	defrag $F >$W/defrag.log 2>&1
	is "$(extents $F)" "$n0" "$fs pinned: $(defrag_name) leaves its $n0 extents alone"
	expect_errno EPERM "$fs pinned: unlink refuses with EPERM" rm $F
	expect_errno EPERM "$fs pinned: rename refuses with EPERM" mv $F $F.moved
	is "$(sha256sum <$F)" "$sum0" "$fs pinned: the image is unchanged by all that"

	# ---- the device
	truncate -s $(((SZ + 4) * MB)) $F
	is "$?" 0 "$fs pinned: growing the file is allowed"
	is "$(lmq-ioctl set-capacity $D)" OK "$fs pinned: LOOP_SET_CAPACITY"
	is "$(blockdev --getsize64 $D)" $((SZ * MB)) "$fs pinned: the device stays the size of the pinned map"
	is "$(lmq-ioctl set-status $D 0 $MB 0)" EBUSY "$fs pinned: LOOP_SET_STATUS cannot change the size"

	# ---- data, in every mode
	for mode in $LMQ_MODES; do
		lmq_mode 0 $mode || fail "$fs $mode: set mode"
		echo 0 >$S/loopmq/stats
		fio_verify "$fs $mode"
		is "$(lmq_stat 0 errors)" 0 "$fs $mode: no request failed"
		check "$fs $mode: requests were remapped ($(lmq_stat 0 remap))" [ "$(lmq_stat 0 remap)" -gt 0 ]
		is "$(filepath)" 0 "$fs $mode: no request went through the file"
		same "$fs $mode"
	done
	# a page of the file cached by that last read must not go stale
	dd if=/dev/urandom of=$W/new bs=4096 count=1 status=none
	dd if=$W/new of=$D bs=4096 seek=3 count=1 oflag=direct conv=notrunc status=none
	cmp -s $W/new <(dd if=$F bs=4096 skip=3 count=1 status=none)
	is "$?" 0 "$fs page cache: a buffered read of the file sees the remapped write"
	is "$(lmq_stat 0 errors)" 0 "$fs page cache: no request failed"

	# ---- switching between pinned and the file under load
	lmq_mode 0 auto
	echo 0 >$S/loopmq/stats
	rm -f $W/stop
	(
		i=0
		while [ ! -e $W/stop ]; do
			i=$((i + 1))
			case $((i % 3)) in
			1) lmq-ioctl set-remap $D 0 >/dev/null; sleep 0.5
			   lmq-ioctl set-remap $D 1 >/dev/null;;
			0) for m in $LMQ_MODES auto; do lmq_mode 0 $m; sleep 0.05; done;;
			2) dd if=$F of=/dev/null bs=64k skip=$((RANDOM % 200)) count=8 status=none
			   sleep 0.1;;
			esac
		done
	) &
	sw=$!
	out=$(fio --name=sw --filename=$D --ioengine=libaio --direct=1 --iodepth=16 \
		--rw=randwrite --bsrange=512-256k --size=$((SZ * MB)) --verify=crc32c \
		--verify_backlog=16 --verify_fatal=1 --time_based --runtime=8 \
		--output-format=terse 2>&1)
	[ $? = 0 ] && pass "$fs switching: fio randwrite with verify_backlog" ||
		{ fail "$fs switching: fio randwrite with verify_backlog"; echo "$out" | tail -n 8 | sed 's/^/#   /'; }
	touch $W/stop
	wait $sw
	is "$(lmq-ioctl set-remap $D 1)" OK "$fs switching: pin again"
	is "$(cat $S/loopmq/pinned)" 1 "$fs switching: pinned again"
	is "$(lmq_stat 0 errors)" 0 "$fs switching: no request failed"
	check "$fs switching: requests were remapped ($(lmq_stat 0 remap))" [ "$(lmq_stat 0 remap)" -gt 0 ]
	check "$fs switching: and went through the file ($(filepath))" [ "$(filepath)" -gt 0 ]
	same "$fs switching"

	# ---- freeze: the disk does not change while the file system is frozen
	lmq_mode 0 auto
	echo 0 >$S/loopmq/stats
	phys=$(filefrag -v $F | awk '$1 == "0:" { sub(/\.\..*/, "", $4); print $4 }')
	old=$(dd if=$LMQ_SCRATCH bs=$blk skip=$phys count=1 iflag=direct status=none | sha256sum)
	is "$old" "$(dd if=$D bs=$blk count=1 iflag=direct status=none | sha256sum)" \
		"$fs freeze: the image's first block is at disk block $phys"
	dd if=/dev/urandom of=$W/frz bs=$blk count=1 status=none
	xfs_io -x -c freeze $M
	dd if=$W/frz of=$D bs=$blk count=1 oflag=direct conv=notrunc status=none &
	wr=$!
	in_qrq=0
	for i in 1 2 3 4 5 6 7 8 9 10; do
		sleep 0.2
		grep -q loopmq_queue_rq /proc/$wr/stack 2>/dev/null && in_qrq=$((in_qrq + 1))
	done
	check "$fs freeze: the write waits" kill -0 $wr
	is "$in_qrq" 0 "$fs freeze: not inside queue_rq"
	is "$(dd if=$LMQ_SCRATCH bs=$blk skip=$phys count=1 iflag=direct status=none | sha256sum)" \
		"$old" "$fs freeze: the disk block is unchanged while frozen"
	xfs_io -x -c thaw $M
	wait $wr
	is "$?" 0 "$fs freeze: the write completes after the thaw"
	is "$(dd if=$D bs=$blk count=1 iflag=direct status=none | sha256sum)" \
		"$(sha256sum <$W/frz)" "$fs freeze: and reads back"
	is "$(dd if=$LMQ_SCRATCH bs=$blk skip=$phys count=1 iflag=direct status=none | sha256sum)" \
		"$(sha256sum <$W/frz)" "$fs freeze: on the disk block the map named"

	# ---- detach: the file is the device's last content, and free again
	sum1=$(sha256sum <$D)
	is "$(lmq-ioctl clr-fd $D)" OK "$fs: detach"
	echo 3 >/proc/sys/vm/drop_caches
	is "$(head -c $((SZ * MB)) $F | sha256sum)" "$sum1" "$fs detached: the file holds what the device held"
	defrag $F >$W/defrag.log 2>&1
	n1=$(extents $F)
	check "$fs detached: $(defrag_name) took it from $n0 to $n1 extents" [ "${n1:-0}" -lt "$n0" ]
	is "$(head -c $((SZ * MB)) $F | sha256sum)" "$sum1" "$fs detached: with the same data"
	check "$fs detached: the file shrinks back to ${SZ} MiB" truncate -s ${SZ}M $F
	sync
	echo 3 >/proc/sys/vm/drop_caches
	for o in "${OPS[@]}"; do
		IFS='|' read -r name e cmd <<<"$o"
		check "$fs detached: $name succeeds" bash -c "$cmd"
	done
	check "$fs detached: rename succeeds" mv $F $F.moved
	check "$fs detached: unlink succeeds" rm $F.moved
	rm -f $M/sparse $M/tail $M/prealloc $M/plain $M/clone $M/other $M/donor
done

lmq_unload
grep -q "^$LMQ_MOD " /proc/modules && fail "$LMQ_MOD unloads" "still loaded" || pass "$LMQ_MOD unloads"
umount /mnt/lmq-ext4 /mnt/lmq-xfs 2>/dev/null
done_testing

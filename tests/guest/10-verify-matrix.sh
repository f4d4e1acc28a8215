#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# 10-verify-matrix: fio crc32c verify (write-then-verify, and a mixed randrw
# with verify_backlog) in every mode x backing x logical block size:
#   backing: file on ext4 (/dev/vda), file on xfs (/dev/vda), a raw block
#            device (brd /dev/ram0, through the remap path) -- all with
#            direct I/O on -- and a buffered file on tmpfs;
#   logical block size 512 and 4096 (LOOP_CONFIGURE block_size), one per
#   mode and backing on each kernel, the other on the other kernel (see
#   backings(); LMQ_LBS_ALL=1 runs both everywhere).
# Every cell must finish with no fio error and no verify mismatch, the
# backing must hold at each offset what the device reads there, and the
# device must report the requested block size and dio state.  A cell writes
# 2 MiB in requests of the logical block size to 64 KiB (about 60 writes)
# and then mixes 2 MiB of 4 KiB reads and writes: every request size class
# and alignment the cell is about.
DESCRIPTION="fio crc32c verify in every mode x backing x logical block size"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

M=/mnt/t10
mkdir -p $M
modprobe brd rd_nr=1 rd_size=32768 || { fail "modprobe brd"; stop_testing; }
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0) S=$(lmq_sys 0)

cell() {	# cell MODE BACKING-PATH DIO LBS TAG
	local mode=$1 b=$2 dio=$3 lbs=$4 tag="$5/$1/lbs=$4" flags=0 out
	[ $dio = 1 ] && flags=16
	is "$(lmq-ioctl configure $D $b $flags $lbs)" OK "$tag: LOOP_CONFIGURE dio=$dio" || return
	lmq_mode 0 $mode || fail "$tag: set mode"
	lmq_is_mq && echo 0 >$S/loopmq/stats
	[ -b $D ] || { fail "$tag: $D is not a block device"; return; }
	is "$(cat $S/queue/logical_block_size) $(cat $S/loop/dio)" "$lbs $dio" "$tag: block size, dio"
	out=$(fio --name=wv --filename=$D --ioengine=libaio --direct=1 --iodepth=8 \
		--rw=randwrite --bsrange=$lbs-64k --size=2M --verify=crc32c --do_verify=1 \
		--verify_fatal=1 --output-format=terse 2>&1)
	[ $? = 0 ] && pass "$tag: write then verify" ||
		{ fail "$tag: write then verify"; echo "$out" | tail -n 8 | sed 's/^/#   /'; }
	out=$(fio --name=rw --filename=$D --ioengine=libaio --direct=1 --iodepth=8 \
		--rw=randrw --bs=$((lbs > 4096 ? lbs : 4096)) --size=2M --io_size=2M \
		--verify=crc32c --verify_backlog=32 --verify_fatal=1 --output-format=terse 2>&1)
	[ $? = 0 ] && pass "$tag: randrw with verify_backlog" ||
		{ fail "$tag: randrw with verify_backlog"; echo "$out" | tail -n 8 | sed 's/^/#   /'; }
	# what the device reads is where it belongs in the backing: fio
	# verifies through the device alone, which a consistent mis-mapping
	# (an offset, a swapped extent) would pass
	cmp -s <(dd if=$D bs=64k count=32 iflag=direct status=none) \
		<(dd if=$b bs=64k count=32 $([ $dio = 1 ] && echo iflag=direct) status=none)
	is "$?" 0 "$tag: the backing holds what the device reads, at the same offsets"
	if [ $lbs = 4096 ]; then	# a 512-byte direct read must be refused
		is "$(lmq-ioctl pread $D 512 512 direct)" EINVAL "$tag: 512 B O_DIRECT refused"
	fi
	if lmq_is_mq; then
		is "$(lmq_stat 0 errors)" 0 "$tag: stats errors"
		# the remap path takes a block device with direct I/O, only
		if [ -b $b ] && [ $dio = 1 ]; then
			check "$tag: requests took the remap path" [ "$(lmq_stat 0 remap)" -gt 0 ]
		else
			is "$(lmq_stat 0 remap)" 0 "$tag: no request took the remap path"
		fi
	fi
	is "$(lmq-ioctl clr-fd $D)" OK "$tag: LOOP_CLR_FD"
}

# Each mode on each backing at one logical block size, 512 and 4096 in
# turn: on one kernel every backing and every mode sees both sizes, and
# the other kernel (the parity of its minor version) takes the other size
# of each pair, so 6.1 and 6.12 together cover mode x backing x size.
# LMQ_LBS_ALL=1 runs both sizes in every cell.
par=$(( $(uname -r | cut -d. -f2) % 2 )) nb=0
backings() {	# run every mode on one backing, lbs in turn
	local tag=$1 b=$2 dio=$3 mode lbs i=0
	for mode in $LMQ_MODES; do
		if [ "${LMQ_LBS_ALL:-0}" = 1 ]; then
			for lbs in 512 4096; do cell $mode $b $dio $lbs $tag; done
		else
			lbs=512
			[ $(( (i + nb + par) % 2 )) = 1 ] && lbs=4096
			cell $mode $b $dio $lbs $tag
		fi
		i=$((i + 1))
	done
	nb=$((nb + 1))
}

if mkfs.ext4 -q -F /dev/vda && mount /dev/vda $M && truncate -s 24M $M/img; then
	backings ext4 $M/img 1; umount $M
else fail "ext4 backing setup"; fi
if mkfs.xfs -q -f /dev/vda && mount /dev/vda $M && truncate -s 24M $M/img; then
	backings xfs $M/img 1; umount $M
else fail "xfs backing setup"; fi
backings brd /dev/ram0 1
if mount -t tmpfs -o size=40M tmpfs $M && truncate -s 24M $M/img; then
	backings tmpfs $M/img 0; umount $M
else fail "tmpfs backing setup"; fi
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
modprobe -r brd
done_testing

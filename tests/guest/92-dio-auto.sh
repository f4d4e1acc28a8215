#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 420
# 92-dio-auto: direct I/O "auto" (loopmq(4), "Direct I/O"; DOC: dio auto in
# loopmq_dio.c) chooses from the backing's layout, says why, and switches
# safely when the layout changes.
#
# With dio_default=auto, an unmodified util-linux losetup attach (as in
# replace mode) gets "auto":
# - a fully written image on xfs: direct I/O, reason "written";
# - written but for 1/16 of it in holes: buffered, "sparse" (62 per
#   mille); for 1/64: direct, "written" (direct with at most 1/32 costly);
# - a sparse image (truncate): buffered, "sparse", holes 1000 per mille;
# - a preallocated image (fallocate: unwritten extents): buffered,
#   "sparse", unwritten 1000 per mille;
# - a reflinked copy of the written image (cp --reflink): buffered,
#   "shared", shared 1000 per mille;
# - a file on tmpfs: buffered, "nobdev"; a block device: direct, "blockdev";
# - the written half of an image (sizelimit): direct; moved to its sparse
#   half by LOOP_SET_STATUS: mapped anew, buffered; a written image grown
#   over a sparse tail (LOOP_SET_CAPACITY) and a read-only device moved to
#   a sparse file (LOOP_CHANGE_FD): mapped anew, buffered;
# - a written image on 4 KiB sectors (null_blk bs=4096) at 512-byte device
#   blocks: direct I/O impossible, "align"; LOOP_SET_BLOCK_SIZE 4096 turns
#   it on ("written", the backing's cache dropped), 512 off again.
# A sparse image filled through the device switches to direct I/O while
# fio writes it (switches 1): the switch writes back what the buffered
# phase left dirty in the backing's page cache (periodic write-back is off
# here; only the direct reads after the switch write back the ranges they
# read) and drops the backing's cached pages; a
# reader runs through the switch without error; fio then verifies every
# block and the device equals the backing file (cmp).  A discard of 1/16
# does not switch back (from direct I/O, only above 1/8); one of 9/64
# does (switches 2, "sparse"); the whole device discarded reads zeroes.
# LOOPMQ_SET_DIO and sysfs loopmq/direct_io set on, off and auto (auto
# measures anew) and refuse anything else (EINVAL) and unbound devices
# (ENXIO).
# Writes decide too, as with a file system on the device, whose free space
# stays costly: on a written image whose whole range was discarded
# (buffered, switch 1), 8 MiB written into the holes leave it buffered
# (the windows of written blocks are all costly, write_costly_permille
# 1000); the same 8 MiB written again switch to direct I/O although 7/8
# of the range are still costly (switch 2, "rewrites", 0 per mille);
# 4 MiB into holes go buffered again (3), written again direct (4); a
# discard of 1 MiB forgets the windows: the range's share decides, and it
# goes buffered (5, write_costly_permille -1); 512-byte writes into
# holes count as costly (no switch).  The windows' thresholds: a range
# written again with 1/16 of each window's blocks in holes stays buffered
# (62 per mille), with 1/32 goes direct (31, switch 6); written from
# direct I/O, another with 1/9 in holes stays direct (109), and a third
# with 1/7 goes buffered (144, switch 7).  Every write
# reads back and the device equals its backing file.  A window is 1/64 of
# the map, 256 to 4096 blocks: sparse images of 16 MiB, 512 MiB and 2 GiB
# have a window's share only once 256, 2048 and 4096 blocks were written.
# LOOP_SET_DIRECT_IO 0 made while a re-map (LOOP_SET_CAPACITY) maps the
# image stands.
# Parts (LMQ_PART): layout, fill, rewrites, windows, race.
DESCRIPTION="direct I/O auto: the choice from the layout, and the switch"
requires() {
	lmq_is_mq || skip_all "direct I/O auto is loopmq's"
	require_cmd lmq-ioctl
	require_cmd fio
	[ -n "$LOSETUP" ] || skip_all "util-linux losetup not found"
	[ -b /dev/vda ] || skip_all "no /dev/vda"
}
. /tests/lib/guest.sh

M=/mnt/t92 T=/tmp/t92
mkdir -p $M $T
mkfs.xfs -q -f -m reflink=1 /dev/vda >/dev/null && mount /dev/vda $M ||
	{ fail "xfs with reflink on vda"; stop_testing; }
D=$(lmq_dev 0)
S=$(lmq_sys 0)/loopmq

# dio_auto KEY: one line of loopmq/dio_auto
dio_auto() {
	local k v
	while read -r k v; do
		[ "$k" = "$1" ] && { echo "$v"; return 0; }
	done <$S/dio_auto
}
# attach NAME BACKING: util-linux losetup, no --direct-io
attach() {
	$LOSETUP "$D" "$2" || { fail "$1: losetup $D $2"; return 1; }
	is "$(cat $S/direct_io)" auto "$1: loopmq/direct_io"
}
# choice NAME CHOSEN REASON: what auto chose and why, and loop/dio agrees
choice() {
	is "$(dio_auto chosen)" "$2" "$1: chosen"
	is "$(dio_auto reason)" "$3" "$1: reason"
	is "$(sysv "$D" loop/dio)" "$([ "$2" = on ] && echo 1 || echo 0)" "$1: loop/dio"
}
# pstate PID: its state letter; waits PID: up to 10 s for it to be
# waiting uninterruptibly (D) three looks in a row
pstate() { awk '{ print $3 }' /proc/$1/stat 2>/dev/null; }
waits() {
	local i n=0
	for ((i = 0; i < 100 && n < 3; i++)); do
		[ "$(pstate $1)" = D ] && n=$((n + 1)) || n=0
		sleep 0.1
	done
}
# wait_switches N: up to 10 s for the switch work to have run N times
wait_switches() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(dio_auto switches)" = "$1" ] && return 0
		sleep 0.1
	done
}
detach() {
	$LOSETUP -d "$D"
	unbound "$D" "$1: detached"
}
# holes DESC MIB N: discard every Nth 4 KiB block of the device's 4 MiB
# from MIB MiB on, the first of them at MIB MiB
holes() {
	check_quiet "$1" fio --name=holes$3 --filename=$D --rw=trim:$((($3 - 1) * 4))k \
		--bs=4k --offset=$2M --size=4M --output-format=terse
}

lmq_load 1 dio_default=auto || { fail "load $LMQ_MOD dio_default=auto"; stop_testing; }
is "$(cat /sys/module/$LMQ_MOD/parameters/dio_default)" auto "dio_default reads auto"

# the choice for each layout
if part layout; then
	dd if=/dev/urandom of=$M/full bs=1M count=32 conv=fsync status=none
	attach "written image" $M/full &&
		{ choice "written image" on written
		  check "written image: costly blocks 0 per mille ($(dio_auto costly_permille))" \
			[ "$(dio_auto costly_permille)" = 0 ]
		  detach "written image"; }

	# mostly written: 1/16 of it holes chooses buffered I/O, 1/64 direct
	# (auto chooses direct with at most 1/32 of the range costly)
	dd if=/dev/urandom of=$M/holes16 bs=1M count=32 conv=fsync status=none
	cp --reflink=never $M/holes16 $M/holes64 || fail "cp --reflink=never"
	sync
	check "punch 2 MiB of 32" fallocate -p -o 8M -l 2M $M/holes16
	check "punch 512 KiB of 32" fallocate -p -o 8M -l 512K $M/holes64
	attach "image 1/16 holes" $M/holes16 &&
		{ choice "image 1/16 holes" off sparse
		  is "$(dio_auto holes_permille)" 62 "image 1/16 holes: holes_permille"
		  detach "image 1/16 holes"; }
	attach "image 1/64 holes" $M/holes64 &&
		{ choice "image 1/64 holes" on written
		  is "$(dio_auto holes_permille)" 15 "image 1/64 holes: holes_permille"
		  detach "image 1/64 holes"; }
	rm -f $M/holes16 $M/holes64

	truncate -s 32M $M/sparse
	attach "sparse image" $M/sparse &&
		{ choice "sparse image" off sparse
		  is "$(dio_auto holes_permille)" 1000 "sparse image: holes_permille"
		  detach "sparse image"; }

	fallocate -l 32M $M/prealloc
	attach "preallocated image" $M/prealloc &&
		{ choice "preallocated image" off sparse
		  is "$(dio_auto unwritten_permille)" 1000 "preallocated image: unwritten_permille"
		  detach "preallocated image"; }

	cp --reflink=always $M/full $M/reflink || fail "cp --reflink"
	attach "reflinked image" $M/reflink &&
		{ choice "reflinked image" off shared
		  is "$(dio_auto shared_permille)" 1000 "reflinked image: shared_permille"
		  detach "reflinked image"; }

	# half written, half sparse: the range decides, and a new range
	# (LOOP_SET_STATUS) is mapped anew
	truncate -s 32M $M/half
	dd if=/dev/urandom of=$M/half bs=1M count=16 conv=notrunc,fsync status=none
	if $LOSETUP --sizelimit 16M "$D" $M/half; then
		choice "written half (sizelimit 16M)" on written
		is "$(lmq-ioctl set-status $D 16777216 16777216 0)" OK "LOOP_SET_STATUS to the sparse half"
		choice "sparse half (offset 16M): mapped anew" off sparse
		is "$(dio_auto holes_permille)" 1000 "sparse half: holes_permille"
		detach "half-written image"
	else
		fail "losetup --sizelimit 16M $D $M/half"
	fi

	# grown (LOOP_SET_CAPACITY) over a sparse tail: mapped anew
	dd if=/dev/urandom of=$M/grow bs=1M count=16 conv=fsync status=none
	if attach "image to grow" $M/grow; then
		choice "image to grow, written" on written
		truncate -s 64M $M/grow
		check "LOOP_SET_CAPACITY (losetup -c)" $LOSETUP -c "$D"
		choice "grown over a sparse tail: mapped anew" off sparse
		is "$(dio_auto holes_permille)" 750 "grown image: holes_permille"
		detach "grown image"
	fi

	# another file (LOOP_CHANGE_FD, read-only): mapped anew ($M/full
	# shares its extents with the reflinked copy now)
	dd if=/dev/urandom of=$M/ro bs=1M count=32 conv=fsync status=none
	if $LOSETUP -r "$D" $M/ro; then
		choice "read-only, written image" on written
		is "$(lmq-ioctl change-fd $D ro:$M/sparse)" OK "LOOP_CHANGE_FD to the sparse image"
		choice "changed to the sparse image: mapped anew" off sparse
		detach "changed image"
	else
		fail "losetup -r $D $M/ro"
	fi

	head -c 8M /dev/urandom >$T/img
	attach "tmpfs file" $T/img && { choice "tmpfs file" off nobdev; detach "tmpfs file"; }

	modprobe brd rd_nr=1 rd_size=16384 max_part=0 || fail "modprobe brd"
	attach "block device" /dev/ram0 && { choice "block device" on blockdev; detach "block device"; }
	rmmod brd

	# a written image on a file system of 4 KiB sectors: auto wants
	# direct I/O, which a 512-byte device block cannot do ("align");
	# LOOP_SET_BLOCK_SIZE 4096 makes it possible without a new choice,
	# and the backing's cache is then settled as at a switch
	if modprobe null_blk nr_devices=1 queue_mode=2 memory_backed=1 gb=1 bs=4096; then
		mkdir -p $M/nb
		mkfs.xfs -q -f /dev/nullb0 >/dev/null && mount /dev/nullb0 $M/nb ||
			fail "xfs on null_blk (4 KiB sectors)"
		dd if=/dev/urandom of=$M/nb/img bs=1M count=16 conv=fsync status=none
		if $LOSETUP --sector-size 512 "$D" $M/nb/img; then
			choice "4 KiB-sector backing, 512 B blocks" off align
			dd if="$D" of=/dev/null bs=1M status=none
			c=$(lmq-ioctl cached $M/nb/img 0 16777216)
			check "512 B blocks: buffered reads fill the backing's cache (${c#OK n=} pages of 4096)" \
				[ "${c#OK n=}" -gt 2048 ]
			is "$(lmq-ioctl set-block-size $D 4096)" OK "LOOP_SET_BLOCK_SIZE 4096"
			choice "4 KiB blocks" on written
			c=$(lmq-ioctl cached $M/nb/img 0 16777216)
			check "4 KiB blocks: the backing's cache was dropped (${c#OK n=} pages of 4096)" \
				[ "${c#OK n=}" -lt 256 ]
			is "$(lmq-ioctl set-block-size $D 512)" OK "LOOP_SET_BLOCK_SIZE 512"
			choice "512 B blocks again" off align
			check "the device equals its backing file" cmp $D $M/nb/img
			detach "4 KiB-sector backing"
		else
			fail "losetup --sector-size 512 $D $M/nb/img"
		fi
		umount $M/nb
		modprobe -r null_blk
	else
		fail "modprobe null_blk bs=4096"
	fi
fi

# The filling image: sparse, filled through the device by fio (64 KiB
# direct writes, in order), a reader beside it; no periodic write-back.
writeback_off
truncate -s 64M $M/fill
if part fill && attach "filling image" $M/fill; then
	choice "filling image, empty" off sparse
	FIO="fio --name=fill --filename=$D --rw=write --bs=64k --direct=1 --size=64M
		--verify=crc32c --output-format=terse"
	fio --name=reader --filename=$D --rw=randread --bs=16k --direct=1 \
		--time_based --runtime=600 --output-format=terse >$T/reader.out 2>&1 &
	rpid=$!
	check_quiet "fill: fio writes every block" $FIO --do_verify=0
	wait_switches 1
	is "$(dio_auto switches)" 1 "fill: one switch"
	choice "filled image" on written
	check "fill: costly blocks at most 31 per mille ($(dio_auto costly_permille))" \
		[ "$(dio_auto costly_permille)" -le 31 ]
	# the switch wrote back the buffered phase's dirty pages and dropped
	# the backing's cache (64 MiB were written, all but the last ~2 MiB
	# buffered)
	# (its last write-back ends after the count went up: up to 10 s for
	# it; the periodic write-back is off and the reader, whose direct
	# reads write back what they read, has stopped: only the switch
	# writes back)
	kill -INT $rpid
	wait $rpid
	for ((i = 0; i < 100; i++)); do
		dirty=$(awk '/^Dirty:/ { print $2 }' /proc/meminfo)
		cached=$(lmq-ioctl cached $M/fill 0 67108864)
		cached=${cached#OK n=}
		[ "$dirty" -lt 4096 ] && [ "${cached:-99999}" -lt 1024 ] && break
		sleep 0.1
	done
	check "fill: the backing's dirty pages were written back at the switch (Dirty: $dirty kB)" \
		[ "$dirty" -lt 4096 ]
	check "fill: the backing's page cache was dropped at the switch ($cached pages of 16384)" \
		[ "${cached:-99999}" -lt 1024 ]
	# terse output: version;fio;job;group;error;...
	is "$(awk -F';' '$1 == 3 { print $5 }' $T/reader.out)" 0 \
		"fill: the reader saw no error through the switch"
	check_quiet "fill: fio verifies every block" $FIO --verify_only=1
	check "fill: the device equals its backing file" cmp $D $M/fill
	is "$(lmq_stat 0 errors)" 0 "fill: no request failed"
	# 1/16 discarded: above the 1/32 that chose direct I/O, within the
	# 1/8 that leaves it (the gap keeps a device from switching back and
	# forth)
	check "discard 4 MiB of 64" blkdiscard -o 0 -l 4194304 $D
	sleep 1
	is "$(dio_auto costly_permille)" 62 "4 MiB discarded: costly_permille"
	is "$(dio_auto switches)" 1 "4 MiB discarded: no switch"
	choice "4 MiB discarded" on written
	# 9 MiB of 64 discarded (140 per mille): above 1/8, buffered I/O once
	# more; a switch-back threshold anywhere above 1/7 would stay direct
	check "discard 5 MiB more" blkdiscard -o 4194304 -l 5242880 $D
	wait_switches 2
	is "$(dio_auto costly_permille)" 140 "9 MiB discarded: costly_permille"
	is "$(dio_auto switches)" 2 "9 MiB discarded: a second switch"
	choice "9 MiB discarded" off sparse
	# the whole device discarded: buffered still, and it reads zeroes
	check "discard the device" blkdiscard $D
	sleep 1
	is "$(dio_auto switches)" 2 "discard: no third switch"
	choice "discarded image" off sparse
	check "discard: the device reads zeroes" cmp -n 67108864 $D /dev/zero

	# the settings by hand
	is "$(lmq-ioctl set-dio-setting $D on)" OK "LOOPMQ_SET_DIO on"
	is "$(cat $S/direct_io)" on "direct_io reads on"
	choice "set on" on set
	is "$(lmq-ioctl set-dio $D 0)" OK "LOOP_SET_DIRECT_IO 0"
	is "$(cat $S/direct_io)" off "direct_io reads off after LOOP_SET_DIRECT_IO 0"
	choice "set off" off set
	is "$(word1 "$(lmq-ioctl set-dio-setting $D 3)")" EINVAL "LOOPMQ_SET_DIO 3: EINVAL"
	check_fail "direct_io refuses 'sometimes'" sh -c "echo sometimes >$S/direct_io"
	is "$(cat $S/direct_io)" off "direct_io still off"
	dd if=/dev/urandom of=$D bs=1M count=64 oflag=direct status=none
	check "echo auto >direct_io" sh -c "echo auto >$S/direct_io"
	is "$(cat $S/direct_io)" auto "direct_io reads auto"
	choice "auto again, after a full write" on written
	is "$(dio_auto switches)" 2 "auto again: switches count from the attach"
	detach "filling image"
fi

# Windows of writes: a written image, discarded, then written through the
# device (1 MiB direct writes: a window is 256 blocks of 4 KiB here, 1/64
# of the map)
if part rewrites; then
	dd if=/dev/urandom of=$M/rw bs=1M count=64 conv=fsync status=none
fi
if part rewrites && attach "rewritten image" $M/rw; then
	choice "rewritten image, written" on written
	check "rewrites: discard the device" blkdiscard $D
	wait_switches 1
	is "$(dio_auto switches)" 1 "rewrites: discarded: a switch"
	choice "rewrites: discarded" off sparse
	is "$(dio_auto write_costly_permille)" -1 "rewrites: discarded: no window of writes"
	dd if=/dev/urandom of=$T/a bs=1M count=8 status=none
	dd if=/dev/urandom of=$T/b bs=1M count=8 status=none
	check "rewrites: 8 MiB into holes" \
		dd if=$T/a of=$D bs=1M count=8 oflag=direct status=none
	sleep 1
	is "$(dio_auto write_costly_permille)" 1000 "rewrites: 8 MiB into holes: windows all costly"
	is "$(dio_auto switches)" 1 "rewrites: 8 MiB into holes: no switch"
	choice "rewrites: 8 MiB into holes" off sparse
	check "rewrites: the same 8 MiB again" \
		dd if=$T/b of=$D bs=1M count=8 oflag=direct status=none
	wait_switches 2
	is "$(dio_auto write_costly_permille)" 0 "rewrites: 8 MiB again: windows not costly"
	is "$(dio_auto costly_permille)" 875 "rewrites: 8 MiB again: costly_permille"
	is "$(dio_auto switches)" 2 "rewrites: 8 MiB again: a switch"
	choice "rewrites: 8 MiB again" on rewrites
	check "rewrites: the 8 MiB read back" cmp -n 8388608 $D $T/b
	check "rewrites: 4 MiB into holes, direct" \
		dd if=$T/a of=$D bs=1M count=4 seek=32 oflag=direct status=none
	wait_switches 3
	is "$(dio_auto switches)" 3 "rewrites: 4 MiB into holes, direct: a switch"
	choice "rewrites: 4 MiB into holes, direct" off sparse
	check "rewrites: the same 4 MiB again" \
		dd if=$T/b of=$D bs=1M count=4 seek=32 oflag=direct status=none
	wait_switches 4
	is "$(dio_auto switches)" 4 "rewrites: 4 MiB again: a switch"
	choice "rewrites: 4 MiB again" on rewrites
	check "rewrites: the 4 MiB read back" \
		cmp -n 4194304 -i 33554432:0 $D $T/b
	check "rewrites: discard 1 MiB" blkdiscard -o 50331648 -l 1048576 $D
	wait_switches 5
	is "$(dio_auto write_costly_permille)" -1 "rewrites: 1 MiB discarded: windows forgotten"
	is "$(dio_auto switches)" 5 "rewrites: 1 MiB discarded: a switch"
	choice "rewrites: 1 MiB discarded" off sparse
	# 512-byte writes into holes: a block they touch but do not cover
	# stays costly, and counts as costly in the window
	check_quiet "rewrites: 600 writes of 512 bytes into holes" \
		fio --name=small --filename=$D --rw=randwrite --bs=512 --direct=1 \
		--offset=40M --size=8M --number_ios=600 --randrepeat=1 --norandommap \
		--output-format=terse
	sleep 1
	is "$(dio_auto write_costly_permille)" 1000 "rewrites: 512-byte writes into holes: windows all costly"
	is "$(dio_auto switches)" 5 "rewrites: 512-byte writes into holes: no switch"
	choice "rewrites: 512-byte writes into holes" off sparse
	# the windows' thresholds: 4 MiB written into holes, some of its
	# blocks discarded, and written again, window by window: with 1/16 of
	# each window's blocks in holes it stays buffered, with 1/32 it goes
	# direct; two more 4 MiB written from direct I/O: with 1/9 in holes
	# it stays direct, with 1/7 it goes buffered (the range is 3/4
	# costly all along)
	check "rewrites: 4 MiB at 16 MiB" \
		dd if=$T/a of=$D bs=1M count=4 seek=16 oflag=direct status=none
	holes "rewrites: every 16th block of it discarded" 16 16
	check "rewrites: the 4 MiB again, 1/16 into holes" \
		dd if=$T/b of=$D bs=1M count=4 seek=16 oflag=direct status=none
	sleep 1
	is "$(dio_auto write_costly_permille)" 62 "rewrites: 1/16 into holes: windows 62 per mille"
	is "$(dio_auto switches)" 5 "rewrites: 1/16 into holes: no switch"
	check "rewrites: 4 MiB at 20 MiB" \
		dd if=$T/a of=$D bs=1M count=4 seek=20 oflag=direct status=none
	holes "rewrites: every 9th block of it discarded" 20 9
	check "rewrites: 4 MiB at 24 MiB" \
		dd if=$T/a of=$D bs=1M count=4 seek=24 oflag=direct status=none
	holes "rewrites: every 7th block of it discarded" 24 7
	holes "rewrites: every 32nd block at 16 MiB discarded" 16 32
	is "$(dio_auto switches)" 5 "rewrites: discarded again: no switch"
	check "rewrites: the 4 MiB at 16 MiB again, 1/32 into holes" \
		dd if=$T/a of=$D bs=1M count=4 seek=16 oflag=direct status=none
	wait_switches 6
	is "$(dio_auto write_costly_permille)" 31 "rewrites: 1/32 into holes: windows 31 per mille"
	is "$(dio_auto switches)" 6 "rewrites: 1/32 into holes: a switch"
	choice "rewrites: 1/32 into holes" on rewrites
	check "rewrites: the 4 MiB at 20 MiB again, 1/9 into holes, direct" \
		dd if=$T/b of=$D bs=1M count=4 seek=20 oflag=direct status=none
	sleep 1
	is "$(dio_auto write_costly_permille)" 109 "rewrites: 1/9 into holes: windows 109 per mille"
	is "$(dio_auto switches)" 6 "rewrites: 1/9 into holes, direct: no switch"
	choice "rewrites: 1/9 into holes, direct" on rewrites
	check "rewrites: the 4 MiB at 24 MiB again, 1/7 into holes, direct" \
		dd if=$T/b of=$D bs=1M count=4 seek=24 oflag=direct status=none
	wait_switches 7
	is "$(dio_auto write_costly_permille)" 144 "rewrites: 1/7 into holes: windows 144 per mille"
	is "$(dio_auto switches)" 7 "rewrites: 1/7 into holes, direct: a switch"
	choice "rewrites: 1/7 into holes, direct" off sparse
	check "rewrites: the 4 MiB at 16 MiB read back" \
		cmp -n 4194304 -i 16777216:0 $D $T/a
	check "rewrites: the 4 MiB at 20 MiB read back" \
		cmp -n 4194304 -i 20971520:0 $D $T/b
	check "rewrites: the 4 MiB at 24 MiB read back" \
		cmp -n 4194304 -i 25165824:0 $D $T/b
	check "rewrites: the device equals its backing file" cmp $D $M/rw
	is "$(lmq_stat 0 errors)" 0 "rewrites: no request failed"
	detach "rewritten image"
fi
rm -f $M/rw

# The window's size: 1/64 of the map, at least 256 and at most 4096
# blocks.  On sparse images of 16 MiB (4096 blocks: 256), 512 MiB (2048)
# and 2 GiB (4096, not 8192), one block short of a window leaves no
# window's share, the next block makes one.
if part windows; then
	for w in 16:256 512:2048 2048:4096; do
		mib=${w%:*} win=${w#*:}
		truncate -s ${mib}M $M/win
		attach "sparse image of $mib MiB" $M/win || continue
		choice "sparse image of $mib MiB" off sparse
		check "windows: $mib MiB: $((win - 1)) blocks written" \
			dd if=/dev/urandom of=$D bs=4k count=$((win - 1)) oflag=direct status=none
		is "$(dio_auto write_costly_permille)" -1 "windows: $mib MiB: no window after $((win - 1)) blocks"
		check "windows: $mib MiB: one block more" \
			dd if=/dev/urandom of=$D bs=4k count=1 seek=$((win - 1)) oflag=direct status=none
		is "$(dio_auto write_costly_permille)" 1000 "windows: $mib MiB: a window of $win blocks"
		sleep 1	# a switch would be queued work: time for it to run
		is "$(dio_auto switches)" 0 "windows: $mib MiB: no switch"
		detach "sparse image of $mib MiB"
		rm -f $M/win
	done
fi
writeback_on

# A re-map (LOOP_SET_CAPACITY here) maps the file without the device's
# lock; LOOP_SET_DIRECT_IO 0 made meanwhile must stand, not be replaced
# by the re-map's "auto".  The re-map is held inside its mapping: xfs maps
# (FIEMAP) under the inode's I/O lock, shared, and a buffered write of the
# image holds it exclusively while it faults in its source, here a page
# of a suspended device-mapper device.
if part race; then
	truncate -s 16M $M/race
	echo "0 8192 linear /dev/ram0 0" >$T/race.table
	modprobe dm-mod 2>/dev/null
	if modprobe brd rd_nr=1 rd_size=4096 && dms create t92race $T/race.table; then
		MD=/dev/mapper/t92race
		[ -b $MD ] || MD=/dev/$(basename "$(readlink -f /sys/block/dm-0)")
	else
		fail "race: a dm-linear device on brd"; MD=
	fi
	if [ -b "$MD" ] && attach "race image" $M/race; then
		choice "race image" off sparse
		udevadm settle 2>/dev/null
		blockdev --flushbufs $MD
		dms suspend t92race
		lmq-ioctl pwrite-mapped $M/race 0 $MD 1048576 >$T/w.out &
		wpid=$!
		waits $wpid
		is "$(pstate $wpid)" D "race: the writer waits for its source page"
		lmq-ioctl set-capacity $D >$T/cap.out &
		cpid=$!
		waits $cpid
		is "$(pstate $cpid)" D "race: the re-map waits for the image's lock"
		is "$(timeout 20 lmq-ioctl set-dio $D 0)" OK "race: LOOP_SET_DIRECT_IO 0 during the re-map"
		dms resume t92race
		wait $wpid $cpid
		is "$(cat $T/w.out) $(cat $T/cap.out)" "OK OK" "race: the write and LOOP_SET_CAPACITY"
		is "$(cat $S/direct_io)" off "race: the setting made during the re-map stands"
		choice "race: after the re-map" off set
		detach "race image"
	fi
	dms remove t92race 2>/dev/null
	modprobe -r brd 2>/dev/null
	rm -f $M/race
fi
is "$(word1 "$(lmq-ioctl set-dio-setting $D auto)")" ENXIO "LOOPMQ_SET_DIO on an unbound device: ENXIO"
is "$(sh -c "echo auto >$S/direct_io" 2>&1 | grep -o 'No such device or address')" \
	"No such device or address" "sysfs direct_io on an unbound device: ENXIO"

lmq_unload
umount $M
done_testing

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 150
# 72-detach-partition-race: detach (losetup -d = LOOP_CLR_FD) of a device
# with partitions while other processes keep opening a partition, as udev's
# blkid does on the change event of the detach.  Many cycles of: attach a
# partitioned image (GPT, or MBR without sfdisk) with partscan, two threads open/close loopmq0p1 as fast as they
# can, losetup -d, the openers go on for a moment, stop.  Once losetup -d
# returned and every opener closed, the device must be unbound, and
# loopmq0p1 / loopmq0p2 gone from /sys/block/loopmq0/ and /dev (loopmq used
# to let an open slip in between the change event and the partition drop:
# bdev_disk_changed() failed with EBUSY, "partition rescan failed", and
# the partitions stayed behind after the detach).  The detach may be
# deferred until the last opener closed (LOOP_CLR_FD with other openers
# only sets autoclear; stock loop since 6.11 also refuses opens during the
# detach): nothing is asserted before the openers stopped.
DESCRIPTION="detach of a partitioned device racing opens of a partition"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	command -v lmq-openrace >/dev/null || skip_all "lmq-openrace not installed"
}
. /tests/lib/guest.sh

W=/tmp/t72
mkdir -p $W
N=${RACE_CYCLES:-$((LMQ_SLOW ? 12 : 40))}	# debug kernel: ~10x slower
MAXFAIL=3

truncate -s 32M $W/img
# two partitions of 8 MiB at sectors 2048 and 18432: GPT by sfdisk, or an
# MBR written by hand where there is no sfdisk (as in 23-partitions)
if command -v sfdisk >/dev/null; then
	printf 'label: gpt\nstart=2048, size=16384, name=one\nstart=18432, size=16384, name=two\n' |
		sfdisk -q $W/img >/dev/null || { fail "sfdisk"; stop_testing; }
	diag "GPT by sfdisk"
else
	printf '\x00\x00\x00\x00\x83\x00\x00\x00\x00\x08\x00\x00\x00\x40\x00\x00' |
		dd of=$W/img bs=1 seek=446 conv=notrunc status=none
	printf '\x00\x00\x00\x00\x83\x00\x00\x00\x00\x48\x00\x00\x00\x40\x00\x00' |
		dd of=$W/img bs=1 seek=462 conv=notrunc status=none
	printf '\x55\xaa' | dd of=$W/img bs=1 seek=510 conv=notrunc status=none
	diag "MBR by hand (no sfdisk)"
fi
lmq_load 1 max_part=15 || { fail "load $LMQ_MOD max_part=15"; stop_testing; }
D=$(lmq_dev 0) S=$(lmq_sys 0) NM=${LMQ_NAME}0

# gone: nothing of the binding and the partitions left
leftovers() {
	local f out=
	for f in $S/${NM}p1 $S/${NM}p2 ${D}p1 ${D}p2 $S/loop/backing_file; do
		[ -e $f ] && out+=" $f"
	done
	echo "${out# }"
}
pat='partition (re)?scan.*failed|partition scan of .* failed'
msgs0=$(dmesg | grep -cE "$pat")

cycles=0 bad=0 detach_err=0 opener_err=0 unset_partscan=0
for ((i = 1; i <= N; i++)); do
	if ! $LOSETUP -P $D $W/img; then
		fail "cycle $i: losetup -P $D"
		break
	fi
	for ((k = 0; k < 50; k++)); do [ -b ${D}p2 ] && break; sleep 0.05; done
	if [ ! -b ${D}p1 ] || [ ! -b ${D}p2 ]; then
		fail "cycle $i: ${D}p1 and ${D}p2 after attach" "$(ls /dev | grep "^$NM" | tr '\n' ' ')"
		break
	fi
	[ "$(cat $S/loop/partscan 2>/dev/null)" = 1 ] || unset_partscan=$((unset_partscan + 1))
	lmq-openrace partopen ${D}p1 30 2 >$W/po 2>&1 &
	po=$!
	# let the openers get going; vary the moment of the detach
	sleep "$(printf "0.%02d" $((RANDOM % 15 + 5)))"
	$LOSETUP -d $D || detach_err=$((detach_err + 1))
	sleep 0.3
	kill -TERM $po
	wait $po || { opener_err=$((opener_err + 1)); sed 's/^/#   /' $W/po; }
	[ $i = 1 ] && diag "cycle 1 openers: $(grep -o 'open ok.*' $W/po)"
	cycles=$i
	# losetup -d returned, every opener closed: gone within a short wait
	for ((k = 0; k < 50; k++)); do [ -z "$(leftovers)" ] && break; sleep 0.1; done
	left=$(leftovers)
	if [ -n "$left" ]; then
		bad=$((bad + 1))
		diag "cycle $i: 5 s after the detach and the last close still there: $left"
		[ $bad -ge $MAXFAIL ] && break
		# the next attach rescans; a stale binding would refuse it
		[ -e $S/loop/backing_file ] && { lmq-ioctl clr-fd $D >/dev/null; lmq_wait_gone $S/loop/backing_file 50; }
	fi
done
is "$bad" 0 "$cycles detach cycles with racing partition opens: none left the device bound or partitions behind"
is "$detach_err" 0 "losetup -d succeeded in every cycle"
is "$opener_err" 0 "partition openers saw only ENOENT/ENXIO"
is "$unset_partscan" 0 "loop/partscan was 1 after every attach"
msgs=$(($(dmesg | grep -cE "$pat") - msgs0))
is "$msgs" 0 "no 'partition (re)scan failed' in dmesg"
[ "$msgs" = 0 ] || dmesg | grep -E "$pat" | tail -n 3 | sed 's/^/#   /'
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

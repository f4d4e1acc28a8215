#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 27-losetup-compat: util-linux losetup (the real one, not busybox's) drives
# the device: attach, attach with --direct-io=on -o 4096 --sizelimit,
# --sector-size, list with -l / -l -J / --raw showing the right backing file,
# offset, sizelimit, dio and read-only, -c (set capacity), -d detach, and
# -f --show / -j on the stock names when the driver is loop; and no I/O
# scheduler by default even with one hardware queue.
DESCRIPTION="util-linux losetup drives the device: attach options, listing, -c, -d"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -n "$LOSETUP" ] && ! readlink -f "$LOSETUP" | grep -q busybox ||
		skip_all "util-linux losetup not found"
}
. /tests/lib/guest.sh

diag "losetup: $LOSETUP ($($LOSETUP --version))"
[ -b /dev/vda ] && mkfs.ext4 -q -F /dev/vda && mkdir -p /mnt/t27 && mount /dev/vda /mnt/t27 ||
	{ fail "ext4 on vda"; stop_testing; }
F=/mnt/t27/img
head -c 16M /dev/urandom >$F
lmq_load 2 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)

# 1. plain attach
check_quiet "losetup $D $F" $LOSETUP $D $F
is "$(cat $(lmq_sys 0)/loop/backing_file)" "$F" "sysfs backing_file"
is "$(cmp $D $F && echo same)" same "device content equals the file"
out=$($LOSETUP -l -n -O NAME,BACK-FILE,OFFSET,DIO,RO $D)
is "$(echo $out)" "$D $F 0 0 0" "losetup -l -O NAME,BACK-FILE,OFFSET,DIO,RO"
check_quiet "losetup -d" $LOSETUP -d $D
is "$(lmq-ioctl get-status $D)" ENXIO "unbound after losetup -d"

# 2. direct I/O and an offset
check_quiet "losetup --direct-io=on -o 4096 --sizelimit 8M" \
	$LOSETUP --direct-io=on -o 4096 --sizelimit $((8 << 20)) $D $F
j=$($LOSETUP -l -J $D)
diag "losetup -l -J: $(echo $j)"
is "$(echo "$j" | jq -r '.loopdevices[0].name')" "$D" "JSON name"
is "$(echo "$j" | jq -r '.loopdevices[0]."back-file"')" "$F" "JSON back-file"
is "$(echo "$j" | jq -r '.loopdevices[0].offset')" 4096 "JSON offset"
is "$(echo "$j" | jq -r '.loopdevices[0].sizelimit')" $((8 << 20)) "JSON sizelimit"
is "$(echo "$j" | jq -r '.loopdevices[0].dio')" true "JSON dio"
is "$(cat $(lmq_sys 0)/loop/dio)" 1 "sysfs dio"
is "$(blockdev --getsize64 $D)" $((8 << 20)) "size = sizelimit"
is "$(dd if=$D bs=4k count=16 iflag=direct status=none | sha256sum)" \
	"$(dd if=$F bs=4k skip=1 count=16 status=none | sha256sum)" "device reads file from offset 4096"
check_quiet "losetup --direct-io=off (LOOP_SET_DIRECT_IO)" $LOSETUP --direct-io=off $D
is "$(cat $(lmq_sys 0)/loop/dio)" 0 "sysfs dio after --direct-io=off"
check_quiet "losetup -d" $LOSETUP -d $D

# 3. sector size, read-only, --show
is "$($LOSETUP --show -r -b 4096 $D $F)" "$D" "losetup --show -r -b 4096"
is "$(blockdev --getss $D)" 4096 "logical block size 4096"
is "$(cat /sys/block/${D##*/}/queue/logical_block_size)" 4096 "sysfs logical_block_size"
is "$($LOSETUP -l -n -O RO,LOG-SEC $D | tr -s ' ' | sed 's/^ //')" "1 4096" "losetup -l RO and LOG-SEC"
check_quiet "losetup -d" $LOSETUP -d $D

# 4. capacity (-c) and a second device; -a lists both (stock names only)
check_quiet "losetup $D $F" $LOSETUP $D $F
check_quiet "losetup $(lmq_dev 1) $F -o 1M" $LOSETUP -o 1M $(lmq_dev 1) $F
head -c 4M /dev/urandom >>$F
check_quiet "losetup -c" $LOSETUP -c $D
is "$(blockdev --getsize64 $D)" $((20 << 20)) "size after losetup -c"
l=$($LOSETUP -l -n -O NAME,OFFSET $(lmq_dev 1) | tr -s ' ')
is "$l" "$(lmq_dev 1) 1048576" "losetup -l of the second device"
la=$($LOSETUP -a 2>&1)
diag "losetup -a: $(echo $la)"
if lmq_is_mq; then
	diag "losetup -a / -j / -f scan /sys/block/loop* only; not asserted for $LMQ_NAME"
else
	echo "$la" | grep -q "^$D: .*($F)" && pass "losetup -a lists $D" || fail "losetup -a misses $D"
	is "$($LOSETUP -j $F -O NAME -n | sort | tr '\n' ' ')" "$D $(lmq_dev 1) " "losetup -j"
fi
check_quiet "losetup -d both" $LOSETUP -d $D $(lmq_dev 1)
is "$(lmq-ioctl get-status $(lmq_dev 1))" ENXIO "second device unbound"

# 5. device reuse
check_quiet "attach again after detach (device reuse)" $LOSETUP $D $F
is "$(cmp -n $((16 << 20)) $D $F && echo same)" same "content after reuse"
check_quiet "losetup -d" $LOSETUP -d $D

lmq_unload; is "$?" 0 "$LMQ_MOD unloads"

# 6. no I/O scheduler by default, as loop: the backing queue schedules.
# One hardware queue is where blk-mq would otherwise pick mq-deadline.
sched() { sed 's/.*\[\(.*\)\].*/\1/' $(lmq_sys 0)/queue/scheduler; }
if lmq_is_mq; then lmq_load 1 nr_hw_queues=1; else lmq_load 1; fi ||
	fail "load $LMQ_MOD with one hardware queue"
is "$(ls /sys/block/${D##*/}/mq | wc -l)" 1 "one hardware queue"
is "$(sched)" none "default scheduler: none"
check_quiet "losetup $D $F" $LOSETUP $D $F
is "$(sched)" none "scheduler after attach: none"
# requests as large as loop's (1280 KiB), not blk-mq's 127.5 KiB default
is "$(cat $(lmq_sys 0)/queue/max_hw_sectors_kb)" 1280 "max_hw_sectors_kb as loop's"
big() {	# 4 MiB in 1 MiB direct writes, read back in 1 MiB direct reads
	dd if=$W27 of=$D bs=1M oflag=direct status=none &&
		dd if=$D of=$W27.back bs=1M count=4 iflag=direct status=none &&
		cmp -s $W27 $W27.back
}
W27=/tmp/t27.big
head -c 4M /dev/urandom >$W27
for m in $LMQ_MODES; do
	lmq_is_mq && { lmq_mode 0 $m || fail "$m: set mode"; }
	check_quiet "$m: 1 MiB direct writes and reads verify" big
	lmq_is_mq || break
done
check_quiet "losetup -d" $LOSETUP -d $D
umount /mnt/t27
lmq_unload; is "$?" 0 "$LMQ_MOD unloads again"
done_testing

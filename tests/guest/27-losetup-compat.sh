#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 27-losetup-compat: util-linux losetup (the real one, not busybox's) drives
# the device: attach, attach with --direct-io=on -o 4096 --sizelimit,
# --sector-size, list with -l / -l -J / --raw showing the right backing file,
# offset, sizelimit, dio and read-only, -c (set capacity), -d detach, and
# -f --show / -j on the stock names when the driver is loop; and no I/O
# scheduler by default even with one hardware queue.
. /tests/lib/driver.sh

[ -n "$LOSETUP" ] && ! readlink -f "$LOSETUP" | grep -q busybox ||
	skip_all "util-linux losetup not found"
t_diag "losetup: $LOSETUP ($($LOSETUP --version))"
[ -b /dev/vda ] && mkfs.ext4 -q -F /dev/vda && mkdir -p /mnt/t27 && mount /dev/vda /mnt/t27 ||
	{ t_fail "ext4 on vda"; t_done; }
F=/mnt/t27/img
head -c 16M /dev/urandom >$F
lmq_load 2 || { t_fail "load $LMQ_MOD"; t_done; }
D=$(lmq_dev 0)

# 1. plain attach
t_run "losetup $D $F" $LOSETUP $D $F
t_is "$(cat $(lmq_sys 0)/loop/backing_file)" "$F" "sysfs backing_file"
t_is "$(cmp $D $F && echo same)" same "device content equals the file"
out=$($LOSETUP -l -n -O NAME,BACK-FILE,OFFSET,DIO,RO $D)
t_is "$(echo $out)" "$D $F 0 0 0" "losetup -l -O NAME,BACK-FILE,OFFSET,DIO,RO"
t_run "losetup -d" $LOSETUP -d $D
t_is "$(lmq-ioctl get-status $D)" ENXIO "unbound after losetup -d"

# 2. direct I/O and an offset
t_run "losetup --direct-io=on -o 4096 --sizelimit 8M" \
	$LOSETUP --direct-io=on -o 4096 --sizelimit $((8 << 20)) $D $F
j=$($LOSETUP -l -J $D)
t_diag "losetup -l -J: $(echo $j)"
t_is "$(echo "$j" | jq -r '.loopdevices[0].name')" "$D" "JSON name"
t_is "$(echo "$j" | jq -r '.loopdevices[0]."back-file"')" "$F" "JSON back-file"
t_is "$(echo "$j" | jq -r '.loopdevices[0].offset')" 4096 "JSON offset"
t_is "$(echo "$j" | jq -r '.loopdevices[0].sizelimit')" $((8 << 20)) "JSON sizelimit"
t_is "$(echo "$j" | jq -r '.loopdevices[0].dio')" true "JSON dio"
t_is "$(cat $(lmq_sys 0)/loop/dio)" 1 "sysfs dio"
t_is "$(blockdev --getsize64 $D)" $((8 << 20)) "size = sizelimit"
t_is "$(dd if=$D bs=4k count=16 iflag=direct status=none | sha256sum)" \
	"$(dd if=$F bs=4k skip=1 count=16 status=none | sha256sum)" "device reads file from offset 4096"
t_run "losetup --direct-io=off (LOOP_SET_DIRECT_IO)" $LOSETUP --direct-io=off $D
t_is "$(cat $(lmq_sys 0)/loop/dio)" 0 "sysfs dio after --direct-io=off"
t_run "losetup -d" $LOSETUP -d $D

# 3. sector size, read-only, --show
t_is "$($LOSETUP --show -r -b 4096 $D $F)" "$D" "losetup --show -r -b 4096"
t_is "$(blockdev --getss $D)" 4096 "logical block size 4096"
t_is "$(cat /sys/block/${D##*/}/queue/logical_block_size)" 4096 "sysfs logical_block_size"
t_is "$($LOSETUP -l -n -O RO,LOG-SEC $D | tr -s ' ' | sed 's/^ //')" "1 4096" "losetup -l RO and LOG-SEC"
t_run "losetup -d" $LOSETUP -d $D

# 4. capacity (-c) and a second device; -a lists both (stock names only)
t_run "losetup $D $F" $LOSETUP $D $F
t_run "losetup $(lmq_dev 1) $F -o 1M" $LOSETUP -o 1M $(lmq_dev 1) $F
head -c 4M /dev/urandom >>$F
t_run "losetup -c" $LOSETUP -c $D
t_is "$(blockdev --getsize64 $D)" $((20 << 20)) "size after losetup -c"
l=$($LOSETUP -l -n -O NAME,OFFSET $(lmq_dev 1) | tr -s ' ')
t_is "$l" "$(lmq_dev 1) 1048576" "losetup -l of the second device"
la=$($LOSETUP -a 2>&1)
t_diag "losetup -a: $(echo $la)"
if lmq_is_mq; then
	t_diag "losetup -a / -j / -f scan /sys/block/loop* only; not asserted for $LMQ_NAME"
else
	echo "$la" | grep -q "^$D: .*($F)" && t_ok "losetup -a lists $D" || t_fail "losetup -a misses $D"
	t_is "$($LOSETUP -j $F -O NAME -n | sort | tr '\n' ' ')" "$D $(lmq_dev 1) " "losetup -j"
fi
t_run "losetup -d both" $LOSETUP -d $D $(lmq_dev 1)
t_is "$(lmq-ioctl get-status $(lmq_dev 1))" ENXIO "second device unbound"

# 5. device reuse
t_run "attach again after detach (device reuse)" $LOSETUP $D $F
t_is "$(cmp -n $((16 << 20)) $D $F && echo same)" same "content after reuse"
t_run "losetup -d" $LOSETUP -d $D

lmq_unload; t_is "$?" 0 "$LMQ_MOD unloads"

# 6. no I/O scheduler by default, as loop: the backing queue schedules.
# One hardware queue is where blk-mq would otherwise pick mq-deadline.
sched() { sed 's/.*\[\(.*\)\].*/\1/' $(lmq_sys 0)/queue/scheduler; }
if lmq_is_mq; then lmq_load 1 nr_hw_queues=1; else lmq_load 1; fi ||
	t_fail "load $LMQ_MOD with one hardware queue"
t_is "$(ls /sys/block/${D##*/}/mq | wc -l)" 1 "one hardware queue"
t_is "$(sched)" none "default scheduler: none"
t_run "losetup $D $F" $LOSETUP $D $F
t_is "$(sched)" none "scheduler after attach: none"
# requests as large as loop's (1280 KiB), not blk-mq's 127.5 KiB default
t_is "$(cat $(lmq_sys 0)/queue/max_hw_sectors_kb)" 1280 "max_hw_sectors_kb as loop's"
big() {	# 4 MiB in 1 MiB direct writes, read back in 1 MiB direct reads
	dd if=$W27 of=$D bs=1M oflag=direct status=none &&
		dd if=$D of=$W27.back bs=1M count=4 iflag=direct status=none &&
		cmp -s $W27 $W27.back
}
W27=/tmp/t27.big
head -c 4M /dev/urandom >$W27
for m in $LMQ_MODES; do
	lmq_is_mq && { lmq_mode 0 $m || t_fail "$m: set mode"; }
	t_run "$m: 1 MiB direct writes and reads verify" big
	lmq_is_mq || break
done
t_run "losetup -d" $LOSETUP -d $D
umount /mnt/t27
lmq_unload; t_is "$?" 0 "$LMQ_MOD unloads again"
t_done

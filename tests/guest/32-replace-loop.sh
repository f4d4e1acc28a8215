#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# 32-replace-loop: with replace_loop=1 loopmq takes the stock loop
# driver's place, and unmodified util-linux uses it: block major 7, disks
# loopN (with /sys/block/loopN/loopmq/), /dev/loop-control at minor 237
# with LOOP_CTL_GET_FREE making devices past the initial count, max_loop
# (CONFIG_BLK_DEV_LOOP_MIN_COUNT devices by default; when given, that many
# and a hard limit for opens), and a device made when a missing /dev/loopN
# on major 7 is opened.  losetup -f, mount -o loop (autoclear), losetup -P,
# -D, --direct-io, -o, --sizelimit, -b, -r, and losetup -l -J shaped as
# the stock driver's.  Refusals: loop loaded, replace_loop=1 fails with
# EBUSY and a dmesg line, plain loopmq still loads; the reverse order,
# loop fails with EBUSY and loopmq keeps working; max_loop without
# replace_loop is EINVAL.
DESCRIPTION="replace_loop=1: loopmq serves major 7, loopN and /dev/loop-control"
requires() {
	lmq_needs_stock_loop
	lmq_is_mq || skip_all "replace_loop is a loopmq parameter"
	[ -n "$LOSETUP" ] || skip_all "util-linux losetup not found"
	[ -b /dev/vda ] || skip_all "no /dev/vda"
	require_cmd jq mkfs.ext4 mknod
	modinfo loop >/dev/null 2>&1 || skip_all "no loop module (built in?)"
}
. /tests/lib/guest.sh

# the images on ext4 on the scratch disk: --direct-io=on needs O_DIRECT,
# which tmpfs lacks before 6.6
f=$(lmq_backing ext4 1M) || { fail "ext4 on the scratch disk"; stop_testing; }
W=${f%/*}/t32 M=/mnt/t32
mkdir -p $W $M
truncate -s 32M $W/img $W/img2
head -c 1M /dev/urandom >$W/data
modprobe -r loop 2>/dev/null
unload_all() { $LOSETUP -D 2>/dev/null; modprobe -r loopmq 2>/dev/null; modprobe -r loop 2>/dev/null; }
replace() {	# replace [PARAM=V...]: loopmq replaces loop
	modprobe loopmq replace_loop=1 "$@" || { fail "modprobe loopmq replace_loop=1 $*"; return 1; }
}
ndev() { local n=0 d; for d in /sys/block/loop[0-9]*; do [ -e "$d/loopmq" ] && n=$((n + 1)); done; echo $n; }

# --- refusals --------------------------------------------------------------
modprobe loop max_loop=1 || { fail "modprobe loop"; stop_testing; }
dmesg -C
expect_errno EBUSY "loop loaded: modprobe loopmq replace_loop=1" modprobe loopmq replace_loop=1
like "$(dmesg | grep 'replace_loop=1')" "block major 7 is taken" "the dmesg line says why"
[ -e /sys/module/loopmq ] && fail "loopmq left loaded after the refusal" ||
	pass "nothing of loopmq left after the refusal"
check_quiet "plain modprobe loopmq still works beside loop" modprobe loopmq
[ -b /dev/loopmq0 ] && [ -e /sys/block/loop0 ] && [ ! -e /sys/block/loop0/loopmq ] &&
	pass "loopmq0 beside the stock loop0" || fail "side by side: loopmq0 or stock loop0 missing"
unload_all
expect_errno EINVAL "max_loop without replace_loop" modprobe loopmq max_loop=4

replace || stop_testing
expect_errno EBUSY "loopmq replacing: modprobe loop" modprobe loop
grep -q '^loop ' /proc/modules && fail "loop loaded beside the replacement" ||
	pass "loop not loaded"
is "$(stat -c '%t:%T' /dev/loop-control 2>/dev/null)" "a:ed" "/dev/loop-control is char 10:237"
is "$(ndev)" 8 "CONFIG_BLK_DEV_LOOP_MIN_COUNT (8) devices at load"
is "$(stat -c '%t' /dev/loop0)" 7 "/dev/loop0 is on block major 7"
is "$(cat /sys/module/loopmq/parameters/replace_loop)" Y "replace_loop reads Y"

# --- util-linux, unmodified ---------------------------------------------------
d=$($LOSETUP -f --show $W/img)
is "$d" /dev/loop0 "losetup -f --show picks /dev/loop0"
[ -e /sys/block/loop0/loopmq/mode ] && pass "/sys/block/loop0/loopmq/mode exists" ||
	fail "no loopmq sysfs group on loop0"
is "$(cat /sys/block/loop0/loop/backing_file)" "$W/img" "loop/backing_file"
dd if=$W/data of=/dev/loop0 bs=64k oflag=direct status=none
is "$(dd if=/dev/loop0 bs=64k count=16 iflag=direct status=none | sha256sum)" \
	"$(sha256sum <$W/data)" "data read back through /dev/loop0"
check_quiet "losetup -d /dev/loop0" $LOSETUP -d /dev/loop0

mkfs.ext4 -qF $W/img2
check_quiet "mount -o loop" mount -o loop $W/img2 $M
src=$(findmnt -no SOURCE $M)
like "$src" '^/dev/loop[0-9]+$' "mounted from $src"
[ -e /sys/block/${src#/dev/}/loopmq ] && pass "$src is a loopmq device" || fail "$src is not loopmq's"
echo hello >$M/f && sync
is "$(cat /sys/block/${src#/dev/}/loop/autoclear)" 1 "mount -o loop sets autoclear"
umount $M
lmq_wait_gone /sys/block/${src#/dev/}/loop/backing_file 30 &&
	pass "umount detaches (autoclear)" || fail "$src still bound after umount"

# two partitions (MBR: p1 at 1 MiB for 8 MiB, p2 at 9 MiB for 16 MiB),
# in a first sector zeroed of the data written above
dd if=/dev/zero of=$W/img bs=512 count=1 conv=notrunc status=none
printf '\x00\x00\x00\x00\x83\x00\x00\x00\x00\x08\x00\x00\x00\x40\x00\x00' |
	dd of=$W/img bs=1 seek=446 conv=notrunc status=none
printf '\x00\x00\x00\x00\x83\x00\x00\x00\x00\x48\x00\x00\x00\x80\x00\x00' |
	dd of=$W/img bs=1 seek=462 conv=notrunc status=none
printf '\x55\xaa' | dd of=$W/img bs=1 seek=510 conv=notrunc status=none
d=$($LOSETUP -P -f --show $W/img)
n=${d#/dev/}
i=0
while [ $i -lt 50 ] && ! [ -b ${d}p2 ]; do sleep 0.1; i=$((i + 1)); done
[ -b ${d}p1 ] && [ -b ${d}p2 ] && pass "losetup -P: ${n}p1 and ${n}p2" ||
	fail "losetup -P: partitions of $d missing ($(echo /sys/block/$n/${n}p*))"
is "$(cat /sys/block/$n/${n}p2/size 2>/dev/null)" 32768 "${n}p2 has 16 MiB"
d2=$($LOSETUP -f --show $W/img2)
check_quiet "losetup -D" $LOSETUP -D
lmq_wait_gone /sys/block/$n/loop/backing_file 30 && lmq_wait_gone /sys/block/${d2#/dev/}/loop/backing_file 30 &&
	pass "losetup -D detached both" || fail "losetup -D left a device bound"

# loopmqctl follows: its devices are loopN and its control /dev/loop-control
if [ -n "$LOOPMQCTL" ]; then
	d=$($LOOPMQCTL -f --show --mode=aio $W/img2)
	is "$d" /dev/loop0 "loopmqctl -f --show picks /dev/loop0"
	is "$(cat /sys/block/loop0/loopmq/mode 2>/dev/null)" aio "loopmqctl --mode=aio on loop0"
	like "$($LOOPMQCTL -l -n -O NAME,BACK-FILE 2>&1)" "^/dev/loop0 +$W/img2" "loopmqctl -l lists loop0"
	check_quiet "loopmqctl -d /dev/loop0" $LOOPMQCTL -d /dev/loop0
fi

# options
opt() {	# opt DESC SYSFS-FILE WANT LOSETUP-OPTIONS...
	local desc=$1 f=$2 want=$3 dev
	shift 3
	dev=$($LOSETUP -f --show "$@" $W/img) || { fail "$desc: losetup $*"; return; }
	is "$(cat /sys/block/${dev#/dev/}/$f)" "$want" "$desc"
	$LOSETUP -d $dev
}
opt "--direct-io=on" loop/dio 1 --direct-io=on
opt "-o 4096" loop/offset 4096 -o 4096
opt "--sizelimit 1MiB" size 2048 --sizelimit 1048576
opt "-b 4096" queue/logical_block_size 4096 -b 4096
opt "-r" ro 1 -r

# LOOP_CTL_GET_FREE past the initial count: nine attached, loop8 made
# (the first losetup that fails ends the loop: each retries EBUSY for ~13 s)
for i in 0 1 2 3 4 5 6 7 8; do truncate -s 1M $W/f$i; last=$($LOSETUP -f --show $W/f$i) || break; done
is "$last" /dev/loop8 "the ninth losetup -f made /dev/loop8"
is "$(ndev)" 9 "nine devices"
$LOSETUP -D

# an open of a missing /dev/loopN on major 7 makes it
[ -e /sys/block/loop20 ] && fail "loop20 exists before the open"
rm -f /dev/loop20; mknod /dev/loop20 b 7 20
if exec {fd}</dev/loop20; then
	pass "open of /dev/loop20 (7:20) succeeds"
	exec {fd}<&-
else
	fail "open of /dev/loop20"
fi
[ -e /sys/block/loop20/loopmq ] && pass "the open made loop20, a loopmq device" || fail "no loop20"
rm -f /dev/loop20

# losetup -l -J: the same shape and values as the stock driver's
$LOSETUP -f --show -o 512 --sizelimit 4194304 -r $W/img >/dev/null
json() { $LOSETUP -l -J /dev/loop0 | jq -S '.loopdevices[0]'; }
mq=$(json)
$LOSETUP -D
unload_all

# max_loop given: that many devices, and a hard limit for opens
replace max_loop=2 || stop_testing
is "$(ndev)" 2 "max_loop=2: two devices"
rm -f /dev/loop5; mknod /dev/loop5 b 7 5
if exec {fd}</dev/loop5 2>/dev/null; then
	fail "max_loop=2: opening /dev/loop5 succeeded"
	exec {fd}<&-
else
	pass "max_loop=2: /dev/loop5 cannot be opened"
fi
[ -e /sys/block/loop5 ] && fail "max_loop=2: the open made loop5" || pass "max_loop=2: no loop5 made"
rm -f /dev/loop5
unload_all

# docs/modprobe.d-replace-loop.conf makes every load of loop a load of
# loopmq in replace mode: modprobe loop, and an open of a block node on
# major 7 with nothing loaded (the kernel asks for block-major-7-N)
CONF=/etc/modprobe.d/loopmq-replace-loop.conf
if [ -f /docs/modprobe.d-replace-loop.conf ]; then
	mkdir -p /etc/modprobe.d
	cp /docs/modprobe.d-replace-loop.conf $CONF
	modprobe loop
	is "$(cat /sys/module/loopmq/parameters/replace_loop 2>/dev/null)" Y \
		"with the modprobe.d file, modprobe loop loads loopmq replace_loop=1"
	[ -e /sys/module/loop ] && fail "the stock loop driver got loaded" || pass "the stock loop driver stays out"
	unload_all
	rm -f /dev/loop3; mknod /dev/loop3 b 7 3
	if exec {fd}</dev/loop3; then
		exec {fd}<&-
		pass "with nothing loaded, an open of 7:3 succeeds"
	else
		fail "with nothing loaded, an open of 7:3 failed"
	fi
	[ -e /sys/block/loop3/loopmq ] && pass "and loopmq serves loop3 (block-major-7-3 alias)" ||
		fail "loop3 is not loopmq's (loop loaded: $([ -e /sys/module/loop ] && echo yes || echo no))"
	rm -f /dev/loop3 $CONF
	unload_all
else
	skip "modprobe.d-replace-loop.conf" "not in the guest"
fi

modprobe loop || { fail "modprobe loop for the comparison"; stop_testing; }
$LOSETUP -f --show -o 512 --sizelimit 4194304 -r $W/img >/dev/null
stock=$(json)
$LOSETUP -D
unload_all
umount /mnt/lmq-ext4
diag "stock: $(echo $stock)"
# both listings exist: two failed losetup calls would compare equal
[ -n "$mq" ] && [ "$mq" != null ] && pass "losetup -l -J lists loopmq's loop0" ||
	fail "losetup -l -J lists loopmq's loop0" "got '$mq'"
[ -n "$stock" ] && [ "$stock" != null ] && pass "losetup -l -J lists the stock driver's loop0" ||
	fail "losetup -l -J lists the stock driver's loop0" "got '$stock'"
is "$(jq -c 'keys' <<<"$mq")" "$(jq -c 'keys' <<<"$stock")" "losetup -l -J: the same fields as stock loop"
is "$(jq -c . <<<"$mq")" "$(jq -c . <<<"$stock")" \
	"losetup -l -J: the same values as stock loop"
done_testing

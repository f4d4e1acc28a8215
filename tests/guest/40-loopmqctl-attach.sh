#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 40-loopmqctl-attach: every loopmqctl setup option against the device state
# it must produce: sysfs (loop/*, ro, queue/logical_block_size, partitions),
# the status util-linux losetup reads, the size blockdev sees, and data
# written through the device read back from the file (and the reverse).
# Also -f/--show, -f alone, -c, live --direct-io/-b/--mode, -d in every
# device-name form, -D.  --direct-io=auto (loopmq only), at attach and
# live, on files on ext4: a sparse image (holes) and a preallocated one
# (unwritten extents, as lmq_backing's) get buffered I/O, reason sparse; a
# fully written one direct I/O, reason written; sysfs loopmq/direct_io
# reads auto and the tool's -l, -l -J and --stats -J show what sysfs
# loopmq/dio_auto says.  --direct-io=off at attach is off even under
# dio_default=auto; --direct-io=bogus is refused (exit 1, the names in the
# message) and changes nothing.  LMQ_DRIVER=loop (or lmq_driver=loop on
# the kernel command line) runs it against the stock loop driver through
# the tool's test-only LOOPMQCTL_PREFIX=loop.
DESCRIPTION="every loopmqctl setup option against the device state it must produce"
requires() {
	[ -n "$LOOPMQCTL" ] || skip_all "no loopmqctl in the guest"
}
. /tests/lib/guest.sh

W=/tmp/t40
mkdir -p $W
cleanup() {
	lmq_detach_all
	umount /mnt/t40 2>/dev/null
	rm -rf $W
}
trap cleanup EXIT
lmq_load || { fail "load $LMQ_MOD"; stop_testing; }
diag "driver $LMQ_MOD, tool $LOOPMQCTL, util-linux losetup ${LOSETUP:-missing}"

F=$W/a.img
truncate -s 16M $F

# dio_auto DEV KEY: one value of sysfs loopmq/dio_auto
dio_auto() {
	local k v
	while read -r k v; do
		[ "$k" = "$2" ] && { echo "$v"; return 0; }
	done </sys/block/${1##*/}/loopmq/dio_auto
}
# auto_is TAG DEV CHOSEN REASON SHARE: what --direct-io=auto made of DEV,
# in sysfs and in the tool's three views; SHARE "holes|unwritten N" (per
# mille of the range when it was mapped)
auto_is() {
	local tag=$1 d=$2 chosen=$3 why=$4 k=${5% *} n=${5#* } dio=0 js
	[ "$chosen" = on ] && dio=1
	is "$(sysv $d loopmq/direct_io)" auto "$tag: loopmq/direct_io reads auto"
	is "$(dio_auto $d chosen) $(dio_auto $d reason) $(dio_auto $d ${k}_permille)" "$chosen $why $n" \
		"$tag: the module chose $chosen ($why, $k $n per mille)"
	is "$(sysv $d loop/dio)" $dio "$tag: loop/dio $dio"
	is "$("$LOOPMQCTL" -l -n --raw -O DIO,DIRECT-IO,DIO-REASON $d)" "$dio auto:$chosen $why" \
		"$tag: -l shows DIO $dio, DIRECT-IO auto:$chosen, DIO-REASON $why"
	like "$("$LOOPMQCTL" -l $d | head -n 1)" ' MODE +DIRECT-IO +DIO-REASON$' "$tag: -l has them by default"
	js=$("$LOOPMQCTL" -l -J $d | jq -r '.loopdevices[0] | "\(.dio) \(.direct_io) \(.dio_chosen) \(.dio_reason)"')
	is "$js" "$([ $dio = 1 ] && echo true || echo false) auto $chosen $why" \
		"$tag: -l -J dio, direct_io, dio_chosen, dio_reason"
	js=$("$LOOPMQCTL" --stats -J $d | jq -r ".loopdevices[0] | \"\\(.direct_io) \\(.dio_chosen) \\(.dio_reason) \\(.dio_${k}_permille) \\(.dio_switches)\"")
	is "$js" "auto $chosen $why $n $(dio_auto $d switches)" \
		"$tag: --stats -J direct_io, dio_chosen, dio_reason, dio_${k}_permille, dio_switches"
}
# files on ext4 on the scratch disk (mounted on /mnt/t40 by the caller)
dio_auto_checks() {
	local S=/mnt/t40/sparse.img P=/mnt/t40/prealloc.img WR=/mnt/t40/written.img D
	truncate -s 8M $S
	fallocate -l 8M $P
	dd if=/dev/urandom of=$WR bs=1M count=8 conv=fsync status=none
	run "$LOOPMQCTL" -f --show --direct-io=auto $S
	D=$out
	is "$rc:$err" "0:" "attach --direct-io=auto, sparse image"
	auto_is "auto, sparse image" $D off sparse "holes 1000"
	"$LOOPMQCTL" -d $D
	run "$LOOPMQCTL" -f --show --direct-io=auto $P
	D=$out
	is "$rc:$err" "0:" "attach --direct-io=auto, preallocated image"
	auto_is "auto, preallocated image" $D off sparse "unwritten 1000"
	"$LOOPMQCTL" -d $D
	run "$LOOPMQCTL" -f --show --direct-io=auto $WR
	D=$out
	is "$rc:$err" "0:" "attach --direct-io=auto, fully written image"
	auto_is "auto, written image" $D on written "holes 0"
	"$LOOPMQCTL" -d $D
	run env LOOPMQCTL_LEGACY_ATTACH=1 "$LOOPMQCTL" -f --show --direct-io=auto $S
	D=$out
	is "$rc:$(sysv $D loopmq/direct_io):$(dio_auto $D reason)" "0:auto:sparse" "legacy attach --direct-io=auto"
	"$LOOPMQCTL" -d $D

	# on an attached device: off (the module's default), then auto, off, on
	D=$("$LOOPMQCTL" -f --show $WR)
	is "$("$LOOPMQCTL" -l -n -O DIRECT-IO,DIO-REASON $D | tr -s ' ')" "off:off set" "attached without --direct-io: off:off, reason set"
	run "$LOOPMQCTL" --direct-io=auto $D
	is "$rc:$out:$err" "0::" "live --direct-io=auto"
	auto_is "live auto, written image" $D on written "holes 0"
	check "live --direct-io=off after auto" "$LOOPMQCTL" --direct-io=off $D
	is "$(sysv $D loopmq/direct_io) $(sysv $D loop/dio) $("$LOOPMQCTL" -l -n -O DIRECT-IO,DIO-REASON $D | tr -s ' ')" \
		"off 0 off:off set" "live --direct-io=off: setting off, buffered, reason set"
	check "live --direct-io=on" "$LOOPMQCTL" --direct-io=on $D
	is "$(sysv $D loopmq/direct_io) $(sysv $D loop/dio) $("$LOOPMQCTL" -l -n -O DIRECT-IO $D)" \
		"on 1 on:on" "live --direct-io=on: setting on, direct"
	"$LOOPMQCTL" -d $D
	D=$("$LOOPMQCTL" -f --show $S)
	check "live --direct-io=auto, sparse image" "$LOOPMQCTL" --direct-io=auto $D
	auto_is "live auto, sparse image" $D off sparse "holes 1000"
	"$LOOPMQCTL" -d $D

	# under dio_default=auto an attach without --direct-io is auto, and
	# --direct-io=off is off
	lmq_unload
	if lmq_load dio_default=auto; then
		D=$("$LOOPMQCTL" -f --show $WR)
		is "$(sysv $D loopmq/direct_io) $(sysv $D loop/dio)" "auto 1" \
			"dio_default=auto, no --direct-io: auto, direct (control)"
		"$LOOPMQCTL" -d $D
		run "$LOOPMQCTL" -f --show --direct-io=off $WR
		D=$out
		is "$rc:$(sysv $D loopmq/direct_io):$(sysv $D loop/dio)" "0:off:0" \
			"dio_default=auto, --direct-io=off: off, buffered"
		"$LOOPMQCTL" -d $D
	else
		fail "load $LMQ_MOD dio_default=auto"
	fi
	lmq_unload
	lmq_load || { fail "reload $LMQ_MOD"; stop_testing; }
}

# --- -f --show FILE ----------------------------------------------------------
run "$LOOPMQCTL" -f --show $F
is "$rc" 0 "-f --show exits 0"
like "$out" "^/dev/$LMQ_NAME[0-9]+\$" "-f --show prints the device ($out)"
D=$out
is "$(sysv $D loop/backing_file)" "$F" "sysfs backing_file is the file"
is "$(sysv $D loop/offset)/$(sysv $D loop/sizelimit)" "0/0" "offset and sizelimit 0"
is "$(sysv $D ro)" 0 "read-write by default"
is "$(blockdev --getsize64 $D 2>/dev/null)" $((16 << 20)) "size is the file's"
if [ -n "$LOSETUP" ]; then
	run "$LOSETUP" -l -n -O BACK-FILE,RO,OFFSET "$D"
	like "$out" "^$F +0 +0\$" "util-linux losetup reads the same status ($out)"
else
	skip "util-linux losetup reads the same status" "no util-linux losetup"
fi

# data: device -> file, file -> device
head -c 1M /dev/urandom >$W/pat
dd if=$W/pat of=$D bs=64k seek=2 oflag=direct conv=fsync status=none
check "data written through the device is in the file at the same place" \
	cmp -s <(dd if=$F bs=64k skip=2 count=16 status=none) $W/pat
head -c 64k /dev/urandom >$W/pat2
dd if=$W/pat2 of=$F bs=64k seek=100 conv=notrunc,fsync status=none
check "data written to the file reads back through the device" \
	cmp -s <(dd if=$D bs=64k skip=100 count=1 iflag=direct status=none) $W/pat2

# --- device already bound: -f picks another one, adding it if needed --------
run "$LOOPMQCTL" -f
like "$out" "^/dev/$LMQ_NAME[0-9]+\$" "-f alone prints a device ($out)"
isnt "$out" "$D" "-f alone does not offer the bound device"
unbound "$out" "-f alone binds nothing"
run "$LOOPMQCTL" -f --show $F
D2=$out
isnt "$D2" "$D" "a second -f --show takes another device ($D2)"
is "$(sysv $D2 loop/backing_file)" "$F" "second device bound to the file too"

# --- -d in every name form -------------------------------------------------
n2=${D2#/dev/$LMQ_NAME}
check "-d N (bare index) detaches" "$LOOPMQCTL" -d "$n2"
unbound $D2 "device $D2 is unbound after -d $n2"
check "attach DEVICE FILE with the name $LMQ_NAME$n2" "$LOOPMQCTL" "$LMQ_NAME$n2" $F
is "$(sysv $D2 loop/backing_file)" "$F" "$LMQ_NAME$n2 names the same device"
check "-d $LMQ_NAME$n2 detaches" "$LOOPMQCTL" -d "$LMQ_NAME$n2"
ln -sf $D2 $W/link
check "attach through a symlink to the node" "$LOOPMQCTL" $W/link $F
is "$(sysv $D2 loop/backing_file)" "$F" "the symlink resolved to $D2"
check "-d through the symlink" "$LOOPMQCTL" -d $W/link
unbound $D2 "unbound after -d symlink"
check "-d $D" "$LOOPMQCTL" -d $D
unbound $D "$D unbound after -d"
is "$(nbound)" 0 "no device left bound"

# --- -o / --sizelimit with suffixes --------------------------------------------
run "$LOOPMQCTL" -f --show -o 1MiB --sizelimit 4M $F
D=$out
is "$rc" 0 "attach -o 1MiB --sizelimit 4M"
is "$(sysv $D loop/offset)" 1048576 "sysfs offset 1 MiB"
is "$(sysv $D loop/sizelimit)" 4194304 "sysfs sizelimit 4 MiB"
is "$(blockdev --getsize64 $D)" 4194304 "device size is the size limit"
head -c 256k /dev/urandom >$W/pat
dd if=$W/pat of=$D bs=64k oflag=direct conv=fsync status=none
check "device sector 0 is file byte 1 MiB" \
	cmp -s <(dd if=$F bs=64k skip=16 count=4 status=none) $W/pat
if [ -n "$LOSETUP" ]; then
	run "$LOSETUP" -l -n -O OFFSET,SIZELIMIT "$D"
	like "$out" "^ *1048576 +4194304\$" "losetup sees offset and sizelimit ($out)"
fi
"$LOOPMQCTL" -d $D
run "$LOOPMQCTL" -f --show -o 2KB --sizelimit 1000 $F
D=$out
is "$(sysv $D loop/offset)/$(sysv $D loop/sizelimit)" "2000/1000" "KB means 1000 (offset 2KB, sizelimit 1000)"
"$LOOPMQCTL" -d $D

# --- -r ----------------------------------------------------------------------
sum_before=$(sha256sum <$F)
run "$LOOPMQCTL" -f --show -r $F
D=$out
is "$rc" 0 "attach -r"
is "$(sysv $D ro)" 1 "sysfs ro is 1"
is "$(blockdev --getro $D)" 1 "blockdev --getro is 1"
check_fail "writing to the read-only device fails" \
	dd if=/dev/zero of=$D bs=4k count=1 oflag=direct status=none
is "$(sha256sum <$F)" "$sum_before" "the file did not change"
"$LOOPMQCTL" -d $D
chmod 0444 $F
run "$LOOPMQCTL" -f --show -r $F
is "$rc" 0 "-r attaches a file with mode 0444"
"$LOOPMQCTL" -d "$out"
chmod 0644 $F

# --- -b -------------------------------------------------------------------------
for bs in 4096 2048 1024 512; do
	run "$LOOPMQCTL" -f --show -b $bs $F
	D=$out
	is "$(sysv $D queue/logical_block_size)" $bs "-b $bs: logical_block_size"
	is "$(blockdev --getss $D)" $bs "-b $bs: blockdev --getss"
	"$LOOPMQCTL" -d $D
done
run "$LOOPMQCTL" -f --show --sector-size 4KiB $F
is "$(sysv $out queue/logical_block_size)" 4096 "--sector-size 4KiB"
D=$out
check "live -b 512 on a bound device" "$LOOPMQCTL" -b 512 $D
is "$(sysv $D queue/logical_block_size)" 512 "live -b 512 took effect"
"$LOOPMQCTL" -d $D

# --- -P ----------------------------------------------------------------------
truncate -s 16M $W/p.img
# an MBR by hand (no sfdisk here): p1 at 2048 and p2 at 10240, 8192 sectors
le32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $((($1 >> 8) & 255)) \
	$((($1 >> 16) & 255)) $((($1 >> 24) & 255)); }
mbr_entry() { printf '\x00\x00\x00\x00\x83\x00\x00\x00'; printf "$(le32 $1)$(le32 $2)"; }
{ mbr_entry 2048 8192; mbr_entry 10240 8192; } |
	dd of=$W/p.img bs=1 seek=446 conv=notrunc status=none
printf '\x55\xaa' | dd of=$W/p.img bs=1 seek=510 conv=notrunc status=none
run "$LOOPMQCTL" -f --show -P $W/p.img
D=$out
is "$(sysv $D loop/partscan)" 1 "-P: sysfs partscan 1"
for _ in $(seq 20); do [ -b ${D}p2 ] && break; sleep 0.1; done
n=${D##*/}
check "-P: partition ${n}p1 in sysfs" test -e /sys/block/$n/${n}p1
check "-P: partition ${n}p2 node" test -b ${D}p2
is "$(blockdev --getsize64 ${D}p1 2>/dev/null)" $((8192 * 512)) "-P: p1 has the table's size"
"$LOOPMQCTL" -d $D
run "$LOOPMQCTL" -f --show $W/p.img
is "$(sysv $out loop/partscan)" 0 "without -P: partscan 0"
check_fail "without -P: no partition" test -e /sys/block/${out##*/}/${out##*/}p1
"$LOOPMQCTL" -d $out

# --- --direct-io (file on ext4 on the scratch disk: O_DIRECT works there) -----
mkdir -p /mnt/t40
if mkfs.ext4 -q -F /dev/vda >/dev/null 2>&1 && mount /dev/vda /mnt/t40; then
	G=/mnt/t40/d.img
	truncate -s 8M $G
	run "$LOOPMQCTL" -f --show --direct-io $G
	D=$out
	is "$rc" 0 "attach --direct-io"
	is "$(sysv $D loop/dio)" 1 "--direct-io: sysfs dio 1"
	[ -n "$LOSETUP" ] && is "$("$LOSETUP" -l -n -O DIO $D | tr -d ' ')" 1 "losetup sees DIO 1"
	head -c 128k /dev/urandom >$W/pat
	dd if=$W/pat of=$D bs=64k oflag=direct conv=fsync status=none
	check "dio: data reaches the file" cmp -s <(head -c 128k $G) $W/pat
	check "live --direct-io=off" "$LOOPMQCTL" --direct-io=off $D
	is "$(sysv $D loop/dio)" 0 "--direct-io=off took effect"
	check "live --direct-io=on" "$LOOPMQCTL" --direct-io=on $D
	is "$(sysv $D loop/dio)" 1 "--direct-io=on took effect"
	"$LOOPMQCTL" -d $D
	run "$LOOPMQCTL" -f --show --direct-io=off $G
	is "$(sysv $out loop/dio)" 0 "--direct-io=off at attach: dio 0"
	"$LOOPMQCTL" -d $out
	if lmq_is_mq; then
		dio_auto_checks
	else
		skip "--direct-io=auto checks" "the stock loop driver has no direct I/O auto"
	fi
	umount /mnt/t40
else
	skip "--direct-io checks" "cannot make ext4 on /dev/vda"
fi

# --- --direct-io=bogus: refused before anything is touched -------------------
want="loopmqctl: invalid --direct-io argument 'bogus' (expected off, on or auto)"
before=$(snapshot)
run "$LOOPMQCTL" -f --show --direct-io=bogus $F
is "$rc|$out|$err" "1||$want" "attach --direct-io=bogus: exit 1, the message, nothing printed"
is "$(snapshot)" "$before" "attach --direct-io=bogus: nothing bound"
D=$("$LOOPMQCTL" -f --show $F)
before=$(snapshot; sysv $D loop/dio; sysv $D loopmq/direct_io)
run "$LOOPMQCTL" --direct-io=bogus $D
is "$rc|$out|$err" "1||$want" "live --direct-io=bogus: exit 1, the message"
is "$(snapshot; sysv $D loop/dio; sysv $D loopmq/direct_io)" "$before" "live --direct-io=bogus: the device did not change"
"$LOOPMQCTL" -d $D

# --- -c ------------------------------------------------------------------------
run "$LOOPMQCTL" -f --show $F
D=$out
truncate -s 24M $F
is "$(blockdev --getsize64 $D)" $((16 << 20)) "size unchanged before -c"
check "-c" "$LOOPMQCTL" -c $D
is "$(blockdev --getsize64 $D)" $((24 << 20)) "-c: the device grew with the file"
"$LOOPMQCTL" -d $D

# --- --mode at attach and live -----------------------------------------------
if lmq_is_mq; then
	for m in direct kthread aio auto; do
		run "$LOOPMQCTL" -f --show --mode $m $F
		D=$out
		is "$rc" 0 "attach --mode $m"
		is "$(sysv $D loopmq/mode)" $m "--mode $m: sysfs mode"
		is "$("$LOOPMQCTL" -l -n -O MODE $D)" $m "--mode $m: the tool reads it back"
		"$LOOPMQCTL" -d $D
	done
	run "$LOOPMQCTL" -f --show --mode kthread $F
	D=$out
	for m in aio direct auto kthread; do
		check "live --mode $m" "$LOOPMQCTL" --mode $m $D
		is "$(sysv $D loopmq/mode)" $m "live --mode $m took effect"
	done
	"$LOOPMQCTL" -d $D
else
	skip "--mode checks" "stock loop driver has no modes"
fi

# --- the pre-LOOP_CONFIGURE path (LOOP_SET_FD + SET_STATUS64 + ...) -------------
# the tool's test-only LOOPMQCTL_LEGACY_ATTACH=1 takes it on purpose
run env LOOPMQCTL_LEGACY_ATTACH=1 "$LOOPMQCTL" -f --show -o 1M --sizelimit 4M -b 4096 -r -P $F
D=$out
is "$rc" 0 "legacy attach -o 1M --sizelimit 4M -b 4096 -r -P"
is "$(sysv $D loop/offset)/$(sysv $D loop/sizelimit)" "1048576/4194304" "legacy: offset and sizelimit"
is "$(sysv $D queue/logical_block_size)" 4096 "legacy: sector size 4096"
is "$(sysv $D ro)/$(sysv $D loop/partscan)" "1/1" "legacy: read-only, partscan"
check "legacy: device byte 0 is file byte 1 MiB" \
	cmp -s <(dd if=$D bs=64k count=4 iflag=direct status=none) <(dd if=$F bs=64k skip=16 count=4 status=none)
"$LOOPMQCTL" -d $D
if lmq_is_mq; then
	run env LOOPMQCTL_LEGACY_ATTACH=1 "$LOOPMQCTL" -f --show --mode kthread $F
	is "$rc:$(sysv $out loopmq/mode)" "0:kthread" "legacy attach --mode kthread"
	"$LOOPMQCTL" -d $out
fi

# --- -D --------------------------------------------------------------------------
"$LOOPMQCTL" -f $F && "$LOOPMQCTL" -f -o 4096 $F && "$LOOPMQCTL" -f -r $F
is "$("$LOOPMQCTL" -a | wc -l)" 3 "three devices bound"
check "-D" "$LOOPMQCTL" -D
is "$("$LOOPMQCTL" -a | wc -l)" 0 "-D detached them all"
is "$(nbound)" 0 "sysfs agrees: nothing bound"

done_testing

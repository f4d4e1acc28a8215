#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# 55-dm-faults: the backing file lives on ext4 on a device-mapper device.
#  1. dm-error over 1 MiB of the backing file: in every mode, direct-I/O
#     reads and writes that hit it fail with EIO, the rest of the device
#     reads back the right data; with buffered backing I/O a read of the bad
#     region fails with EIO and a write there makes the next fsync fail;
#     such a write-back failing at a switch to direct I/O fails no later
#     direct request elsewhere, and loopmq's next fsync reports it, also
#     with the dm device itself as the backing (FLUSH otherwise remapped).
#  2. dm-flakey (1 s up / 1 s down) under I/O: some I/O fails, some works,
#     nothing hangs (each I/O has a time limit).
#  3. Back to a healthy table: the device works again, detaches, unloads.
# ext4 without a journal, so write errors do not abort the filesystem.
DESCRIPTION="backing on dm-error and dm-flakey: EIO where it fails, the rest works"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -b /dev/vda ] || skip_all "no /dev/vda"
	modprobe dm-mod 2>/dev/null; modprobe dm-flakey 2>/dev/null
	command -v dmsetup >/dev/null && [ -c /dev/mapper/control ] ||
		skip_all "no device-mapper"
}
. /tests/lib/guest.sh

W=/tmp/t55 M=/mnt/t55 DM=t55
mkdir -p $W $M
SECT=1048576			# 512 MiB of /dev/vda
settable() {	# settable FILE: replace the live table of $DM
	dms suspend --nolockfs $DM && dms load $DM "$1" && dms resume $DM
}
echo "0 $SECT linear /dev/vda 0" >$W/linear
dms create $DM $W/linear || { fail "dmsetup create"; stop_testing; }
MD=/dev/mapper/$DM
[ -b $MD ] || MD=/dev/$(basename "$(readlink -f /sys/block/dm-0)")
mkfs.ext4 -q -F -O ^has_journal $MD >/dev/null && mount -o errors=continue $MD $M ||
	{ fail "ext4 on $MD"; dms remove $DM; stop_testing; }
head -c 32M /dev/urandom >$W/data
dd if=$W/data of=$M/img bs=1M conv=fsync status=none
sync
# physical location of file bytes 8 MiB .. 9 MiB (4 KiB blocks 2048..2303)
read -r lstart pstart len < <(filefrag -v $M/img | awk -F'[: .]+' '
	/^ *[0-9]+:/ { l0 = $3; l1 = $4; p0 = $5; if (l0 <= 2048 && l1 >= 2303) print l0, p0, l1 - l0 + 1 }' | head -n1)
if [ -z "$pstart" ]; then
	fail "no single extent covers 8-9 MiB of the backing file"; filefrag -v $M/img | sed 's/^/#   /'
	umount $M; dms remove $DM; stop_testing
fi
BAD=$(( (pstart + 2048 - lstart) * 8 ))	# first bad sector on $MD
diag "file extent: logical $lstart physical $pstart len $len; bad sectors $BAD..$((BAD + 2047))"
cat >$W/bad <<T
0 $BAD linear /dev/vda 0
$BAD 2048 error
$((BAD + 2048)) $((SECT - BAD - 2048)) linear /dev/vda $((BAD + 2048))
T
echo "0 $SECT flakey /dev/vda 0 1 1" >$W/flakey

lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
D=$(lmq_dev 0)
r() { word1 "$(timeout 60 lmq-ioctl "$@" 2>&1)"; }
sha() { sha256sum | cut -d' ' -f1; }
# failed_switch TAG OFF [ROFF]: a buffered write at OFF (in the bad
# region), then LOOP_SET_DIRECT_IO 1, whose write-back of it fails (the
# periodic write-back is off meanwhile: the switch's is the one); a direct
# read at ROFF then works; loopmq leaves the failure to its next fsync
# (the stock driver's switch takes it), and the one after is clean
failed_switch() {
	writeback_off
	is "$(r pwrite $D $2 4096 direct)" OK "$1: a write into the bad region"
	is "$(r set-dio $D 1)" OK "$1: switch to direct I/O, its write-back failing"
	[ -z "${3:-}" ] ||
		is "$(r pread $D $3 4096 direct)" OK "$1: a direct read elsewhere works after it"
	if lmq_is_mq; then
		is "$(r fsync $D)" EIO "$1: the next fsync reports the failed write-back"
	fi
	is "$(r fsync $D)" OK "$1: then fsync is clean"
	writeback_on
}
WANT0=$(head -c 1M $W/data | sha)
is "$(r configure $D $M/img 16 0)" OK "attach with direct I/O to the file on $DM"
settable $W/bad || fail "load the dm-error table"
for mode in $LMQ_MODES; do
	[ "$mode" = stock ] || lmq_mode 0 $mode || fail "$mode: set mode"
	echo 3 >/proc/sys/vm/drop_caches
	is "$(r pread $D $((8 << 20)) 4096 direct)" EIO "$mode/dio: read inside the bad region"
	is "$(r pread $D $(((9 << 20) - 4096)) 4096 direct)" EIO "$mode/dio: read of its last block"
	is "$(r pwrite $D $(((8 << 20) + 65536)) 8192 direct)" EIO "$mode/dio: write inside the bad region"
	is "$(dd if=$D bs=64k count=16 iflag=direct status=none | sha)" "$WANT0" "$mode/dio: first MiB reads back"
	is "$(r pread $D $((9 << 20)) 4096 direct)" OK "$mode/dio: read right after the bad region"
	is "$(r pwrite $D $((20 << 20)) 65536 direct)" OK "$mode/dio: write elsewhere"
	if lmq_is_mq; then
		e=$(lmq_stat 0 errors)
		[ "${e:-0}" -gt 0 ] && pass "$mode: stats errors=$e" || fail "$mode: stats errors='$e'"
	fi
done
# buffered backing I/O
is "$(r set-dio $D 0)" OK "switch to buffered backing I/O"
for mode in $LMQ_MODES; do
	[ "$mode" = stock ] || lmq_mode 0 $mode || fail "$mode: set mode"
	echo 3 >/proc/sys/vm/drop_caches
	is "$(r pread $D $(((8 << 20) + 4096)) 4096 direct)" EIO "$mode/buffered: read inside the bad region"
	is "$(r pread $D $((12 << 20)) 4096 direct)" OK "$mode/buffered: read elsewhere"
	w=$(r pwrite $D $(((8 << 20) + 131072)) 4096 direct)
	f=$(r fsync $D)
	is "$w/$f" "OK/EIO" "$mode/buffered: write into the bad region, then fsync fails"
	is "$(r fsync $D)" OK "$mode/buffered: the next fsync is clean"
done
failed_switch image $(((8 << 20) + 131072)) $((12 << 20))

# dm-flakey under I/O: nothing may hang
is "$(r set-dio $D 1)" OK "back to direct I/O"
settable $W/flakey || fail "load the dm-flakey table"
for mode in $LMQ_MODES; do
	[ "$mode" = stock ] || lmq_mode 0 $mode || fail "$mode: set mode"
	# 5 s, and on a slow guest on until both outcomes were seen (a
	# handful of operations can all fall into "up" windows), at most 60 s
	ok=0 eio=0 other=0 t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 5 ] ||
	      { [ $((ok * eio)) = 0 ] && [ $((SECONDS - t0)) -lt 60 ]; }; do
		off=$(( (RANDOM % 2048) * 4096 ))
		if [ $((RANDOM % 2)) = 0 ]; then x=$(r pwrite $D $off 4096 direct); else x=$(r pread $D $off 4096 direct); fi
		case $x in OK) ok=$((ok + 1));; EIO) eio=$((eio + 1));; *) other=$((other + 1)); diag "flakey: got '$x'";; esac
	done
	diag "$mode/flakey: $ok ok, $eio EIO, $other other"
	[ $ok -gt 0 ] && [ $eio -gt 0 ] && [ $other = 0 ] && pass "$mode/flakey: some I/O works, some fails with EIO, none hangs" ||
		fail "$mode/flakey: ok=$ok eio=$eio other=$other"
	timeout 120 fio --name=flaky --filename=$D --rw=randrw --bs=4k --ioengine=libaio \
		--iodepth=16 --direct=1 --size=16M --time_based --runtime=3 \
		--continue_on_error=all --output-format=terse >$W/fio.out 2>&1
	rc=$?
	[ $rc != 124 ] && pass "$mode/flakey: fio QD16 ends in time (exit $rc)" || fail "$mode/flakey: fio hung"
done

# healthy again
settable $W/linear || fail "load the linear table"
for mode in $LMQ_MODES; do
	[ "$mode" = stock ] || lmq_mode 0 $mode || fail "$mode: set mode"
	head -c 1M /dev/urandom >$W/new
	dd if=$W/new of=$D bs=64k seek=$((24 * 16)) oflag=direct conv=fsync status=none
	is "$(dd if=$D bs=64k skip=$((24 * 16)) count=16 iflag=direct status=none | sha)" \
		"$(sha <$W/new)" "$mode: device works again after the faults"
done
is "$(r clr-fd $D)" OK "detach"
lmq_wait_gone $(lmq_sys 0)/loop/backing_file 30 && pass "unbound" || fail "still bound"
umount $M || fail "umount"
# the dm device itself as the backing, buffered: the same failed write-back
# at the switch, and then a FLUSH, which on a block device with direct I/O
# is a bio to the device (the remap path), must still report it
is "$(r configure $D $MD 0 0)" OK "attach to $MD, buffered"
settable $W/bad || fail "load the dm-error table"
failed_switch $MD $(((BAD + 8) * 512))
settable $W/linear || fail "load the linear table"
is "$(r clr-fd $D)" OK "detach from $MD"
lmq_wait_gone $(lmq_sys 0)/loop/backing_file 30 && pass "unbound from $MD" || fail "still bound to $MD"
dms remove $DM || fail "dmsetup remove"
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

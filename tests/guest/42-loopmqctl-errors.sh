#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 42-loopmqctl-errors: bad input, one check each: the message names the
# object and the cause, the exit status is non-zero, and nothing changed
# (no device bound, added or altered).  Missing file, directory, unreadable
# file (as an unmapped user in a user namespace: root reads everything),
# file on a read-only mount without -r, file not writable for the user,
# unknown device, not-our device, busy device, sector size 1000, offset
# past the end, negative/overflowing/junk numbers, unknown mode, unknown
# --direct-io value, unknown column, conflicting options, options of
# another action, --direct-io=auto on an unbound device, a failing step
# after the attach (--mode, --direct-io=auto on the stock driver: device
# detached again) and a failing live --direct-io=auto there, module not
# loaded.
DESCRIPTION="loopmqctl's bad input: message, exit status, nothing changed"
requires() {
	[ -n "$LOOPMQCTL" ] || skip_all "no loopmqctl in the guest"
}
. /tests/lib/guest.sh

W=/tmp/t42
mkdir -p $W
cleanup() {
	lmq_detach_all
	umount $W/ro 2>/dev/null
	rm -rf $W
}
trap cleanup EXIT
lmq_load || { fail "load $LMQ_MOD"; stop_testing; }

F=$W/a.img
truncate -s 8M $F
mkdir -p $W/dir
# state: our devices (bound or not, backing file, offset, ro, mode, block
# size) and the number of stock loop devices
state() { snapshot; echo /sys/block/loop[0-9]*; }

# bad DESC 'ERE for stderr' CMD...: fails, says so, changes nothing
bad() {
	local d=$1 re=$2 before after
	shift 2
	before=$(state)
	run "$@"
	after=$(state)
	if [ $rc -eq 0 ]; then
		fail "$d" "'$*' succeeded"
	elif [[ ! $err =~ $re ]]; then
		fail "$d" "message '$err' does not match /$re/"
	elif [ -n "$out" ]; then
		fail "$d" "printed '$out' on stdout"
	elif [ "$before" != "$after" ]; then
		fail "$d" "state changed: '$before' -> '$after'"
	else
		pass "$d (exit $rc: $err)"
	fi
}

# a bound device for the busy / live cases
B=$("$LOOPMQCTL" -f --show $F) || { fail "attach $F"; stop_testing; }
Bn=${B#/dev/$LMQ_NAME}

bad "missing file" "^loopmqctl: $W/nope: cannot open backing file: No such file or directory\$" \
	"$LOOPMQCTL" -f $W/nope
bad "directory" "^loopmqctl: $W/dir: .*Is a directory\$" "$LOOPMQCTL" -f $W/dir
bad "character device as backing file" "^loopmqctl: /dev/null: .*not a regular file or block device" \
	"$LOOPMQCTL" -f /dev/null
# Root bypasses permissions, but an unmapped user in a new user namespace
# keeps uid 0 without any capability over files of other (unmapped) owners.
U=$W/u.img
truncate -s 4M $U
chown 12345:12345 $U
chmod 0600 $U
if unshare -U true 2>/dev/null; then
	bad "unreadable file (unmapped user)" \
		"^loopmqctl: $U: cannot open backing file for reading: Permission denied\$" \
		unshare -U "$LOOPMQCTL" -f $U
	chmod 0644 $U
	bad "file not writable for the user, without -r" \
		"^loopmqctl: $U: cannot open backing file read-write: Permission denied \(use -r/--read-only to attach it read-only\)\$" \
		unshare -U "$LOOPMQCTL" -f $U
else
	skip "unreadable / unwritable file as an unmapped user" "no user namespaces in this kernel"
	skip "file not writable for the user" "no user namespaces in this kernel"
fi
# a read-only mount: root cannot write there either
mkdir -p $W/ro
if mount -t tmpfs -o size=16m tmpfs $W/ro && truncate -s 4M $W/ro/r.img &&
	mount -o remount,ro $W/ro; then
	bad "file on a read-only mount without -r" \
		"^loopmqctl: $W/ro/r.img: cannot open backing file read-write: Read-only file system \(use -r/--read-only to attach it read-only\)\$" \
		"$LOOPMQCTL" -f $W/ro/r.img
	run "$LOOPMQCTL" -f --show -r $W/ro/r.img
	is "$rc" 0 "the same file with -r attaches (control)"
	[ $rc -eq 0 ] && { is "$(sysv $out ro)" 1 "and is read-only"; "$LOOPMQCTL" -d $out; }
else
	skip "file on a read-only mount" "cannot make a read-only tmpfs"
fi
bad "unknown device" "^loopmqctl: /dev/${LMQ_NAME}999: cannot open device: No such file or directory\$" \
	"$LOOPMQCTL" /dev/${LMQ_NAME}999 $F
bad "unknown device by index" "^loopmqctl: /dev/${LMQ_NAME}999: cannot open device: No such file or directory\$" \
	"$LOOPMQCTL" -d 999
bad "a block device that is not ours" "^loopmqctl: /dev/vda: not a $LMQ_NAME device" "$LOOPMQCTL" -d /dev/vda
bad "a name that is not ours" "^loopmqctl: sda1: not a $LMQ_NAME device" "$LOOPMQCTL" sda1 $F
bad "busy device (already bound)" \
	"^loopmqctl: $B: attach failed \(bound to $F\): Device or resource busy\$" "$LOOPMQCTL" $B $F
for s in 1000 0 256 8192 -512; do
	bad "sector size $s" "^loopmqctl: invalid sector size '$s'" "$LOOPMQCTL" -f -b $s $F
done
bad "live sector size 1000" "^loopmqctl: invalid sector size '1000'" "$LOOPMQCTL" -b 1000 $B
bad "offset past the end of the file" \
	"^loopmqctl: $F: offset 9437184 is past the end of the file \(size 8388608\)\$" "$LOOPMQCTL" -f -o 9M $F
bad "offset equal to the file size" "^loopmqctl: $F: offset 8388608 is past the end" "$LOOPMQCTL" -f -o 8M $F
bad "negative offset" "^loopmqctl: invalid offset '-1': not a non-negative number\$" "$LOOPMQCTL" -f -o -1 $F
bad "negative sizelimit" "^loopmqctl: invalid sizelimit '-4096'" "$LOOPMQCTL" -f --sizelimit -4096 $F
bad "overflowing offset" "^loopmqctl: invalid offset '18446744073709551616': Numerical result out of range\$" \
	"$LOOPMQCTL" -f -o 18446744073709551616 $F
bad "overflowing suffix" "^loopmqctl: invalid sizelimit '16E': Numerical result out of range\$" \
	"$LOOPMQCTL" -f --sizelimit 16E $F
bad "junk after a number" "^loopmqctl: invalid offset '12abc'" "$LOOPMQCTL" -f -o 12abc $F
bad "empty number" "^loopmqctl: invalid offset ''" "$LOOPMQCTL" -f -o '' $F
bad "unknown mode at attach" "^loopmqctl: unknown mode 'fast' \(expected direct, kthread, aio or auto\)\$" \
	"$LOOPMQCTL" -f --mode fast $F
bad "unknown mode live" "^loopmqctl: unknown mode 'AIO'" "$LOOPMQCTL" --mode AIO $B
bad "unknown --direct-io value" "^loopmqctl: invalid --direct-io argument 'yes' \(expected off, on or auto\)\$" \
	"$LOOPMQCTL" -f --direct-io=yes $F
bad "unknown --direct-io value live" "^loopmqctl: invalid --direct-io argument 'bogus' \(expected off, on or auto\)\$" \
	"$LOOPMQCTL" --direct-io=bogus $B
bad "unknown column" "^loopmqctl: unknown column: FOO\$" "$LOOPMQCTL" -l -O NAME,FOO
bad "empty column list" "^loopmqctl: no columns" "$LOOPMQCTL" -l -O ,
bad "conflicting actions -d -f" "^loopmqctl: options --find and --detach are mutually exclusive" \
	"$LOOPMQCTL" -f -d $B
bad "conflicting actions -a -j" "^loopmqctl: options --all and --associated are mutually exclusive" \
	"$LOOPMQCTL" -a -j $F
bad "conflicting -D -c" "^loopmqctl: options --detach-all and --set-capacity are mutually exclusive" \
	"$LOOPMQCTL" -D -c $B
bad "conflicting --json --raw" "^loopmqctl: options --json and --raw are mutually exclusive" \
	"$LOOPMQCTL" -l -J --raw
bad "--output with --output-all" "mutually exclusive" "$LOOPMQCTL" -O NAME --output-all
bad "--offset with -d" "^loopmqctl: option --offset is only allowed when attaching" "$LOOPMQCTL" -o 0 -d $B
bad "--read-only on a bound device" "^loopmqctl: option --read-only is only allowed when attaching" \
	"$LOOPMQCTL" -r $B
bad "--json with a setup" "^loopmqctl: option --json is only allowed when listing" "$LOOPMQCTL" -J -f $F
bad "--show without a setup" "^loopmqctl: option --show is only allowed when attaching" "$LOOPMQCTL" --show -a
bad "--mode with -d" "^loopmqctl: option --mode is only allowed" "$LOOPMQCTL" --mode aio -d $B
bad "-d takes the next word as its device, like losetup" "^loopmqctl: -f: not a $LMQ_NAME device" "$LOOPMQCTL" -d -f
bad "-f with a device and a file" "^loopmqctl: option --find takes at most one file" "$LOOPMQCTL" -f $B $F
bad "-D with a device" "^loopmqctl: option --detach-all takes no device" "$LOOPMQCTL" -D $B
bad "-d without a device" "option requires an argument -- 'd'" "$LOOPMQCTL" -d
bad "-c without a device" "option requires an argument -- 'c'" "$LOOPMQCTL" -c
bad "-c with two devices" "^loopmqctl: option --set-capacity needs exactly one device" "$LOOPMQCTL" -c $B $B
bad "too many arguments" "^loopmqctl: too many arguments" "$LOOPMQCTL" $B $F $F
bad "unknown option" "unrecognized option '--frobnicate'" "$LOOPMQCTL" --frobnicate
bad "show an unbound device" "^loopmqctl: /dev/$LMQ_NAME[0-9]+: .*No such device or address" \
	"$LOOPMQCTL" "$("$LOOPMQCTL" -f)"
bad "detach an unbound device" "^loopmqctl: /dev/$LMQ_NAME[0-9]+: detach failed: No such device or address\$" \
	"$LOOPMQCTL" -d "$("$LOOPMQCTL" -f)"
if lmq_is_mq; then
	bad "--direct-io=auto on an unbound device" \
		"^loopmqctl: /dev/$LMQ_NAME[0-9]+: set direct-io auto failed: no file is attached to it: No such device or address\$" \
		"$LOOPMQCTL" --direct-io=auto "$("$LOOPMQCTL" -f)"
fi
is "$(sysv $B loop/backing_file)" "$F" "the bound device is still bound to its file"

# a step after the attach fails: the device must be detached again.  The
# stock driver has no LOOPMQ_SET_MODE, so --mode fails there after attach.
if [ "$LMQ_DRIVER" = replace ]; then
	skip "stock loop + --mode" "replace mode: the stock driver cannot load"
else
	modprobe loop
	for _ in $(seq 50); do [ -c /dev/loop-control ] && break; sleep 0.1; done
	before=$(for d in /sys/block/loop[0-9]*; do [ -e $d/loop/backing_file ] && echo $d; done)
	run env LOOPMQCTL_PREFIX=loop "$LOOPMQCTL" -f --mode aio $F
	after=$(for d in /sys/block/loop[0-9]*; do [ -e $d/loop/backing_file ] && echo $d; done)
	is "$rc" 1 "stock loop + --mode: exit 1"
	like "$err" "^loopmqctl: /dev/loop[0-9]+: set mode failed \(device detached again\): " \
		"stock loop + --mode: says which step failed ($err)"
	is "$after" "$before" "stock loop + --mode: no device left bound"
	# the stock driver has no LOOPMQ_SET_DIO either (EINVAL, as loopmq
	# before it): the setting fails after the attach, and live
	run env LOOPMQCTL_PREFIX=loop "$LOOPMQCTL" -f --direct-io=auto $F
	after=$(for d in /sys/block/loop[0-9]*; do [ -e $d/loop/backing_file ] && echo $d; done)
	is "$rc:$out" "1:" "stock loop + --direct-io=auto: exit 1"
	like "$err" "^loopmqctl: /dev/loop[0-9]+: set direct-io auto failed: the driver has no direct I/O auto \(LOOPMQ_SET_DIO\): an older loopmq module or not loopmq \(device detached again\): (Invalid argument|Inappropriate ioctl for device)\$" \
		"stock loop + --direct-io=auto: names the device and the cause ($err)"
	is "$after" "$before" "stock loop + --direct-io=auto: no device left bound"
	L=$(LOOPMQCTL_PREFIX=loop "$LOOPMQCTL" -f --show $F)
	run env LOOPMQCTL_PREFIX=loop "$LOOPMQCTL" --direct-io=auto $L
	like "$rc:$err" "^1:loopmqctl: $L: set direct-io auto failed: the driver has no direct I/O auto \(LOOPMQ_SET_DIO\): an older loopmq module or not loopmq: (Invalid argument|Inappropriate ioctl for device)\$" \
		"stock loop, live --direct-io=auto: exit 1, names the device and the cause"
	is "$(sysv $L loop/backing_file)" "$F" "stock loop, live --direct-io=auto: still bound"
	LOOPMQCTL_PREFIX=loop "$LOOPMQCTL" -d $L
fi

# module not loaded
lmq_detach_all
if modprobe -r $LMQ_MOD 2>/dev/null && [ ! -e /dev/$LMQ_NAME-control ]; then
	# without the module, loopmqctl cannot tell replace mode: loopmq's names
	nm=$LMQ_NAME
	[ "$LMQ_DRIVER" = replace ] && nm=loopmq
	hint="\(is the $nm module loaded\? try 'modprobe $nm'\)\$"
	bad "module not loaded: -f FILE" "^loopmqctl: /dev/$nm-control: cannot open control device: No such file or directory $hint" \
		"$LOOPMQCTL" -f $F
	bad "module not loaded: -f" "^loopmqctl: /dev/$nm-control: .*$hint" "$LOOPMQCTL" -f
	bad "module not loaded: -d" "^loopmqctl: /dev/${LMQ_NAME}0: cannot open device: No such file or directory $hint" \
		"$LOOPMQCTL" -d /dev/${LMQ_NAME}0
	run "$LOOPMQCTL"
	is "$rc:$out" "0:" "module not loaded: listing prints nothing, exit 0"
else
	skip "module not loaded" "cannot unload $LMQ_MOD"
fi

done_testing

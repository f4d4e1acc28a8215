#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 58-sysfs-garbage: garbage written to every writable loopmq sysfs attribute
# (/sys/block/loopmqN/loopmq/*, /sys/block/loopmqN/loop/*, and the writable
# module parameters) of a bound device under a verifying fio and of an
# unbound device.  Afterwards every attribute reads back a valid value,
# bad mode words were refused (EINVAL) without changing the mode, fio
# verified, both devices still work and the module unloads.
# timeout: 300
DESCRIPTION="garbage written to every writable sysfs attribute and module parameter"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	lmq_is_mq || skip_all "loopmq-only attributes"
}
. /tests/lib/guest.sh

W=/tmp/t58
mkdir -p $W
lmq_load 2 || { fail "load $LMQ_MOD"; stop_testing; }
D0=$(lmq_dev 0) S0=$(lmq_sys 0) S1=$(lmq_sys 1)
truncate -s 32M $W/img0; truncate -s 8M $W/img1
is "$(lmq-ioctl set-fd $D0 $W/img0)" OK "attach $D0"

# printf formats: the bytes written
GARBAGE=('' '\n' 'bogus' 'bogus\n' '-1' '0' '1' '2' '3' '4' '4294967296'
	'99999999999999999999999999' 'direct\n\n' ' direct' 'direct ' 'DIRECT'
	'auto\0junk' 'kthreadX' 'aio\n' 'kthread' '\xff\xfe\x00\x01' '0x10' '1e3'
	'%%s%%n' 'direct\nkthread\n')
long=$(head -c 5000 /dev/zero | tr '\0' 'A')
attrs=()
for a in $S0/loopmq/* $S0/loop/* $S1/loopmq/* $S1/loop/* /sys/module/$LMQ_MOD/parameters/*; do
	[ -f "$a" ] || continue
	[ -n "$(find "$a" -perm -u+w)" ] && attrs+=("$a")
done
diag "writable attributes: ${attrs[*]}"
[ ${#attrs[@]} -ge 3 ] && pass "found ${#attrs[@]} writable attributes" || fail "only ${#attrs[@]} writable attributes"

fio --name=g --filename=$D0 --rw=randrw --bs=4k --ioengine=libaio --iodepth=8 --direct=1 \
	--size=16M --time_based --runtime=10 --verify=crc32c --verify_backlog=32 \
	--output-format=terse >$W/fio.out 2>&1 &
fpid=$!
sleep 1
writes=0 accepted=0
for a in "${attrs[@]}"; do
	for g in "${GARBAGE[@]}"; do
		printf "$g" >"$a" 2>/dev/null && accepted=$((accepted + 1))
		writes=$((writes + 1))
	done
	printf '%s' "$long" >"$a" 2>/dev/null && accepted=$((accepted + 1))
	head -c 256 /dev/urandom >"$a" 2>/dev/null && accepted=$((accepted + 1))
	writes=$((writes + 2))
	cat "$a" >/dev/null 2>&1 || fail "$a unreadable after garbage"
done
diag "$writes garbage writes, $accepted accepted"
wait $fpid; rc=$?
is "$rc" 0 "fio verified during the garbage writes"
[ $rc = 0 ] || sed 's/^/#   /' $W/fio.out | tail -n 10

# the values left are valid
for S in $S0 $S1; do
	m=$(cat $S/loopmq/mode)
	case $m in direct|kthread|aio|auto) pass "${S##*/} mode is '$m'";; *) fail "${S##*/} mode is '$m'";; esac
	n=$(awk 'NF == 2 && $2 ~ /^[0-9]+$/' $S/loopmq/stats | wc -l)
	is "$n" "$(wc -l <$S/loopmq/stats)" "${S##*/} stats: every line is 'name number'"
done
p=$(cat /sys/module/$LMQ_MOD/parameters/mode 2>/dev/null)
case $p in direct|kthread|aio|auto) pass "parameter mode is '$p'";; *) fail "parameter mode is '$p'";; esac
sr=$(cat /sys/module/$LMQ_MOD/parameters/stack_reserve 2>/dev/null)
[ -n "$sr" ] && [ "$sr" -ge 1024 ] && [ "$sr" -le 65536 ] && pass "stack_reserve is $sr" ||
	fail "stack_reserve is '$sr'"

# the documented behaviour of mode
for S in $S0 $S1; do
	echo kthread >$S/loopmq/mode
	for g in bogus DIRECT 'auto x' 4 ' '; do
		if printf '%s' "$g" >$S/loopmq/mode 2>/dev/null; then
			fail "${S##*/}: mode accepted '$g'"
		else pass "${S##*/}: mode refuses '$g'"; fi
	done
	is "$(cat $S/loopmq/mode)" kthread "${S##*/}: mode unchanged by refused writes"
	is "$(printf 'aio\n' >$S/loopmq/mode 2>&1; cat $S/loopmq/mode)" aio "${S##*/}: 'aio\\n' accepted"
	echo 0 >$S/loopmq/stats && pass "${S##*/}: stats reset with 0" || fail "${S##*/}: writing 0 to stats"
done

# both devices still work
head -c 1M /dev/urandom >$W/d
for i in 0 1; do
	D=$(lmq_dev $i)
	[ $i = 1 ] && { is "$(lmq-ioctl set-fd $D $W/img1)" OK "attach $D"; }
	dd if=$W/d of=$D bs=64k oflag=direct conv=fsync status=none
	is "$(dd if=$D bs=64k count=16 iflag=direct status=none | sha256sum)" "$(sha256sum <$W/d)" "$D reads back"
	is "$(lmq-ioctl clr-fd $D)" OK "detach $D"
done
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

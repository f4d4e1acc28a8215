#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The crash-consistency checker (tests/progs/lmq-crashwriter.c check) can
# fail: on the host, against plain files, it accepts an intact image and
# reports a loss for a dropped flush (an image older than the log), a zeroed
# sector, another block's data, a flipped payload byte and a block reverted
# to an older write.  No guest.
. "$(dirname "$0")/lib.sh"
t=$st_tmp
cw=$t/lmq-crashwriter
st_check "lmq-crashwriter builds warning-free" bash -c \
	"cc -O2 -Wall -Wextra -Werror -I'$top/include' -o '$cw' '$top/tests/progs/lmq-crashwriter.c'"
# two runs of one schedule: A stops after 4000 writes, B (older) after 2000
truncate -s 32M "$t/a.img" "$t/b.img"
"$cw" write -b -n 4000 -s 777 -t 3 -l "$t/a.log" "$t/a.img" >/dev/null
"$cw" write -b -n 2000 -s 777 -t 3 -l "$t/b.log" "$t/b.img" >/dev/null
# check IMG LOG WANT_RC ERE DESC: the checker's status and a line of its output
check() {
	local out rc
	out=$("$cw" check -b "$2" "$1" 2>&1); rc=$?
	echo "$out" | tail -n 3 | sed 's/^/#   /'
	[ "$rc" = "$3" ] && grep -qE "$4" <<<"$out"
	st_ok $? "$5"
}
check "$t/a.img" "$t/a.log" 0 ' 0 lost sectors' "intact image: nothing lost"
check "$t/b.img" "$t/b.log" 0 ' 0 lost sectors' "intact older image with its own log: nothing lost"
check "$t/b.img" "$t/a.log" 1 'LOST block .*(stale seq|zeroes)' "dropped flushes (older image, newer log): lost"
# three durable blocks of A, each with a last durable write after B's end
mapfile -t dur < <("$cw" durable "$t/a.log" | awk '$2 > 2100 { print $1 }' | head -n 3)
st_ok $([ ${#dur[@]} = 3 ]; echo $?) "the log has durable blocks (${dur[*]})"
x=${dur[0]:-0} y=${dur[1]:-0} z=${dur[2]:-0}
cp "$t/a.img" "$t/c.img"
dd if=/dev/zero of="$t/c.img" bs=512 seek=$((x * 8 + 3)) count=1 conv=notrunc status=none
check "$t/c.img" "$t/a.log" 1 "LOST block $x sector 3: .*found zeroes" "a zeroed sector of a durable block: lost"
cp "$t/a.img" "$t/c.img"
dd if="$t/a.img" of="$t/c.img" bs=4096 skip="$y" seek="$x" count=1 conv=notrunc status=none
check "$t/c.img" "$t/a.log" 1 "LOST block $x sector 0: .*data of block $y" "another block's data: lost"
cp "$t/a.img" "$t/c.img"
printf '\xff' | dd of="$t/c.img" bs=1 seek=$((z * 4096 + 300)) conv=notrunc status=none
check "$t/c.img" "$t/a.log" 1 "LOST block $z sector 0: .*corrupt payload" "a flipped payload byte: lost"
# a block durable in both runs, rewritten after B: A's copy reverted to B's
w=$(join <("$cw" durable "$t/a.log" | sort -k1,1) <("$cw" durable "$t/b.log" | sort -k1,1) |
	awk '$2 > $3 { print $1; exit }')
cp "$t/a.img" "$t/c.img"
dd if="$t/b.img" of="$t/c.img" bs=4096 skip="${w:-0}" seek="${w:-0}" count=1 conv=notrunc status=none
check "$t/c.img" "$t/a.log" 1 "LOST block $w sector 0: .*found stale seq" "one block reverted to an older durable write: lost"
st_done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# 69-kmemleak (debug kernel only; skipped where kmemleak is absent): after a
# workload that exercises the driver (load with several devices, every
# mode, I/O, mode switches, LOOP_CTL_ADD/REMOVE, partitions, unload) and
# whatever earlier tests of the same boot did, a kmemleak scan must report
# no leaked object allocated from the driver's code.  Objects the scan
# reports from elsewhere are listed as diagnostics; note that the harness
# fails any test whose dmesg shows "suspected memory leak", which a scan
# that finds anything prints, so in practice the scan must find nothing.
DESCRIPTION="a kmemleak scan after a driver workload finds no leak of ours"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	[ -e /sys/kernel/debug/kmemleak ] || skip_all "no kmemleak (not the debug kernel)"
}
. /tests/lib/guest.sh

KL=/sys/kernel/debug/kmemleak
W=/tmp/t69
mkdir -p $W
for i in 0 1 2 3; do truncate -s 16M $W/img$i; done
lmq_load 4 max_part=4 || { fail "load $LMQ_MOD"; stop_testing; }
base=$(awk -v m=$LMQ_MOD '$1 == m { print $6 }' /proc/modules)
size=$(awk -v m=$LMQ_MOD '$1 == m { print $2 }' /proc/modules)
diag "$LMQ_MOD core at $base, $size bytes"

# workload
for i in 0 1 2 3; do
	D=$(lmq_dev $i)
	is "$(lmq-ioctl configure $D $W/img$i $(( i % 2 ? 16 : 8 )) 0)" OK "attach $D"
done
for mode in $LMQ_MODES; do
	for i in 0 1; do [ "$mode" = stock ] || lmq_mode $i $mode || fail "$mode: set mode"; done
	fio --name=kl --filename=$(lmq_dev 0):$(lmq_dev 1) --rw=randrw --bs=4k --ioengine=libaio \
		--iodepth=16 --direct=1 --size=8M --io_size=4M --verify=crc32c \
		--output-format=terse >$W/fio.out 2>&1
	rc=$?
	is "$rc" 0 "$mode: fio verify on two devices"
	[ $rc = 0 ] || sed 's/^/#   /' $W/fio.out | tail -n 8
	dd if=/dev/zero of=$(lmq_dev 2) bs=4k count=512 conv=fsync status=none
	is "$?" 0 "$mode: buffered write + fsync"
done
for i in $(seq 10); do
	lmq-ioctl ctl-add $LMQ_CTL 20 >/dev/null; lmq-ioctl ctl-remove $LMQ_CTL 20 >/dev/null
done
lmq_is_mq && for i in $(seq 5); do lmq-stats $(lmq_dev 0) >/dev/null; echo 0 >$(lmq_sys 0)/loopmq/stats; done
for i in 0 1 2 3; do lmq-ioctl clr-fd $(lmq_dev $i) >/dev/null; done

# scan while loaded (symbols resolve), then after unload
scan() {
	sleep 6			# kmemleak ignores objects younger than 5 s
	echo scan >$KL; echo scan >$KL
	cat $KL
}
scan >$W/loaded.txt
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
scan >$W/unloaded.txt
# an object is ours when a backtrace frame names the module, or lies in
# the module's (now freed) core range
ours() {
	awk -v m="[$LMQ_MOD]" -v base="$base" -v size="$size" '
		function hex(s,  i, c, v) { v = 0; s = tolower(s); sub(/^0x/, "", s)
			for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1
				if (c < 0) break; v = v * 16 + c } return v }
		BEGIN { lo = hex(base); hi = lo + size }
		/^unreferenced object/ { if (blk != "" && mine) print blk; blk = $0; mine = 0; next }
		{ blk = blk "\n" $0
		  if (index($0, m)) mine = 1
		  if (match($0, /0x[0-9a-f]+/) && base != "") { a = hex(substr($0, RSTART, RLENGTH)); if (a >= lo && a < hi) mine = 1 } }
		END { if (blk != "" && mine) print blk }' "$1"
}
total=$(grep -c '^unreferenced object' $W/unloaded.txt $W/loaded.txt | awk -F: '{ s += $2 } END { print s + 0 }')
mine=$( { ours $W/loaded.txt; ours $W/unloaded.txt; } | grep -c '^unreferenced object')
diag "kmemleak: $total reports in all (loaded + unloaded scans), $mine from $LMQ_MOD"
{ ours $W/loaded.txt; ours $W/unloaded.txt; } | head -n 80 | sed 's/^/#   /'
if [ "$mine" -eq 0 ] && [ "$total" -gt 0 ]; then
	grep -A12 '^unreferenced object' $W/unloaded.txt | head -n 40 | sed 's/^/#   other: /'
fi
is "$mine" 0 "kmemleak: no leak from $LMQ_MOD"
echo clear >$KL
done_testing

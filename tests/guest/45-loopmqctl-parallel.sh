#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 45-loopmqctl-parallel: loopmqctl used concurrently.  Eight `-f --show`
# at once get eight different devices, all bound (the tool retries when it
# loses the race for a free device); eight `-d` at once unbind them all.
# With loopmq: `--mode` flipped live while data is written and read through
# the device: the data is intact and no request completes with an error.
# timeout: 300
DESCRIPTION="loopmqctl run concurrently: -f --show, -d, live --mode"
requires() {
	[ -n "$LOOPMQCTL" ] || skip_all "no loopmqctl in the guest"
}
. /tests/lib/guest.sh

W=/tmp/t45
mkdir -p $W
cleanup() { lmq_detach_all; rm -rf $W; }
trap cleanup EXIT
lmq_load || { fail "load $LMQ_MOD"; stop_testing; }

F=$W/a.img
truncate -s 16M $F
N=8
for i in $(seq $N); do "$LOOPMQCTL" -f --show $F >$W/dev.$i 2>$W/err.$i & done
wait
is "$(cat $W/err.* | wc -c)" 0 "$N parallel -f --show: no error ($(cat $W/err.* | head -n 1))"
is "$(cat $W/dev.* | sort -u | grep -c "^/dev/$LMQ_NAME[0-9]*\$")" $N "$N parallel -f --show: $N different devices"
n=0
for d in $(cat $W/dev.*); do [ "$(sysv $d loop/backing_file)" = "$F" ] && n=$((n + 1)); done
is "$n" $N "all $N bound to the file"
for d in $(cat $W/dev.*); do "$LOOPMQCTL" -d $d 2>>$W/derr & done
wait
is "$(cat $W/derr 2>/dev/null | wc -c)" 0 "$N parallel -d: no error"
is "$(nbound)" 0 "$N parallel -d: nothing left bound"

if lmq_is_mq; then
	head -c 16M /dev/urandom >$W/pat
	D=$("$LOOPMQCTL" -f --show $F)
	modes=(direct kthread aio auto)
	flip() {	# flip modes until $1 exits; count the switches in $W/flips
		local k=0
		while kill -0 "$1" 2>/dev/null; do
			"$LOOPMQCTL" --mode "${modes[k % 4]}" $D || echo "flip failed" >>$W/fliperr
			k=$((k + 1))
		done
		echo $k >$W/flips
	}
	dd if=$W/pat of=$D bs=4k oflag=direct conv=fsync status=none &
	w=$!
	flip $w
	wait $w
	is "$?" 0 "write while the mode flips: dd succeeded"
	diag "$(cat $W/flips) mode switches during the write"
	check "no mode switch failed" test ! -s $W/fliperr
	check "the file holds what was written" cmp -s $F $W/pat
	(dd if=$D bs=4k iflag=direct status=none | sha256sum >$W/rsum) &
	r=$!
	flip $r
	wait $r
	is "$(cat $W/rsum)" "$(sha256sum <$W/pat)" "read while the mode flips: the data is intact"
	diag "$(cat $W/flips) mode switches during the read"
	is "$("$LOOPMQCTL" -l -n -O ERRORS $D | tr -d ' ')" 0 "no request completed with an error"
	"$LOOPMQCTL" -d $D
else
	skip "mode flips under I/O" "the stock loop driver has no modes"
fi

done_testing

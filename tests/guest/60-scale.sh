#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 60-scale: create, attach, detach and remove 1000 devices (tests/progs/
# lmq-scale); every operation must succeed, every device must be gone
# afterwards and the module must unload.  Reports (does not assert) the time
# per operation for the first and the last 100 devices of each phase and the
# memory (MemAvailable, Slab) per device.  SCALE_N overrides 1000.
# timeout: 900
DESCRIPTION="create, attach, detach and remove 1000 devices"
requires() {
	require_cmd lmq-ioctl lmq-stats fio
	command -v lmq-scale >/dev/null || skip_all "lmq-scale not installed"
}
. /tests/lib/guest.sh

N=${SCALE_N:-1000}
W=/tmp/t60
mkdir -p $W
truncate -s 1M $W/img
lmq_load 1 || { fail "load $LMQ_MOD"; stop_testing; }
before=$(ls -d /sys/block/$LMQ_NAME[0-9]* | wc -l)
t0=$SECONDS
# 8 processes per phase: a detach and a remove each wait for RCU grace
# periods (40 and 20 ms under TCG); one at a time, 1000 of them took a
# minute.  The removes then overlap (20.7 s -> 3.4 s on 6.1); the detaches
# do not (one at a time under loopmq's bind mutex), so the per-device
# detach times include the wait for the others
lmq-scale $LMQ_CTL $LMQ_PREFIX 100 $N $W/img ${SCALE_JOBS:-8} >$W/out 2>&1
rc=$?
sed 's/^/# /' $W/out
is "$rc" 0 "lmq-scale: $N devices added, attached, detached, removed ($((SECONDS - t0)) s)"
for ph in add attach detach remove; do
	f=$(awk -v p=$ph '$1 == "phase" && $2 == p { print $6 }' $W/out)
	is "${f:-missing}" 0 "phase $ph: no failure"
	awk -v p=$ph '$1 == "phase" && $2 == p {
		printf "# %-6s %6.2f ms/device; first 100 %.0f us, last 100 %.0f us (x%.2f), max %.0f us\n",
			p, $8 / '"$N"', $10, $12, ($10 > 0 ? $12 / $10 : 0), $14 }' $W/out
done
mem() { awk -v s=$1 -v k=$2 '$1 == "mem" && $2 == s { for (i = 3; i < NF; i += 2) if ($i == k) print $(i + 1) }' $W/out; }
for st in add attach detach remove; do
	prev=start
	case $st in attach) prev=after-add;; detach) prev=after-attach;; remove) prev=after-detach;; esac
	da=$(( $(mem after-$st MemAvailable_kB) - $(mem $prev MemAvailable_kB) ))
	ds=$(( $(mem after-$st Slab_kB) - $(mem $prev Slab_kB) ))
	diag "$(printf 'memory %-6s MemAvailable %+d kB (%+d B/device), Slab %+d kB (%+d B/device)' \
		$st $da $((da * 1024 / N)) $ds $((ds * 1024 / N)))"
done
diag "$(printf 'memory after the whole cycle: MemAvailable %+d kB, Slab %+d kB' \
	$(( $(mem after-remove MemAvailable_kB) - $(mem start MemAvailable_kB) )) \
	$(( $(mem after-remove Slab_kB) - $(mem start Slab_kB) )))"
is "$(ls -d /sys/block/$LMQ_NAME[0-9]* | wc -l)" "$before" "device count back to $before"
is "$(ls $LMQ_PREFIX[0-9]* 2>/dev/null | wc -l)" "$before" "device nodes back to $before"
lmq_unload; is "$?" 0 "$LMQ_MOD unloads"
done_testing

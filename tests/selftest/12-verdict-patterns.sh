#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Harness self-test: every verdict the guest tests rely on fails a run.
# 10-verdicts shows WARN (a real one) and BUG; here, in one run:
#  - lockdep's and KASAN's reports (their first lines, written to the
#    kernel log: these kernels have neither checker; the debug kernel's
#    reports start with the same lines);
#  - a real RCU stall, a real soft lockup and a real hung task (warnmod
#    spins with preemption off; a write to a frozen file system waits),
#    with their timeouts cut to seconds;
#  - a test that ran no check, one whose every check skipped, and a whole
#    test skipped where tests/skips does not allow it (--must-run), beside
#    one it allows;
# and, without a guest, a script that does not exist.
# SELFTEST_RUN_ARGS adds arguments to tests/vm/run (e.g. "--kernel 6.1").
. "$(dirname "$0")/lib.sh"
g=$st_tmp
cat >"$g/lockdep.sh" <<'T'
echo "WARNING: possible circular locking dependency detected" >/dev/kmsg
exit 0
T
cat >"$g/kasan.sh" <<'T'
echo "BUG: KASAN: slab-use-after-free in harness_selftest+0x10/0x20" >/dev/kmsg
exit 0
T
# An RCU grace period has to be waited for while warnmod spins: mounts
# and unmounts on the other CPU ask for them.
cat >"$g/rcu-stall.sh" <<'T'
# timeout: 120
modprobe warnmod || exit 1
p=/sys/module/rcupdate/parameters
old=$(cat $p/rcu_cpu_stall_timeout)
echo 0 >/proc/sys/kernel/soft_watchdog
echo 3 >$p/rcu_cpu_stall_timeout
mkdir -p /mnt/st-rcu
rm -f /tmp/st-spun
( while [ ! -e /tmp/st-spun ]; do
	mount -t tmpfs none /mnt/st-rcu && umount /mnt/st-rcu
	sleep 0.05
done ) &
echo 10 >/sys/module/warnmod/parameters/spin
touch /tmp/st-spun
wait
echo "$old" >$p/rcu_cpu_stall_timeout
echo 1 >/proc/sys/kernel/soft_watchdog
exit 0
T
cat >"$g/no-checks.sh" <<'T'
. /tests/lib/tap.sh
done_testing
T
cat >"$g/all-skipped.sh" <<'T'
. /tests/lib/tap.sh
skip "frobnicate" "no frobnicator"
skip "defrobnicate" "no frobnicator"
done_testing
T
cat >"$g/skip-not-allowed.sh" <<'T'
. /tests/lib/tap.sh
skip_all "no frobnicator here"
T
# tests/skips lets 69-kmemleak skip on 6.1 and 6.12 (not on debug)
cp "$g/skip-not-allowed.sh" "$g/69-kmemleak.sh"
cat >"$g/soft-lockup.sh" <<'T'
# timeout: 120
modprobe warnmod || exit 1
echo 1 >/proc/sys/kernel/watchdog_thresh
echo 10 >/sys/module/warnmod/parameters/spin
echo "no soft lockup seen"
exit 0
T
# A write to a frozen file system waits for the thaw uninterruptibly and
# with no timeout (the block layer's own waits wake up every half
# timeout so as not to be reported)
cat >"$g/hung-task.sh" <<'T'
# timeout: 120
mkfs.ext4 -q -F /dev/vda && mkdir -p /mnt/st-hang && mount /dev/vda /mnt/st-hang || exit 1
fsfreeze --freeze /mnt/st-hang || exit 1
echo 2 >/proc/sys/kernel/hung_task_timeout_secs
echo data >/mnt/st-hang/f &
sleep 1
echo "writer: $(cut -d' ' -f3 /proc/$!/stat) in $(cat /proc/$!/wchan)"
sleep 15
echo "no hung task seen"
fsfreeze --unfreeze /mnt/st-hang
wait
umount /mnt/st-hang
exit 0
T
cat >"$g/after.sh" <<'T'
. /tests/lib/tap.sh
check "a fresh guest" true
done_testing
T
log=$st_tmp/run.log
t0=$(date +%s)
"$top/tests/vm/run" "${st_args[@]}" --must-run "$top/tests/skips" \
	"$g"/{lockdep,kasan,rcu-stall,no-checks,all-skipped,skip-not-allowed,69-kmemleak,soft-lockup,hung-task,after}.sh >"$log" 2>&1
rc=$?
sed 's/^/# | /' "$log"
st_ok "$([ $rc -ne 0 ]; echo $?)" "run exits non-zero (status $rc)"
st_line "a lockdep report fails the test" "$log" '^not ok 1 lockdep # dmesg: WARNING: possible circular locking'
st_line "a KASAN report fails the test" "$log" '^not ok 2 kasan # dmesg: BUG: KASAN'
st_line "an RCU stall fails the test" "$log" '^not ok 3 rcu-stall # dmesg: .*detected (expedited )?stalls? on'
st_line "no checks run fails the test" "$log" '^not ok 4 no-checks # .*no checks were run'
st_line "every check skipped fails the test" "$log" '^not ok 5 all-skipped # .*every check was skipped'
st_line "a skip tests/skips does not allow fails the test" "$log" '^not ok 6 skip-not-allowed # skipped \(no frobnicator here\), but tests/skips does not let it skip'
st_line "a skip tests/skips allows is a skip" "$log" '^ok 7 69-kmemleak # SKIP'
st_line "a soft lockup fails the test" "$log" '^not ok 8 soft-lockup # .*soft ?lockup'
st_line "a hung task fails the test" "$log" '^not ok 9 hung-task # .*(hung_task|blocked for more than)'
st_line "a fresh guest after the panics" "$log" '^ok 10 after$'
st_line "summary counts" "$log" '^1 passed, 8 failed, 1 skipped$'
echo "# selftest run took $(($(date +%s) - t0))s"
out=$("$top/tests/vm/run" "${st_args[@]}" "$g/no-such-test.sh" 2>&1)
rc=$?
st_ok "$([ $rc -ne 0 ]; echo $?)" "a missing script fails the run (status $rc)"
st_check "and is named" grep -q "no such script: .*no-such-test.sh" <<<"$out"
st_done

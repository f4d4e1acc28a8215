#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Harness self-test: one run with passing, failing, skipped, hanging, dmesg
# splatting, state-leaking, reference-leaking and WARN-ing guest scripts;
# asserts the verdict of each, the new guests after the leaked reference and
# after the WARN panic, --outdir and the exit status.
# SELFTEST_RUN_ARGS adds arguments to tests/vm/run (e.g. "--kernel 6.1").
. "$(dirname "$0")/lib.sh"
g=$st_tmp
cat >"$g/pass.sh" <<'T'
. /tests/lib/tap.sh
check "true is true" true
is "$(echo 42)" 42 "echo"
done_testing
T
cat >"$g/fail.sh" <<'T'
. /tests/lib/tap.sh
check "true is true" true
is "$(echo 41)" 42 "deliberate mismatch"
done_testing
T
cat >"$g/skip.sh" <<'T'
. /tests/lib/tap.sh
skip_all "no frobnicator here"
T
cat >"$g/hang.sh" <<'T'
# timeout: 8
echo "about to hang"
sleep 1000
T
cat >"$g/dmesg-bug.sh" <<'T'
echo "BUG: harness selftest fake splat" >/dev/kmsg
exit 0
T
cat >"$g/leave-state.sh" <<'T'
set -e
modprobe loopmq
grep -q '^loopmq ' /proc/modules
mkdir -p /mnt/leftover && mount -t tmpfs none /mnt/leftover
setsid sleep 1000 </dev/null >/dev/null 2>&1 &
echo leaving loopmq loaded, a mount and a process
T
cat >"$g/clean-state.sh" <<'T'
. /tests/lib/tap.sh
check_fail "loopmq was unloaded by the harness" grep -q '^loopmq ' /proc/modules
check_fail "the leftover mount is gone" grep -q ' /mnt/leftover ' /proc/mounts
check_fail "the leftover process is gone" pgrep -x sleep
check "scratch disk is there" test -b /dev/vda
is "$(blockdev --getsize64 /dev/vda)" 2147483648 "scratch disk is 2 GiB"
check "real losetup (util-linux)" bash -c 'losetup --version | grep -q util-linux'
check "fio runs" fio --name=t --filename=/tmp/f --size=1M --rw=randread --bs=4k --ioengine=psync --output-format=terse
check "write to /out" bash -c 'echo selftest-out >/out/selftest.txt'
done_testing
T
cat >"$g/hold-ref.sh" <<'T'
set -e
modprobe loopmq
modprobe warnmod
echo /dev/loopmq-control >/sys/module/warnmod/parameters/hold
echo "the kernel now holds loopmq open"
T
cp "$g/clean-state.sh" "$g/clean-after-reboot.sh"
cat >"$g/warn.sh" <<'T'
modprobe warnmod
echo 1 >/sys/module/warnmod/parameters/warn
sleep 5
echo "still alive after WARN?"
exit 0
T
cat >"$g/after-panic.sh" <<'T'
. /tests/lib/tap.sh
check "a fresh guest after the panic" true
check "loopmq not loaded" bash -c '! grep -q "^loopmq " /proc/modules'
done_testing
T
out=$st_tmp/out log=$st_tmp/run.log
t0=$(date +%s)
"$top/tests/vm/run" "${st_args[@]}" --outdir "$out" "$g"/{pass,fail,skip,hang,dmesg-bug,leave-state,clean-state,hold-ref,clean-after-reboot,warn,after-panic}.sh >"$log" 2>&1
rc=$?
sed 's/^/# | /' "$log"
st_ok "$([ $rc -ne 0 ]; echo $?)" "run exits non-zero (status $rc)"
st_line "passing test is ok" "$log" '^ok 1 pass$'
st_line "failing test is not ok with the exit status" "$log" '^not ok 2 fail # exit status 1'
st_line "exit 77 is a skip with its reason" "$log" '^ok 3 skip # SKIP.*no frobnicator'
st_line "hanging test killed, reported by name" "$log" '^not ok 4 hang # timeout after 8s'
st_line "BUG line in dmesg fails the test" "$log" '^not ok 5 dmesg-bug # dmesg: BUG: harness selftest'
st_line "leaving loopmq/mount/process is cleaned up" "$log" '^ok 6 leave-state$'
st_line "next test starts clean" "$log" '^ok 7 clean-state$'
st_line "a module reference left behind: left loopmq in use" "$log" '^not ok 8 hold-ref # left loopmq in use'
st_line "then a new guest, clean again" "$log" '^ok 9 clean-after-reboot$'
st_line "WARN panics the guest and fails that test" "$log" '^not ok 10 warn # guest died.*(panic_on_warn|WARNING)'
st_line "guest restarted for the test after the panic" "$log" '^ok 11 after-panic$'
st_line "3 boots" "$log" '^# kernel .*, 3 boot\(s\)'
st_line "summary counts" "$log" '^5 passed, 5 failed, 1 skipped$'
st_check "never claims 0 failed" bash -c "! grep -qE '^[0-9]+ passed, 0 failed' '$log'"
st_check "--outdir copied /out back" grep -qx selftest-out "$out/selftest.txt"
echo "# selftest run took $(($(date +%s) - t0))s"
st_done

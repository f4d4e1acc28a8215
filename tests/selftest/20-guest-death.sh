#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Harness self-test: the guest dies or hangs.
#  A: --no-restart, a WARN at module load panics the guest: that test is
#     not ok, the next one "not run (guest died earlier)".
#  B: a test leaves dirty ext4 on a suspended dm device: the guest's cleanup
#     blocks in umount (D state) and never reports: the host watchdog kills
#     QEMU, reports the test by name, and a fresh guest runs the next test.
#  C: the global --timeout kills a run that would take too long.
#  D: a guest that dies before any test started (no init here) is booted
#     once more, with a warning; the second failure fails the run.
. "$(dirname "$0")/lib.sh"
g=$st_tmp
cat >"$g/warn-on-load.sh" <<'T'
modprobe warnmod warn_on_load=1
sleep 5
exit 0
T
cat >"$g/never.sh" <<'T'
exit 0
T
cat >"$g/dstate.sh" <<'T'
# timeout: 40
set -e
modprobe dm-mod
dmsetup --noudevsync create stuck --table "0 262144 linear /dev/vda 0"
dev=/dev/$(basename "$(readlink -f /sys/block/dm-0)")
mkfs.ext4 -q "$dev"
mkdir -p /mnt/stuck
mount "$dev" /mnt/stuck
dd if=/dev/zero of=/mnt/stuck/dirty bs=1M count=4 status=none
dmsetup --noudevsync suspend --nolockfs stuck
echo "dirty ext4 on suspended $dev: the harness's umount cannot finish"
T
cat >"$g/after.sh" <<'T'
exit 0
T
cat >"$g/sleepy.sh" <<'T'
# timeout: 600
sleep 1000
T

t0=$(date +%s)
log=$g/a.log
"$top/tests/vm/run" "${st_args[@]}" --no-restart "$g/warn-on-load.sh" "$g/never.sh" >"$log" 2>&1
rc=$?
sed 's/^/# A| /' "$log" | grep -v '^# A| #   \['
st_ok "$([ $rc -ne 0 ]; echo $?)" "A: run exits non-zero (status $rc)"
st_line "A: WARN at load is a guest death" "$log" '^not ok 1 warn-on-load # guest died.*panic'
st_line "A: later test not run" "$log" '^not ok 2 never # not run \(guest died earlier\)'
st_line "A: summary" "$log" '^0 passed, 2 failed$'

log=$g/b.log
HARNESS_HANG_GRACE=15 "$top/tests/vm/run" "${st_args[@]}" "$g/dstate.sh" "$g/after.sh" >"$log" 2>&1
rc=$?
sed 's/^/# B| /' "$log" | grep -v '^# B| #   \['
st_ok "$([ $rc -ne 0 ]; echo $?)" "B: run exits non-zero (status $rc)"
st_line "B: unkillable test reported as hung, by name" "$log" '^not ok 1 dstate # guest died.*no result.*guest hung'
st_line "B: a new guest runs the next test" "$log" '^ok 2 after$'
st_line "B: summary" "$log" '^1 passed, 1 failed$'

log=$g/c.log
s0=$(date +%s)
"$top/tests/vm/run" "${st_args[@]}" --timeout 45 "$g/sleepy.sh" >"$log" 2>&1
rc=$?
s1=$(date +%s)
sed 's/^/# C| /' "$log" | grep -v '^# C| #   \['
st_ok "$([ $rc -ne 0 ]; echo $?)" "C: run exits non-zero (status $rc)"
st_line "C: global timeout reported" "$log" '^not ok 1 sleepy # guest died.*global timeout \(45s\)'
# The guest's own span as the harness reports it ("..., 47s, logs in"),
# not this script's wall clock, which on a loaded host also holds the
# module and initramfs builds (126 s once, beside three other guests).
span=$(sed -n 's/^# kernel .*), \([0-9]*\)s, logs in .*/\1/p' "$log")
st_ok "$([ -n "$span" ] && [ "$span" -lt 90 ]; echo $?)" \
	"C: the guest was stopped ${span:-?}s after it started (timeout 45s; $((s1 - s0))s with the builds)"
log=$g/d.log
"$top/tests/vm/run" "${st_args[@]}" --append rdinit=/no/such/init "$g/never.sh" >"$log" 2>&1
rc=$?
sed 's/^/# D| /' "$log" | grep -v '^# D| #   \['
st_ok "$([ $rc -ne 0 ]; echo $?)" "D: run exits non-zero (status $rc)"
st_line "D: a death before any test is retried once, aloud" "$log" \
	'^# warning: boot 1 ended before any test started.*booting again'
st_line "D: the second failed boot is reported" "$log" '^not ok 1 never # not run: guest failed to boot'
st_line "D: two boots, no more" "$log" '^# kernel .*, 2 boot\(s\)'
echo "# selftest took $(($(date +%s) - t0))s"
st_done

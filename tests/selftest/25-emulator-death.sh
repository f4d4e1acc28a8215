#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Harness self-test: the emulator itself dies of a signal the harness did
# not send (a SIGSEGV in qemu-system-x86_64 failed a crash trial once).  A
# stand-in qemu-system-x86_64 first in PATH plays each boot from a script;
# no guest runs.
#  A: tests/crash/run: QEMU dies before guest.sh says UP: the same boot
#     runs again, said aloud; it dies after UP (in the check): the trial
#     fails, and the reason names the signal.  One retry only.
#  B: tests/crash/run: QEMU dies before UP in every boot: one retry, then
#     the trial fails as not started, naming the signal.
#  C: tests/vm/run: QEMU dies at boot twice: one more boot, then the tests
#     are not run, and the reason names the signal.
. "$(dirname "$0")/lib.sh"
g=$st_tmp
mkdir -p "$g/bin"
# The stand-in.  Boot N plays line N of $FAKEQ_PLAN (the last line once
# the plan runs out):
#   segv       die of SIGSEGV at once, as if at boot
#   trial      a crash trial's setup: UP, TRIAL, RUNNING, then wait
#   up-segv    UP, then SIGSEGV (dies inside the guest script)
cat >"$g/bin/qemu-system-x86_64" <<'Q'
#!/usr/bin/env bash
chan=/dev/null
for a in "$@"; do
	case $a in file,id=chan,path=*) chan=${a#file,id=chan,path=};; esac
done
n=$(($(cat "$FAKEQ_DIR/calls" 2>/dev/null || echo 0) + 1))
echo "$n" >"$FAKEQ_DIR/calls"
act=$(sed -n "${n}p" "$FAKEQ_PLAN"); [ -n "$act" ] || act=$(tail -n 1 "$FAKEQ_PLAN")
case $act in
segv)	kill -SEGV $$;;
trial)	printf 'UP\nTRIAL 1 7 8192\nRUNNING\n' >>"$chan"; sleep 60;;
up-segv) echo UP >>"$chan"; sleep 0.3; kill -SEGV $$;;
esac
sleep 60
Q
chmod +x "$g/bin/qemu-system-x86_64"
fake() {	# fake NAME PLAN...: a fresh plan, and the stand-in first in PATH
	mkdir -p "$g/$1"; printf '%s\n' "${@:2}" >"$g/$1/plan"
	export FAKEQ_DIR=$g/$1 FAKEQ_PLAN=$g/$1/plan PATH=$g/bin:$PATH
}
k=6.12
for a in "${st_args[@]}"; do [ "$a" = 6.1 ] && k=6.1; done

log=$g/a.log
(fake a segv trial up-segv
	"$top/tests/crash/run" --kernel "$k" --trials 1 --no-control --seed 1 >"$log" 2>&1)
rc=$?
sed 's/^/# A| /' "$log"
st_ok "$([ $rc -ne 0 ]; echo $?)" "A: run exits non-zero (status $rc)"
st_line "A: death before UP: the boot runs again, said aloud" "$log" \
	'^# warning: boot 1 on .*: qemu-system-x86_64 died of signal 11 \(SEGV\) before the guest script started; booting again'
st_ok "$([ "$(grep -c 'booting again' "$log")" = 1 ]; echo $?)" "A: one retry, not one per death"
st_line "A: death in the check: the trial fails" "$log" '^not ok 1 trial 1 .*check failed'
st_line "A: and the reason names the signal" "$log" \
	'^#   no verdict: qemu-system-x86_64 died of signal 11 \(SEGV\)'
st_ok "$([ "$(cat "$g/a/calls")" = 3 ]; echo $?)" "A: three boots ($(cat "$g/a/calls"))"
st_line "A: summary" "$log" '^0 passed, 1 failed$'

log=$g/b.log
(fake b segv
	"$top/tests/crash/run" --kernel "$k" --trials 1 --no-control --seed 1 >"$log" 2>&1)
rc=$?
sed 's/^/# B| /' "$log"
st_ok "$([ $rc -ne 0 ]; echo $?)" "B: run exits non-zero (status $rc)"
st_ok "$([ "$(grep -c 'booting again' "$log")" = 1 ]; echo $?)" "B: one retry"
st_line "B: then the trial fails, naming the signal" "$log" \
	'^not ok 1 trial 1 .*not started \(setup failed\), qemu-system-x86_64 died of signal 11 \(SEGV\)'

g2=$g/c-guest; mkdir -p "$g2"
echo 'exit 0' >"$g2/never.sh"
log=$g/c.log
(fake c segv
	"$top/tests/vm/run" "${st_args[@]}" "$g2/never.sh" >"$log" 2>&1)
rc=$?
sed 's/^/# C| /' "$log"
st_ok "$([ $rc -ne 0 ]; echo $?)" "C: run exits non-zero (status $rc)"
st_line "C: death at boot: booted again, naming the signal" "$log" \
	'^# warning: boot 1 ended before any test started \(qemu-system-x86_64 died of signal 11 \(SEGV\).*booting again'
st_line "C: then the test is not run, naming the signal" "$log" \
	'^not ok 1 never # .*not run: .*qemu-system-x86_64 died of signal 11 \(SEGV\)'
st_ok "$([ "$(cat "$g/c/calls")" = 2 ]; echo $?)" "C: two boots ($(cat "$g/c/calls"))"
st_done

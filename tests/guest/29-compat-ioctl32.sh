#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# 29-compat-ioctl32: a 32-bit program (lmq-ioctl built with -m32) drives the
# device through ->compat_ioctl exactly as a 64-bit one does, and as the
# stock loop driver answers it: LOOP_SET_FD, LOOP_SET_STATUS64 and
# LOOP_GET_STATUS64, the legacy LOOP_SET_STATUS and LOOP_GET_STATUS with the
# 32-bit struct loop_info (whose layout differs: 16-bit dev_t, 32-bit
# longs), EOVERFLOW when an offset does not fit it, LOOP_CONFIGURE,
# LOOP_SET_DIRECT_IO, LOOP_SET_BLOCK_SIZE, LOOP_SET_CAPACITY, LOOP_CLR_FD,
# and the control device.  The same sequence runs on the stock driver and
# on the driver under test in one boot: the stock driver's answers must be
# the documented ones (proving each step) and the driver under test must
# answer the same.  Then loopmq's own LOOPMQ_SET_MODE and LOOPMQ_GET_MODE.
DESCRIPTION="32-bit callers: every loop ioctl through compat_ioctl, as the stock driver"
requires() {
	lmq_needs_stock_loop
	require_cmd lmq-ioctl lmq-ioctl32 setpriv
	lmq-ioctl32 open /dev/null >/dev/null 2>&1 ||
		skip_all "lmq-ioctl32 does not run (no IA32 emulation?)"
}
. /tests/lib/guest.sh

W=/mnt/t29
# ext4, not tmpfs: the stock driver's direct I/O answer depends on
# whether the backing file allows O_DIRECT, and tmpfs on 6.1 does not
mkdir -p $W && mkfs.ext4 -q -F $LMQ_SCRATCH && mount $LMQ_SCRATCH $W ||
	{ fail "ext4 on $LMQ_SCRATCH"; stop_testing; }
head -c 8M /dev/urandom >$W/a
truncate -s 4G $W/big

modprobe loop max_loop=2 || { fail "modprobe loop"; stop_testing; }
if lmq_is_mq; then
	lmq_load 2 || { fail "load $LMQ_MOD"; stop_testing; }
fi

# The sequence on device prefix $1, control node $2: one line per step,
# "step: answer", the device number taken out of get-status answers.
# LOOP_SET_FD names no file (lo_file_name stays empty): file= is empty.
sequence() {
	local P=$1 C=$2 D=${1}0 l
	s() { l=$1; shift; echo "$l: $("$@" 2>/dev/null | sed 's/ number=[0-9]*//')"; }
	s "32 set-fd" lmq-ioctl32 set-fd $D $W/a
	s "32 get-status64" lmq-ioctl32 get-status $D
	s "32 set-status64 off 4096" lmq-ioctl32 set-status $D 4096 0 0
	s "64 get-status64" lmq-ioctl get-status $D
	s "32 get-status old" lmq-ioctl32 get-status-old $D
	s "32 set-status old off 8192" lmq-ioctl32 set-status-old $D 8192 0
	s "64 get-status64" lmq-ioctl get-status $D
	s "64 get-status old" lmq-ioctl get-status-old $D
	s "32 set-dio 1" lmq-ioctl32 set-dio $D 1
	s "32 set-block-size 4096" lmq-ioctl32 set-block-size $D 4096
	s "32 set-capacity" lmq-ioctl32 set-capacity $D
	s "32 clr-fd" lmq-ioctl32 clr-fd $D
	s "32 get-status64 unbound" lmq-ioctl32 get-status $D
	s "32 get-status old unbound" lmq-ioctl32 get-status-old $D
	s "32 configure bs 512" lmq-ioctl32 configure $D $W/a 0 512 1024
	s "32 get-status64" lmq-ioctl32 get-status $D
	s "32 clr-fd" lmq-ioctl32 clr-fd $D
	s "64 set-fd big" lmq-ioctl set-fd $D $W/big
	s "64 set-status64 off 3 GiB" lmq-ioctl set-status $D $((3 << 30)) 0 0
	s "32 get-status64" lmq-ioctl32 get-status $D
	s "32 get-status old (overflow)" lmq-ioctl32 get-status-old $D
	s "64 get-status old" lmq-ioctl get-status-old $D
	s "32 clr-fd" lmq-ioctl32 clr-fd $D
	s "32 ctl-get-free" lmq-ioctl32 ctl-get-free $C
	s "32 ctl-remove 1" lmq-ioctl32 ctl-remove $C 1
	s "32 ctl-add 1" lmq-ioctl32 ctl-add $C 1
}

stock=$(sequence /dev/loop /dev/loop-control)
# What the stock driver must answer, so that each step proves something.
expect="32 set-fd: OK
32 get-status64: OK offset=0 sizelimit=0 flags=0 file=
32 set-status64 off 4096: OK
64 get-status64: OK offset=4096 sizelimit=0 flags=0 file=
32 get-status old: OK offset=4096 flags=0 file=
32 set-status old off 8192: OK
64 get-status64: OK offset=8192 sizelimit=0 flags=0 file=
64 get-status old: OK offset=8192 flags=0 file=
32 set-dio 1: OK
32 set-block-size 4096: OK
32 set-capacity: OK
32 clr-fd: OK
32 get-status64 unbound: ENXIO
32 get-status old unbound: ENXIO
32 configure bs 512: OK
32 get-status64: OK offset=1024 sizelimit=0 flags=0 file=
32 clr-fd: OK
64 set-fd big: OK
64 set-status64 off 3 GiB: OK
32 get-status64: OK offset=3221225472 sizelimit=0 flags=0 file=
32 get-status old (overflow): EOVERFLOW
64 get-status old: EOVERFLOW
32 clr-fd: OK
32 ctl-get-free: OK 0
32 ctl-remove 1: OK
32 ctl-add 1: OK"
is "$stock" "$expect" "the stock loop driver answers 32-bit callers as documented" ||
	diag "stock: $(echo "$stock" | tr '\n' '|')"

if lmq_is_mq; then
	mapfile -t want <<<"$stock"
	mapfile -t got < <(sequence "$LMQ_PREFIX" "$LMQ_CTL")
	for i in "${!want[@]}"; do
		is "${got[i]:-}" "${want[i]}" "$LMQ_NAME: ${want[i]%%:*}"
	done
	D=$(lmq_dev 0)
	is "$(lmq-ioctl32 set-fd $D $W/a)" OK "$LMQ_NAME: 32 set-fd for the mode calls"
	for m in $LMQ_MODES; do
		is "$(lmq-ioctl32 set-mode $D $m)" OK "32 LOOPMQ_SET_MODE $m"
		is "$(lmq-ioctl32 get-mode $D)" "OK $m" "32 LOOPMQ_GET_MODE says $m"
	done
	is "$(lmq-ioctl32 clr-fd $D)" OK "$LMQ_NAME: 32 clr-fd"
fi

# The legacy LOOP_SET_STATUS from a read-only open without CAP_SYS_ADMIN:
# EPERM, as the native call and every other changing ioctl answer.  The
# stock driver's compat path skips that check (reported, not asserted).
ro32() {
	lmq-ioctl set-fd "$1" $W/a >/dev/null 2>&1
	word1 "$(setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin -- \
		lmq-ioctl32 -r set-status-old "$1" 0 0 2>/dev/null)"
	lmq-ioctl clr-fd "$1" >/dev/null 2>&1
}
diag "stock loop, 32-bit legacy LOOP_SET_STATUS from a read-only open without CAP_SYS_ADMIN: $(ro32 /dev/loop0)"
lmq_is_mq && is "$(ro32 "$(lmq_dev 0)")" EPERM \
	"$LMQ_NAME: 32-bit legacy LOOP_SET_STATUS, read-only open, no CAP_SYS_ADMIN"
done_testing

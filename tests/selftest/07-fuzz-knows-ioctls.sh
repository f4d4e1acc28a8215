#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side: every ioctl command the module handles (a "case LOOP_*:" or
# "case LOOPMQ_*:" label in loopmq_ioctl.c and loopmq_ctl.c) is in
# tests/progs/ioctl-fuzz.c's table of known commands, by name and value.
# A command missing there is fuzzed only as an "unknown number", and its
# success then counts as a violation (50-ioctl-fuzz fails at random, on
# whichever seed happens to build a valid call).  No guest is booted.
. "$(dirname "$0")/lib.sh"
fuzz=$top/tests/progs/ioctl-fuzz.c
cmds=$(grep -hoE 'case (LOOP|LOOPMQ)_[A-Z0-9_]+:' "$top"/loopmq_ioctl.c "$top"/loopmq_ctl.c |
	sed -E 's/^case ([A-Z0-9_]+):$/\1/' | sort -u)
[ -n "$cmds" ]
st_ok $? "the module's ioctl switches name some commands"
for c in $cmds; do
	# The stock driver's commands (LOOP_*) all count; of loopmq's names,
	# the ones the uapi defines as ioctl numbers (not LOOPMQ_RUN_* and
	# other enum labels the same switches use).
	case $c in
	LOOP_*) ;;
	*) grep -qE "#define[[:space:]]+$c[[:space:]]+_IO" "$top"/include/uapi/loopmq.h || continue;;
	esac
	grep -qE "\{ \"$c\", $c, A_[A-Z]+," "$fuzz"
	st_ok $? "ioctl-fuzz knows $c"
done
st_done

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Host-side check of the guest tests' layout (tests/README.md, "Writing a
# guest test"): every tests/guest/*.sh parses, has a "# timeout: N" line in
# its first 10 lines, sets DESCRIPTION, sources /tests/lib/guest.sh once and
# no other helper library, and ends with done_testing.  No guest is booted.
. "$(dirname "$0")/lib.sh"
for t in "$top"/tests/guest/*.sh; do
	n=${t##*/}
	st_check "$n parses" bash -n "$t"
	head -n 10 "$t" | grep -qE '^#[[:space:]]*timeout:[[:space:]]*[0-9]+'
	st_ok $? "$n: # timeout: N in its first 10 lines"
	grep -qE '^DESCRIPTION="[^"]+"$' "$t"
	st_ok $? "$n: sets DESCRIPTION"
	[ "$(grep -cE '^\. /tests/lib/guest\.sh$' "$t")" = 1 ] &&
		! grep -qE '^[[:space:]]*(\.|source) /tests/lib/(tap|driver|loopmq|loopmqctl)\.sh' "$t"
	st_ok $? "$n: sources guest.sh once, no other library"
	[ "$(grep -v '^[[:space:]]*$' "$t" | tail -n 1)" = done_testing ]
	st_ok $? "$n: ends with done_testing"
done
st_done

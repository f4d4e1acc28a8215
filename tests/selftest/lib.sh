# SPDX-License-Identifier: GPL-2.0
# Helpers for the host-side harness self-tests (sourced).
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
st_pass=0 st_fail=0 st_n=0
st_ok() {
	st_n=$((st_n + 1))
	if [ "$1" = 0 ]; then
		st_pass=$((st_pass + 1)); echo "ok $st_n $2"
	else
		st_fail=$((st_fail + 1)); echo "not ok $st_n $2"
	fi
}
# st_check "desc" CMD...: pass if CMD succeeds
st_check() { local d=$1; shift; "$@"; st_ok $? "$d"; }
# st_line "desc" FILE ERE: pass if a line of FILE matches ERE
st_line() {
	grep -qE "$3" "$2"
	local rc=$?
	st_ok $rc "$1"
	[ $rc = 0 ] || echo "#   no line matching /$3/ in $2"
}
st_done() {
	echo "$st_pass passed, $st_fail failed"
	[ "$st_fail" -eq 0 ] && [ "$st_pass" -gt 0 ]
}
# The self-tests check exact timeouts: a scale set for make check's guests
# must not stretch them.
unset HARNESS_TIMEOUT_SCALE
# guest scripts go here
st_tmp=$(mktemp -d /tmp/loopmq-selftest.XXXXXX)
trap 'rm -rf "$st_tmp"' EXIT
# Extra arguments for tests/vm/run (e.g. --kernel 6.1 or --rev HEAD)
read -r -a st_args <<<"${SELFTEST_RUN_ARGS:-}"

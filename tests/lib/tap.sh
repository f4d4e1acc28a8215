# SPDX-License-Identifier: GPL-2.0
# TAP helpers for guest tests: source it with ". /tests/lib/tap.sh".
#
#   check "desc" CMD [ARGS...]     pass if CMD exits 0 (its output is shown)
#   check_quiet "desc" CMD...      the same, CMD run in a subshell with its
#                                  output shown (last 25 lines) only if it
#                                  fails; returns CMD's status
#   check_fail "desc" CMD...       pass if CMD exits non-zero
#   is "$got" "$want" "desc"       pass if the strings are equal
#   isnt "$got" "$bad" "desc"      pass if they differ
#   like "$got" 'ERE' "desc"       pass if got matches the extended regex
#   expect_errno EBUSY "desc" CMD...  pass if CMD fails and says EBUSY (its
#                                  name, number or strerror text in the output)
#   pass "desc" / fail "desc" [why]  record an outcome directly
#   skip "desc" "why"              record a skipped check
#   skip_all "why"                 skip the whole test (exit 77)
#   require_cmd CMD... / require_module MOD...   skip_all if missing
#   diag "text"                    a "# text" line
#   part NAME                      true unless LMQ_PART (NAME,NAME...) is
#                                  set and leaves NAME out: a test's parts
#                                  that a mutant's probe runs alone
#   done_testing                   print "N passed, N failed" (and skipped);
#                                  returns 1 if anything failed or nothing was
#                                  checked: end a test with it.
#   stop_testing                   done_testing, then exit with its status:
#                                  give up early (after a fail)
# Every check prints "ok N desc" or "not ok N desc".

_tap_n=0 _tap_pass=0 _tap_fail=0 _tap_skip=0

# The harness shows a failing test's reason from the file $HARNESS_NOTE.
_tap_note() { [ -n "${HARNESS_NOTE:-}" ] && echo "$*" >>"$HARNESS_NOTE"; return 0; }

pass() {
	_tap_n=$((_tap_n + 1)) _tap_pass=$((_tap_pass + 1))
	echo "ok $_tap_n $1"
}

fail() {
	_tap_n=$((_tap_n + 1)) _tap_fail=$((_tap_fail + 1))
	echo "not ok $_tap_n $1${2:+ # $2}"
	_tap_note "$1${2:+: $2}"
	# A mutant's probe needs one failure, not the rest of the test: the
	# harness's cleanup undoes what the test leaves (tests/mutants/run)
	if [ -n "${LMQ_FIRST_FAIL:-}" ]; then
		echo "# LMQ_FIRST_FAIL: the test ends at its first failed check"
		exit 1
	fi
	return 1
}

skip() {
	_tap_n=$((_tap_n + 1)) _tap_skip=$((_tap_skip + 1))
	echo "ok $_tap_n $1 # SKIP ${2:-}"
}

diag() { echo "# $*"; }

check() {
	local desc=$1 rc=0
	shift
	"$@" || rc=$?
	if [ $rc -eq 0 ]; then pass "$desc"; else fail "$desc" "'$*' exited $rc"; fi
}

check_quiet() {
	local desc=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if [ $rc -eq 0 ]; then pass "$desc"; else
		fail "$desc" "exit $rc"; printf '%s\n' "$out" | tail -n 25 | sed 's/^/#   /'; fi
	return $rc
}

check_fail() {
	local desc=$1 rc=0
	shift
	"$@" || rc=$?
	if [ $rc -ne 0 ]; then pass "$desc"; else fail "$desc" "'$*' succeeded"; fi
}

is() {
	if [ "$1" = "$2" ]; then pass "$3"; else fail "$3" "got '$1', want '$2'"; fi
}

isnt() {
	if [ "$1" != "$2" ]; then pass "$3"; else fail "$3" "got '$1'"; fi
}

like() {
	if [[ $1 =~ $2 ]]; then pass "$3"; else fail "$3" "'$1' does not match /$2/"; fi
}

# errno name -> "number|strerror text" (glibc wording)
_tap_errno() {
	case $1 in
	EPERM) echo "1|Operation not permitted";;
	ENOENT) echo "2|No such file or directory";;
	EIO) echo "5|Input/output error";;
	ENXIO) echo "6|No such device or address";;
	EBADF) echo "9|Bad file descriptor";;
	EAGAIN) echo "11|Resource temporarily unavailable";;
	ENOMEM) echo "12|Cannot allocate memory";;
	EACCES) echo "13|Permission denied";;
	EFAULT) echo "14|Bad address";;
	EBUSY) echo "16|Device or resource busy";;
	EEXIST) echo "17|File exists";;
	EXDEV) echo "18|Invalid cross-device link";;
	ENODEV) echo "19|No such device";;
	ENOTDIR) echo "20|Not a directory";;
	EISDIR) echo "21|Is a directory";;
	EINVAL) echo "22|Invalid argument";;
	ENOTTY) echo "25|Inappropriate ioctl for device";;
	ETXTBSY) echo "26|Text file busy";;
	EFBIG) echo "27|File too large";;
	ENOSPC) echo "28|No space left on device";;
	ESPIPE) echo "29|Illegal seek";;
	EROFS) echo "30|Read-only file system";;
	ERANGE) echo "34|Numerical result out of range";;
	ENOSYS) echo "38|Function not implemented";;
	EOVERFLOW) echo "75|Value too large for defined data type";;
	EOPNOTSUPP) echo "95|Operation not supported";;
	*) echo "x|$1";;
	esac
}

expect_errno() {
	local name=$1 desc=$2 out rc=0 num text
	shift 2
	out=$("$@" 2>&1) || rc=$?
	[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/#   /'
	IFS='|' read -r num text <<<"$(_tap_errno "$name")"
	if [ $rc -eq 0 ]; then
		fail "$desc" "'$*' succeeded, expected $name"
	elif [[ $out == *"$text"* || $out =~ (^|[^A-Z])$name([^A-Z]|$) ||
		$out =~ (errno|error)[\ =:]*-?$num([^0-9]|$) ]]; then
		pass "$desc"
	else
		fail "$desc" "'$*' failed (status $rc) but not with $name"
	fi
}

# part NAME: run this part of the test?  LMQ_PART, set by a mutant's
# wrapper (tests/mutants/run, "# Part:"), names the parts to run; unset,
# every part runs.
part() {
	[ -z "${LMQ_PART:-}" ] && return 0
	case ",$LMQ_PART," in *",$1,"*) return 0;; esac
	diag "part $1: not run (LMQ_PART=$LMQ_PART)"
	return 1
}

skip_all() {
	echo "1..0 # SKIP $*"
	_tap_note "$*"
	exit 77
}

require_cmd() {
	local c
	for c; do command -v "$c" >/dev/null || skip_all "no $c"; done
}

require_module() {
	local m
	for m; do modprobe -q "$m" 2>/dev/null || skip_all "module $m not available"; done
}

done_testing() {
	local total=$((_tap_pass + _tap_fail))
	if [ "$_tap_skip" -gt 0 ]; then
		echo "$_tap_pass passed, $_tap_fail failed, $_tap_skip skipped"
	else
		echo "$_tap_pass passed, $_tap_fail failed"
	fi
	if [ $total -eq 0 ] && [ "$_tap_skip" -eq 0 ]; then
		echo "# no checks were run"
		_tap_note "no checks were run"
		return 1
	fi
	# A test whose every check skipped proved nothing: a failure (a
	# test that cannot run here says so with skip_all, which the
	# harness holds against the kernel's list of allowed skips).
	if [ $total -eq 0 ]; then
		echo "# every check was skipped"
		_tap_note "every check was skipped"
		return 1
	fi
	[ "$_tap_fail" -eq 0 ]
}

stop_testing() {
	done_testing
	exit
}

# SPDX-License-Identifier: GPL-2.0
# Deprecated: a shim for scripts outside the tree.  Guest tests source
# /tests/lib/guest.sh (see there); this maps the old names onto it.
. /tests/lib/guest.sh
t_ok()   { pass "$*"; }
t_fail() { fail "$*"; }
t_skip() { skip "$1" "${2:-}"; }
t_diag() { diag "$*"; }
t_is()   { is "$@"; }
t_run()  { check_quiet "$@"; }
t_done() { stop_testing; }
require_cmd lmq-ioctl lmq-stats fio

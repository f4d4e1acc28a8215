#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Print the names of one of the lists in include/uapi/loopmq.h, one per
# line in enum order, as sysfs shows them:
#   scripts/names.sh modes       direct kthread ...
#   scripts/names.sh paths       inline aio_inline ...
#   scripts/names.sh fallbacks   stack journal ... (sysfs: fb_stack ...)
#   scripts/names.sh dio-settings  off on auto (sysfs loopmq/direct_io)
#   scripts/names.sh dio-reasons   set written ... (loopmq/dio_auto reason)
# For the host-side scripts (tests/crash/run, bench/run, bench/report.py),
# which cannot read a running module's sysfs.  The C preprocessor expands
# the list, so this reads what the module and the tools are built from.
set -euo pipefail
case ${1:-} in
modes) list=LOOPMQ_MODES;;
paths) list=LOOPMQ_PATHS;;
fallbacks) list=LOOPMQ_FALLBACKS;;
dio-settings) list=LOOPMQ_DIO_SETTINGS;;
dio-reasons) list=LOOPMQ_DIO_REASONS;;
*) sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
printf '#include <uapi/loopmq.h>\n#define N(id, name, help) @name@\n%s(N)\n' "$list" |
	${CPP:-cpp} -P -I"$top/include" - | grep -o '@"[^"]*"@' | tr -d '@"'

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Smoke test: loopmq loads with modprobe, shows in /proc/modules, unloads.
# timeout: 60
DESCRIPTION="loopmq.ko loads with modprobe, shows in /proc/modules and unloads"
. /tests/lib/guest.sh

not_loaded() { ! grep -q '^loopmq ' /proc/modules; }

check "loopmq is not loaded at test start" not_loaded
check "modprobe loopmq" modprobe loopmq
check "loopmq listed in /proc/modules" grep -q '^loopmq ' /proc/modules
check "module file is the extra/ build" \
	bash -c 'modinfo -n loopmq | grep -q "/extra/loopmq.ko$"'
check "rmmod loopmq" rmmod loopmq
check "loopmq gone from /proc/modules" not_loaded
done_testing

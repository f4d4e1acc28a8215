# SPDX-License-Identifier: GPL-2.0
# Deprecated: a shim for scripts outside the tree.  Guest tests source
# /tests/lib/guest.sh (see there); this maps the old names onto it.
. /tests/lib/guest.sh
P=$LMQ_NAME MOD=$LMQ_MOD
CTL=$LOOPMQCTL
[ -n "$CTL" ] || skip_all "no loopmqctl in the guest"
is_mq() { lmq_is_mq; }
load_driver() { lmq_load "$@" || skip_all "cannot load $LMQ_MOD"; }
detach_all_ours() { lmq_detach_all; }

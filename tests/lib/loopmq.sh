# SPDX-License-Identifier: GPL-2.0
# Deprecated: a shim for scripts outside the tree.  Guest tests source
# /tests/lib/guest.sh, which has lmq_load [NR] [PARAM=V...], lmq_unload,
# lmq_backing and lmq_cleanup.
. /tests/lib/guest.sh

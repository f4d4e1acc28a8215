// SPDX-License-Identifier: GPL-2.0
/*
 * loopmq: a loop block device on blk-mq with per-request dispatch.
 */
#include <linux/module.h>

static int __init loopmq_init(void)
{
	return 0;
}

static void __exit loopmq_exit(void)
{
}

module_init(loopmq_init);
module_exit(loopmq_exit);
MODULE_DESCRIPTION("loop block device with per-request dispatch");
MODULE_LICENSE("GPL");

// SPDX-License-Identifier: GPL-2.0
/*
 * warnmod: a test-only module that triggers a kernel warning on demand, so
 * the guest test harness can prove that it catches one.
 *
 *   echo 1 > /sys/module/warnmod/parameters/warn    WARN() once per write
 *   modprobe warnmod warn_on_load=1                 WARN() while loading
 */
#include <linux/bug.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

static bool warn_on_load;
module_param(warn_on_load, bool, 0444);
MODULE_PARM_DESC(warn_on_load, "trigger a WARN from module init");

static int warnmod_set_warn(const char *val, const struct kernel_param *kp)
{
	bool on;
	int ret;

	ret = kstrtobool(val, &on);
	if (ret)
		return ret;
	WARN(on, "warnmod: warning requested through the warn parameter\n");
	return 0;
}

static const struct kernel_param_ops warnmod_warn_ops = {
	.set = warnmod_set_warn,
	.get = NULL,
};

module_param_cb(warn, &warnmod_warn_ops, NULL, 0200);
MODULE_PARM_DESC(warn, "write 1 to trigger a WARN");

static int __init warnmod_init(void)
{
	WARN(warn_on_load, "warnmod: warning requested at load\n");
	return 0;
}

static void __exit warnmod_exit(void)
{
}

module_init(warnmod_init);
module_exit(warnmod_exit);
MODULE_DESCRIPTION("test-only module that triggers a WARN on demand");
MODULE_LICENSE("GPL");

// SPDX-License-Identifier: GPL-2.0
/*
 * warnmod: a test-only module that misbehaves on demand, so the guest test
 * harness can prove that it notices.
 *
 *   echo 1 > /sys/module/warnmod/parameters/warn    WARN() once per write
 *   modprobe warnmod warn_on_load=1                 WARN() while loading
 *   echo /dev/X > /sys/module/warnmod/parameters/hold
 *                 open /dev/X from the kernel and keep it open (a leaked
 *                 reference: the driver behind it cannot be unloaded) until
 *                 an empty write or until warnmod is unloaded
 *   echo N > /sys/module/warnmod/parameters/spin
 *                 spin N seconds on one CPU with preemption off (a soft
 *                 lockup, and an RCU stall, once their timeouts are short)
 */
#include <linux/bug.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/preempt.h>
#include <linux/string.h>

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

static int warnmod_set_spin(const char *val, const struct kernel_param *kp)
{
	unsigned int secs, ms;
	int ret;

	ret = kstrtouint(val, 0, &secs);
	if (ret)
		return ret;
	if (secs > 60)
		return -EINVAL;
	preempt_disable();
	for (ms = 0; ms < secs * 1000; ms++)
		mdelay(1);
	preempt_enable();
	return 0;
}

static const struct kernel_param_ops warnmod_spin_ops = {
	.set = warnmod_set_spin,
	.get = NULL,
};

module_param_cb(spin, &warnmod_spin_ops, NULL, 0200);
MODULE_PARM_DESC(spin, "write N to spin N seconds with preemption off");

static DEFINE_MUTEX(warnmod_hold_lock);
static struct file *warnmod_held;

static void warnmod_release(void)
{
	if (warnmod_held) {
		filp_close(warnmod_held, NULL);
		warnmod_held = NULL;
	}
}

static int warnmod_set_hold(const char *val, const struct kernel_param *kp)
{
	char path[256];
	struct file *f;
	size_t len;

	if (strscpy(path, val, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	len = strlen(path);
	if (len && path[len - 1] == '\n')
		path[--len] = '\0';

	mutex_lock(&warnmod_hold_lock);
	warnmod_release();
	if (len) {
		f = filp_open(path, O_RDONLY, 0);
		if (IS_ERR(f)) {
			mutex_unlock(&warnmod_hold_lock);
			return PTR_ERR(f);
		}
		warnmod_held = f;
		pr_info("warnmod: holding %s open\n", path);
	}
	mutex_unlock(&warnmod_hold_lock);
	return 0;
}

static const struct kernel_param_ops warnmod_hold_ops = {
	.set = warnmod_set_hold,
	.get = NULL,
};

module_param_cb(hold, &warnmod_hold_ops, NULL, 0200);
MODULE_PARM_DESC(hold, "path to keep open from the kernel (empty: close)");

static int __init warnmod_init(void)
{
	WARN(warn_on_load, "warnmod: warning requested at load\n");
	return 0;
}

static void __exit warnmod_exit(void)
{
	mutex_lock(&warnmod_hold_lock);
	warnmod_release();
	mutex_unlock(&warnmod_hold_lock);
}

module_init(warnmod_init);
module_exit(warnmod_exit);
MODULE_DESCRIPTION("test-only module that WARNs or leaks a reference on demand");
MODULE_LICENSE("GPL");

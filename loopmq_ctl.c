// SPDX-License-Identifier: GPL-2.0
/*
 * loopmq's control device, /dev/loopmq-control (/dev/loop-control with
 * replace_loop=1): LOOP_CTL_ADD,
 * LOOP_CTL_REMOVE and LOOP_CTL_GET_FREE with the numbers and errnos of
 * the stock driver's /dev/loop-control.  Devices are added, removed and
 * looked up by loopmq_main.c, which keeps the device index and its lock.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>

#include "loopmq.h"

static long loopmq_control_ioctl(struct file *file, unsigned int cmd,
				 unsigned long arg)
{
	switch (cmd) {
	case LOOP_CTL_ADD:
		return loopmq_add((int)arg);
	case LOOP_CTL_REMOVE:
		return loopmq_control_remove((int)arg);
	case LOOP_CTL_GET_FREE:
		return loopmq_control_get_free();
	default:
		return -ENOSYS;
	}
}

static const struct file_operations loopmq_ctl_fops = {
	.owner		= THIS_MODULE,
	.open		= nonseekable_open,
	.unlocked_ioctl	= loopmq_control_ioctl,
	.compat_ioctl	= loopmq_control_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice loopmq_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= LOOPMQ_CONTROL_NAME,
	.fops	= &loopmq_ctl_fops,
};

/* replace: the stock driver's /dev/loop-control, at its fixed minor */
int loopmq_ctl_register(bool replace)
{
	int err;

	if (replace) {
		loopmq_misc.minor = LOOP_CTRL_MINOR;
		loopmq_misc.name = "loop-control";
	}
	err = misc_register(&loopmq_misc);
	if (err == -EBUSY && replace)
		pr_err("replace_loop=1: misc minor %d (loop-control) is taken\n",
		       LOOP_CTRL_MINOR);
	return err;
}

void loopmq_ctl_unregister(void)
{
	misc_deregister(&loopmq_misc);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * loopmq's block device ioctls: the stock loop driver's (LOOP_SET_FD ...
 * LOOP_CONFIGURE) and loopmq's own of include/uapi/loopmq.h.  What is
 * here is the interface: the copies to and from user space, the legacy
 * struct loop_info, the permission checks and the 32-bit entry point.
 * What a command does to the device, under its locks, is in
 * loopmq_main.c.
 */
#include <linux/blkdev.h>
#include <linux/capability.h>
#include <linux/compat.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "loopmq.h"
#include "loopmq_compat.h"

/*
 * The legacy struct loop_info, converted to and from loop_info64.  Both
 * take a kernel copy: the native ioctl and the 32-bit one fill it from
 * their own layout.
 */
static int loopmq_set_status_old(struct loopmq_device *lo,
				 const struct loop_info *info)
{
	struct loop_info64 info64 = { };

	info64.lo_number = info->lo_number;
	info64.lo_device = info->lo_device;
	info64.lo_inode = info->lo_inode;
	info64.lo_rdevice = info->lo_rdevice;
	info64.lo_offset = info->lo_offset;
	info64.lo_encrypt_type = info->lo_encrypt_type;
	info64.lo_encrypt_key_size = info->lo_encrypt_key_size;
	info64.lo_flags = info->lo_flags;
	memcpy(info64.lo_file_name, info->lo_name, LO_NAME_SIZE);
	return loopmq_set_status(lo, &info64);
}

static int loopmq_get_status_old(struct loopmq_device *lo,
				 struct loop_info *info)
{
	struct loop_info64 info64;
	int err;

	err = loopmq_get_status(lo, &info64);
	if (err)
		return err;
	memset(info, 0, sizeof(*info));
	info->lo_number = info64.lo_number;
	info->lo_device = info64.lo_device;
	info->lo_inode = info64.lo_inode;
	info->lo_rdevice = info64.lo_rdevice;
	info->lo_offset = info64.lo_offset;
	info->lo_flags = info64.lo_flags;
	memcpy(info->lo_name, info64.lo_file_name, LO_NAME_SIZE);
	/* Refuse to truncate silently. */
	if (info->lo_device != info64.lo_device ||
	    info->lo_rdevice != info64.lo_rdevice ||
	    info->lo_inode != info64.lo_inode ||
	    info->lo_offset != info64.lo_offset)
		return -EOVERFLOW;
	return 0;
}

static noinline_for_stack int
loopmq_ioctl_status_old(struct loopmq_device *lo, unsigned int cmd,
			void __user *argp)
{
	struct loop_info info;
	int err;

	if (cmd == LOOP_SET_STATUS) {
		if (copy_from_user(&info, argp, sizeof(info)))
			return -EFAULT;
		return loopmq_set_status_old(lo, &info);
	}
	if (!argp)
		return -EINVAL;
	err = loopmq_get_status_old(lo, &info);
	if (!err && copy_to_user(argp, &info, sizeof(info)))
		err = -EFAULT;
	return err;
}

static int loopmq_ioctl_mode(struct loopmq_device *lo, unsigned int cmd,
			     void __user *argp)
{
	struct loopmq_mode_info mi;

	if (cmd == LOOPMQ_GET_MODE) {
		memset(&mi, 0, sizeof(mi));
		mi.mode = READ_ONCE(lo->mode);
		return copy_to_user(argp, &mi, sizeof(mi)) ? -EFAULT : 0;
	}
	if (copy_from_user(&mi, argp, sizeof(mi)))
		return -EFAULT;
	if (mi.mode >= LOOPMQ_MODE_NR || mi.flags || mi.reserved[0] ||
	    mi.reserved[1] || mi.reserved[2])
		return -EINVAL;
	WRITE_ONCE(lo->mode, mi.mode);
	return 0;
}

/*
 * Each ioctl that copies a large structure does it in a function of its
 * own, so that loopmq_ioctl()'s frame stays small.
 */
static noinline_for_stack int
loopmq_ioctl_configure(struct loopmq_device *lo, blk_mode_t mode,
		       struct block_device *bdev, unsigned int cmd,
		       unsigned long arg)
{
	struct loop_config config;

	if (cmd == LOOP_SET_FD) {
		/* The legacy form of LOOP_CONFIGURE, with default settings. */
		memset(&config, 0, sizeof(config));
		config.fd = arg;
	} else if (copy_from_user(&config, (void __user *)arg,
				  sizeof(config))) {
		return -EFAULT;
	}
	return loopmq_configure(lo, mode, bdev, &config);
}

static noinline_for_stack int
loopmq_ioctl_status64(struct loopmq_device *lo, unsigned int cmd,
		      void __user *argp)
{
	struct loop_info64 info64;
	int err;

	if (cmd == LOOP_SET_STATUS64) {
		if (copy_from_user(&info64, argp, sizeof(info64)))
			return -EFAULT;
		return loopmq_set_status(lo, &info64);
	}
	if (!argp)
		return -EINVAL;
	err = loopmq_get_status(lo, &info64);
	if (!err && copy_to_user(argp, &info64, sizeof(info64)))
		err = -EFAULT;
	return err;
}

static noinline_for_stack int
loopmq_ioctl_get_stats(struct loopmq_device *lo, void __user *argp)
{
	struct loopmq_stats stats;

	loopmq_sum_stats(lo, &stats);
	return copy_to_user(argp, &stats, sizeof(stats)) ? -EFAULT : 0;
}

/*
 * May this opener change the device?  Asked only for the commands that do,
 * as capable() is an audited privilege check, not a plain test.
 */
static bool loopmq_may_write(blk_mode_t mode)
{
	return (mode & BLK_OPEN_WRITE) || capable(CAP_SYS_ADMIN);
}

int loopmq_ioctl(struct block_device *bdev, blk_mode_t mode,
		 unsigned int cmd, unsigned long arg)
{
	struct loopmq_device *lo = bdev->bd_disk->private_data;
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case LOOP_SET_FD:
	case LOOP_CONFIGURE:
		return loopmq_ioctl_configure(lo, mode, bdev, cmd, arg);
	case LOOP_CHANGE_FD:
		return loopmq_change_fd(lo, bdev, arg);
	case LOOP_CLR_FD:
		return loopmq_clr_fd(lo);
	case LOOP_SET_STATUS:
		if (!loopmq_may_write(mode))
			return -EPERM;
		fallthrough;
	case LOOP_GET_STATUS:
		return loopmq_ioctl_status_old(lo, cmd, argp);
	case LOOP_SET_STATUS64:
		if (!loopmq_may_write(mode))
			return -EPERM;
		fallthrough;
	case LOOP_GET_STATUS64:
		return loopmq_ioctl_status64(lo, cmd, argp);
	case LOOP_SET_BLOCK_SIZE:
		if (!loopmq_may_write(mode))
			return -EPERM;
		return loopmq_set_block_size(lo, mode, bdev, arg);
	case LOOP_SET_CAPACITY:
		if (!loopmq_may_write(mode))
			return -EPERM;
		return loopmq_set_capacity(lo);
	case LOOP_SET_DIRECT_IO:
		if (!loopmq_may_write(mode))
			return -EPERM;
		return loopmq_set_dio(lo, arg);
	case LOOPMQ_SET_DIO:
		if (!loopmq_may_write(mode))
			return -EPERM;
		return loopmq_set_dio_setting(lo, arg);
	case LOOPMQ_SET_MODE:
		if (!loopmq_may_write(mode))
			return -EPERM;
		fallthrough;
	case LOOPMQ_GET_MODE:
		return loopmq_ioctl_mode(lo, cmd, argp);
	case LOOPMQ_GET_STATS:
		return loopmq_ioctl_get_stats(lo, argp);
	case LOOPMQ_RESET_STATS:
		if (!loopmq_may_write(mode))
			return -EPERM;
		loopmq_reset_stats(lo);
		return 0;
	case LOOPMQ_SET_REMAP:
		/* A pin refuses everyone's writes to the file, as swapon. */
		if (!loopmq_may_write(mode) ||
		    (arg == LOOPMQ_REMAP_PINNED && !capable(CAP_SYS_ADMIN)))
			return -EPERM;
		return loopmq_set_remap(lo, arg);
	default:
		/* What the stock driver answers to a command it does not know. */
		return -EINVAL;
	}
}

#ifdef CONFIG_COMPAT
/*
 * struct loop_info as a 32-bit program lays it out: long is 32 bits there,
 * and so is the old dev_t on most architectures (16 on x86).
 */
struct loopmq_loop_info32 {
	compat_int_t	lo_number;
	compat_dev_t	lo_device;
	compat_ulong_t	lo_inode;
	compat_dev_t	lo_rdevice;
	compat_int_t	lo_offset;
	compat_int_t	lo_encrypt_type;
	compat_int_t	lo_encrypt_key_size;
	compat_int_t	lo_flags;
	char		lo_name[LO_NAME_SIZE];
	unsigned char	lo_encrypt_key[LO_KEY_SIZE];
	compat_ulong_t	lo_init[2];
	char		reserved[4];
};

/*
 * The legacy calls from a 32-bit program: its struct widened to the native
 * one, or the native answer narrowed to it, with EOVERFLOW for a device
 * number or inode that does not fit, as for the native call's offset.
 */
static noinline_for_stack int
loopmq_compat_status_old(struct loopmq_device *lo, unsigned int cmd,
			 struct loopmq_loop_info32 __user *argp)
{
	struct loopmq_loop_info32 info32;
	struct loop_info info;
	int err;

	if (cmd == LOOP_SET_STATUS) {
		if (copy_from_user(&info32, argp, sizeof(info32)))
			return -EFAULT;
		memset(&info, 0, sizeof(info));
		info.lo_number = info32.lo_number;
		info.lo_device = info32.lo_device;
		info.lo_inode = info32.lo_inode;
		info.lo_rdevice = info32.lo_rdevice;
		info.lo_offset = info32.lo_offset;
		info.lo_encrypt_type = info32.lo_encrypt_type;
		info.lo_encrypt_key_size = info32.lo_encrypt_key_size;
		info.lo_flags = info32.lo_flags;
		memcpy(info.lo_name, info32.lo_name, LO_NAME_SIZE);
		return loopmq_set_status_old(lo, &info);
	}
	if (!argp)
		return -EINVAL;
	err = loopmq_get_status_old(lo, &info);
	if (err)
		return err;
	memset(&info32, 0, sizeof(info32));
	info32.lo_number = info.lo_number;
	info32.lo_device = info.lo_device;
	info32.lo_inode = info.lo_inode;
	info32.lo_rdevice = info.lo_rdevice;
	info32.lo_offset = info.lo_offset;
	info32.lo_flags = info.lo_flags;
	memcpy(info32.lo_name, info.lo_name, LO_NAME_SIZE);
	if (info32.lo_device != info.lo_device ||
	    info32.lo_rdevice != info.lo_rdevice ||
	    info32.lo_inode != info.lo_inode)
		return -EOVERFLOW;
	return copy_to_user(argp, &info32, sizeof(info32)) ? -EFAULT : 0;
}

/*
 * 32-bit callers: every structure but the legacy struct loop_info has the
 * same layout, so only pointers need converting.
 */
int loopmq_compat_ioctl(struct block_device *bdev,
			blk_mode_t mode, unsigned int cmd,
			unsigned long arg)
{
	struct loopmq_device *lo = bdev->bd_disk->private_data;

	switch (cmd) {
	case LOOP_SET_STATUS:
		if (!loopmq_may_write(mode))
			return -EPERM;
		fallthrough;
	case LOOP_GET_STATUS:
		return loopmq_compat_status_old(lo, cmd, compat_ptr(arg));
	case LOOP_SET_STATUS64:
	case LOOP_GET_STATUS64:
	case LOOP_CONFIGURE:
	case LOOPMQ_SET_MODE:
	case LOOPMQ_GET_MODE:
	case LOOPMQ_GET_STATS:
		arg = (unsigned long)compat_ptr(arg);
		fallthrough;
	default:
		return loopmq_ioctl(bdev, mode, cmd, arg);
	}
}
#endif

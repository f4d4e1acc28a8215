// SPDX-License-Identifier: GPL-2.0
/*
 * loopmq's sysfs: the stock driver's /sys/block/<dev>/loop/ group while a
 * backing file is bound, and loopmq's own /sys/block/<dev>/loopmq/ (mode,
 * stats, stack) for the device's lifetime.  The names come from the lists
 * of include/uapi/loopmq.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/device.h>
#include <linux/math64.h>
#include <linux/percpu.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "loopmq.h"

#define LOOPMQ_FB_NAME(id, name, help)	"fb_" name,

/* ---- sysfs: /sys/block/loopmqN/loop/, as the stock driver ---- */

static struct loopmq_device *loopmq_dev_of(struct device *dev)
{
	return dev_to_disk(dev)->private_data;
}

static ssize_t backing_file_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct loopmq_device *lo = loopmq_dev_of(dev);
	char *p = NULL;
	ssize_t len;

	spin_lock(&lo->file_lock);
	if (lo->b.file)
		p = file_path(lo->b.file, buf, PAGE_SIZE - 1);
	spin_unlock(&lo->file_lock);
	if (IS_ERR_OR_NULL(p))
		return p ? PTR_ERR(p) : 0;
	len = strlen(p);
	memmove(buf, p, len);
	buf[len++] = '\n';
	buf[len] = 0;
	return len;
}

static ssize_t offset_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  (unsigned long long)loopmq_dev_of(dev)->b.offset);
}

static ssize_t sizelimit_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  (unsigned long long)loopmq_dev_of(dev)->sizelimit);
}

static ssize_t loopmq_flag_show(struct device *dev, char *buf, int flag)
{
	return sysfs_emit(buf, "%d\n",
			  !!(READ_ONCE(loopmq_dev_of(dev)->lo_flags) & flag));
}

static ssize_t autoclear_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return loopmq_flag_show(dev, buf, LO_FLAGS_AUTOCLEAR);
}

static ssize_t partscan_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	return loopmq_flag_show(dev, buf, LO_FLAGS_PARTSCAN);
}

static ssize_t dio_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	return loopmq_flag_show(dev, buf, LO_FLAGS_DIRECT_IO);
}

static DEVICE_ATTR_RO(backing_file);
static DEVICE_ATTR_RO(offset);
static DEVICE_ATTR_RO(sizelimit);
static DEVICE_ATTR_RO(autoclear);
static DEVICE_ATTR_RO(partscan);
static DEVICE_ATTR_RO(dio);

static struct attribute *loopmq_loop_attrs[] = {
	&dev_attr_backing_file.attr,
	&dev_attr_offset.attr,
	&dev_attr_sizelimit.attr,
	&dev_attr_autoclear.attr,
	&dev_attr_partscan.attr,
	&dev_attr_dio.attr,
	NULL,
};

const struct attribute_group loopmq_loop_group = {
	.name	= "loop",
	.attrs	= loopmq_loop_attrs,
};

/* ---- sysfs: /sys/block/loopmqN/loopmq/, for the device's lifetime ---- */

static ssize_t mode_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n",
			  loopmq_mode_names[READ_ONCE(loopmq_dev_of(dev)->mode)]);
}

static ssize_t mode_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	int mode = sysfs_match_string(loopmq_mode_names, buf);

	if (mode < 0)
		return -EINVAL;
	/* Requests read the mode once; in-flight ones finish on their path. */
	WRITE_ONCE(loopmq_dev_of(dev)->mode, mode);
	return count;
}

static const char * const loopmq_path_names[LOOPMQ_PATH_NR] = {
	LOOPMQ_PATHS(LOOPMQ_NAME)
};

/* As sysfs shows them: "fb_" and the reason. */
static const char * const loopmq_fb_names[LOOPMQ_FB_NR] = {
	LOOPMQ_FALLBACKS(LOOPMQ_FB_NAME)
};

void loopmq_sum_stats(struct loopmq_device *lo, struct loopmq_stats *s)
{
	int cpu, i;

	memset(s, 0, sizeof(*s));
	s->mode = READ_ONCE(lo->mode);
	s->nr_paths = LOOPMQ_PATH_NR;
	s->nr_fallbacks = LOOPMQ_FB_NR;
	for_each_possible_cpu(cpu) {
		struct loopmq_pcpu_stats *p = per_cpu_ptr(lo->stats, cpu);

		for (i = 0; i < LOOPMQ_PATH_NR; i++)
			s->path[i] += READ_ONCE(p->path[i]);
		for (i = 0; i < LOOPMQ_FB_NR; i++)
			s->fallback[i] += READ_ONCE(p->fallback[i]);
		s->kthread_wakeups += READ_ONCE(p->kthread_wakeups);
		s->errors += READ_ONCE(p->errors);
	}
	s->peak_inflight = READ_ONCE(lo->peak_inflight);
}

void loopmq_reset_stats(struct loopmq_device *lo)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(lo->stats, cpu), 0,
		       sizeof(struct loopmq_pcpu_stats));
	WRITE_ONCE(lo->peak_inflight, 0);
	WRITE_ONCE(lo->stack_used_max, 0);
	WRITE_ONCE(lo->stack_entry_max, 0);
}

static ssize_t stats_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct loopmq_stats s;
	int i, len = 0;

	loopmq_sum_stats(loopmq_dev_of(dev), &s);
	for (i = 0; i < LOOPMQ_PATH_NR; i++)
		len += sysfs_emit_at(buf, len, "%s %llu\n", loopmq_path_names[i],
				     s.path[i]);
	for (i = 0; i < LOOPMQ_FB_NR; i++)
		len += sysfs_emit_at(buf, len, "%s %llu\n", loopmq_fb_names[i],
				     s.fallback[i]);
	len += sysfs_emit_at(buf, len, "kthread_wakeups %llu\n",
			     s.kthread_wakeups);
	len += sysfs_emit_at(buf, len, "peak_inflight %llu\n", s.peak_inflight);
	len += sysfs_emit_at(buf, len, "errors %llu\n", s.errors);
	return len;
}

static ssize_t stats_store(struct device *dev, struct device_attribute *attr,
			   const char *buf, size_t count)
{
	unsigned int v;

	if (kstrtouint(buf, 0, &v) || v)
		return -EINVAL;
	loopmq_reset_stats(loopmq_dev_of(dev));
	return count;
}

/* The stack probe's findings: bytes used by inline calls, and before. */
static ssize_t stack_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct loopmq_device *lo = loopmq_dev_of(dev);

	return sysfs_emit(buf, "used_max %u\nentry_max %u\nthread_size %lu\n",
			  READ_ONCE(lo->stack_used_max),
			  READ_ONCE(lo->stack_entry_max), THREAD_SIZE);
}

/* 1 while the backing file is pinned (DOC: pin in loopmq_pin.c). */
static ssize_t pinned_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%d\n", !!READ_ONCE(loopmq_dev_of(dev)->b.pin));
}

/* The direct-I/O setting: off, on or auto (DOC: dio auto in loopmq_dio.c). */
static ssize_t direct_io_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n",
			  loopmq_dio_names[READ_ONCE(loopmq_dev_of(dev)->dio_setting)]);
}

/* As LOOPMQ_SET_DIO: "auto" maps the backing in the writer's context. */
static ssize_t direct_io_store(struct device *dev,
			       struct device_attribute *attr,
			       const char *buf, size_t count)
{
	int setting = sysfs_match_string(loopmq_dio_names, buf);
	int err;

	if (setting < 0)
		return -EINVAL;
	err = loopmq_set_dio_setting(loopmq_dev_of(dev), setting);
	return err ? err : count;
}

/*
 * What the setting chose and why: "chosen" is what the device uses now;
 * for auto, the shares (per mille) of the device's range found to be
 * holes, unwritten and shared when it was mapped, the share of blocks
 * that are costly for direct I/O now, and the switches since; then the
 * costly share of the last full window of writes (-1: none since the
 * mapping or the last discard).
 */
static ssize_t dio_auto_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct loopmq_device *lo = loopmq_dev_of(dev);
	struct loopmq_dio_map *m;
	u64 holes = 0, unwritten = 0, shared = 0, bytes = 1;
	unsigned long costly = 0, nbits = 1;
	int reason, len, err, wp = -1;
	bool dio;

	err = mutex_lock_killable(&lo->mutex);
	if (err)
		return err;
	m = lo->dio_map;
	if (m) {
		holes = m->holes;
		unwritten = m->unwritten;
		shared = m->shared;
		bytes = max_t(u64, m->bytes, 1);
		costly = max(atomic_long_read(&m->costly), 0L);
		nbits = m->nbits;
		wp = READ_ONCE(m->write_permille);
	}
	dio = lo->b.use_dio;
	/*
	 * auto chose direct I/O where the offset and block size do not
	 * allow it: said from the state as it is, since LOOP_SET_BLOCK_SIZE
	 * and LOOP_SET_STATUS change that without a new choice.
	 */
	if (lo->b.pin)
		reason = LOOPMQ_DIO_WHY_PINNED;
	else if (lo->dio_setting == LOOPMQ_DIO_AUTO && lo->want_dio && !dio)
		reason = LOOPMQ_DIO_WHY_ALIGN;
	else
		reason = lo->dio_reason;
	len = sysfs_emit(buf, "setting %s\nchosen %s\nreason %s\n",
			 loopmq_dio_names[lo->dio_setting],
			 loopmq_dio_names[dio ? LOOPMQ_DIO_ON : LOOPMQ_DIO_OFF],
			 loopmq_dio_reason_names[reason]);
	len += sysfs_emit_at(buf, len,
			     "holes_permille %llu\nunwritten_permille %llu\nshared_permille %llu\n",
			     div64_u64(holes * 1000, bytes),
			     div64_u64(unwritten * 1000, bytes),
			     div64_u64(shared * 1000, bytes));
	len += sysfs_emit_at(buf, len,
			     "costly_permille %lu\nblock_size %lu\nswitches %u\n",
			     costly * 1000 / nbits,
			     m ? 1UL << m->shift : 0UL, lo->dio_switches);
	len += sysfs_emit_at(buf, len, "write_costly_permille %d\n", wp);
	mutex_unlock(&lo->mutex);
	return len;
}

static DEVICE_ATTR_RW(mode);
static DEVICE_ATTR_RW(stats);
static DEVICE_ATTR_RO(stack);
static DEVICE_ATTR_RO(pinned);
static DEVICE_ATTR_RW(direct_io);
static DEVICE_ATTR_RO(dio_auto);

static struct attribute *loopmq_attrs[] = {
	&dev_attr_mode.attr,
	&dev_attr_stats.attr,
	&dev_attr_stack.attr,
	&dev_attr_pinned.attr,
	&dev_attr_direct_io.attr,
	&dev_attr_dio_auto.attr,
	NULL,
};

static const struct attribute_group loopmq_group = {
	.name	= "loopmq",
	.attrs	= loopmq_attrs,
};

const struct attribute_group *loopmq_disk_groups[] = {
	&loopmq_group,
	NULL,
};

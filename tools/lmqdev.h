/* SPDX-License-Identifier: GPL-2.0 */
/*
 * lmqdev: a small library of loopmq device operations, used by loopmqctl
 * and its unit tests (tools/tests/unit.c).  The guest test programs in
 * tests/progs do not link it on purpose: they call the ioctls themselves,
 * so that a bug here cannot hide the same bug in the driver's ABI.
 *
 * Every function returning int returns 0 (or a non-negative value where
 * documented) on success and a negative errno on failure; it never prints.
 * Devices are named by index N (/dev/<prefix>N).  The prefix is "loopmq";
 * the TEST-ONLY environment variable LOOPMQCTL_PREFIX=loop points the
 * library at the stock loop driver (/dev/loop-control, /dev/loopN) so the
 * generic parts can be checked without loopmq, and the TEST-ONLY
 * LOOPMQCTL_LEGACY_ATTACH=1 makes lmq_attach() skip LOOP_CONFIGURE and take
 * the LOOP_SET_FD + LOOP_SET_STATUS64 path it uses on old kernels.
 */
#ifndef LMQDEV_H
#define LMQDEV_H

#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <sys/types.h>

#include "uapi/loopmq.h"

#define LMQ_NAME_MAX	64

/*
 * The direct-I/O state of a bound loopmq device, as sysfs loopmq/dio_auto
 * gives it: the setting, what the device uses now and why; for "auto", the
 * shares of the device's range (per mille) that were holes, unwritten and
 * shared extents when it was mapped, the share of its blocks costly for
 * direct I/O now, the block size of that map and the switches since; the
 * costly share of the last full window of written blocks (-1: none since
 * the mapping or the last discard, or a module without the windows).
 * A name this tool does not know (a newer module's) is -1.
 */
struct lmq_dio {
	int		setting;		/* enum loopmq_dio_setting */
	int		chosen;			/* LOOPMQ_DIO_ON or LOOPMQ_DIO_OFF */
	int		reason;			/* enum loopmq_dio_reason */
	uint64_t	holes_permille;
	uint64_t	unwritten_permille;
	uint64_t	shared_permille;
	uint64_t	costly_permille;
	uint64_t	block_size;		/* 0: no map */
	uint64_t	switches;
	int64_t		write_costly_permille;
};

/* Everything known about one device, bound or not. */
struct lmq_info {
	int		index;
	char		path[LMQ_NAME_MAX];	/* /dev/loopmqN */
	char		disk[LMQ_NAME_MAX];	/* loopmqN */
	int		bound;			/* a backing file is attached */
	unsigned int	maj, min;		/* of the device itself */
	char		back_file[PATH_MAX];	/* sysfs loop/backing_file */
	uint64_t	back_ino;
	unsigned int	back_maj, back_min;
	uint64_t	back_devno;		/* lo_device as the kernel encodes it */
	uint64_t	offset;
	uint64_t	sizelimit;
	int		autoclear, partscan, ro, dio;
	unsigned int	log_sec;		/* logical block size, 0 if unknown */
	int		have_mode;		/* mode is valid */
	unsigned int	mode;			/* enum loopmq_mode */
	int		have_stats;		/* stats is valid */
	struct loopmq_stats stats;
	int		have_dio_state;		/* dio_state is valid (bound) */
	struct lmq_dio	dio_state;
};

/* What to attach and how. */
struct lmq_attach {
	const char	*file;
	uint64_t	offset;
	uint64_t	sizelimit;
	unsigned int	block_size;	/* 0 = driver default */
	int		read_only;
	int		partscan;
	/*
	 * enum loopmq_dio_setting, or -1 to leave it to the driver (its
	 * dio_default): on goes with the attach (LO_FLAGS_DIRECT_IO), off and
	 * auto are set right after it
	 */
	int		dio_setting;
	int		mode;		/* enum loopmq_mode, or -1 to leave alone */
	int		remap;		/* LOOPMQ_REMAP_*, or -1 to leave alone */
};

/* Names and paths. */
const char *lmq_prefix(void);			/* "loopmq" (or test override) */
const char *lmq_control_path(void);		/* /dev/loopmq-control */
void lmq_dev_path(int index, char *buf, size_t len);
/*
 * Map a user's device argument to an index: "/dev/loopmqN", "loopmqN",
 * "N", or any path to a block device node whose disk is loopmqN.
 * -ENODEV: not a loopmq device name; -ENOENT: path does not exist.
 */
int lmq_parse_device(const char *arg, int *index);

/* Control device. */
int lmq_control_open(void);			/* fd or -errno */
int lmq_find_free(void);			/* index or -errno */
int lmq_add(int index);				/* index or -errno; -1 = any */
int lmq_remove(int index);

/* Device state. */
int lmq_exists(int index);			/* 1 if the node exists */
int lmq_is_bound(int index);			/* 1 bound, 0 not, -errno */
int lmq_get_info(int index, struct lmq_info *info);
/*
 * Indexes of all existing devices; *list is malloc'ed.  sorted=0 keeps the
 * order of /sys/block (what util-linux losetup lists in), else by index.
 */
int lmq_list(int **list, int *count, int sorted);

/* The steps of lmq_attach(), in order; lmq_attach_step_name() names one. */
enum lmq_attach_step {
	LMQ_STEP_OPEN_FILE,	/* open the backing file */
	LMQ_STEP_OPEN_DEV,	/* open the device */
	LMQ_STEP_ATTACH,	/* LOOP_CONFIGURE or LOOP_SET_FD */
	LMQ_STEP_SET_STATUS,	/* the rest, on kernels without LOOP_CONFIGURE */
	LMQ_STEP_SET_BLOCK_SIZE,
	LMQ_STEP_SET_DIRECT_IO,
	LMQ_STEP_SET_DIO,	/* direct I/O off or auto, after the attach */
	LMQ_STEP_SET_MODE,	/* loopmq's dispatch mode */
	LMQ_STEP_SET_REMAP,	/* pin the file (LOOPMQ_SET_REMAP) */
};

const char *lmq_attach_step_name(enum lmq_attach_step step);

/*
 * Attach a backing file.  LOOP_CONFIGURE, or LOOP_SET_FD +
 * LOOP_SET_STATUS64 (+ block size, dio) when the kernel answers
 * ENOTTY/EINVAL.  When a later step (e.g. the mode) fails, the device is
 * detached again.  *step is the step that failed.  Direct I/O off is
 * asked for (LOOP_SET_DIRECT_IO) only where the device came up with
 * another setting (a dio_default of Y or auto); auto is LOOPMQ_SET_DIO.
 */
int lmq_attach(int index, const struct lmq_attach *a,
	       enum lmq_attach_step *step);
int lmq_detach(int index);
int lmq_set_capacity(int index);
int lmq_set_direct_io(int index, int on);		/* LOOP_SET_DIRECT_IO */
int lmq_set_block_size(int index, unsigned int size);

/* loopmq's own ioctls. */
int lmq_set_mode(int index, unsigned int mode);
int lmq_get_mode(int index, unsigned int *mode);
int lmq_get_stats(int index, struct loopmq_stats *st);
int lmq_reset_stats(int index);
int lmq_set_remap(int index, unsigned int remap);	/* LOOPMQ_REMAP_* */
int lmq_get_pinned(int index);			/* 1, 0 or -errno */
int lmq_set_dio(int index, unsigned int setting);	/* LOOPMQ_SET_DIO */
/* sysfs loopmq/dio_auto; -ENXIO: not bound, -ENOENT: no such file */
int lmq_get_dio(int index, struct lmq_dio *d);

/* Helpers. */
const char *lmq_mode_name(unsigned int mode);	/* NULL if unknown */
int lmq_mode_parse(const char *s);		/* mode or -EINVAL */
extern const char *const lmq_path_names[LOOPMQ_PATH_NR];
extern const char *const lmq_fallback_names[LOOPMQ_FB_NR];
const char *lmq_fallback_name(unsigned int reason);	/* never NULL */
extern const char *const lmq_dio_names[LOOPMQ_DIO_NR];
extern const char *const lmq_dio_reason_names[LOOPMQ_DIO_WHY_NR];
const char *lmq_dio_name(unsigned int setting);		/* NULL if unknown */
const char *lmq_dio_reason_name(unsigned int reason);	/* NULL if unknown */
/*
 * A direct-I/O setting by its name, or 1 and 0 for on and off (as
 * losetup's --direct-io takes them); -EINVAL for anything else.
 */
int lmq_dio_parse(const char *s);
/*
 * The text of sysfs loopmq/dio_auto ("key value" lines) into *d; a line
 * it does not know is skipped.  -EINVAL: no "setting" line.
 */
int lmq_dio_state_parse(const char *text, struct lmq_dio *d);
/*
 * Parse a non-negative size with an optional suffix: K, M, G, T, P, E
 * (also KiB, MiB ...) are powers of 1024; KB, MB ... powers of 1000.
 * -EINVAL: not a number; -ERANGE: does not fit in 64 bits.
 */
int lmq_parse_size(const char *s, uint64_t *out);

#endif /* LMQDEV_H */

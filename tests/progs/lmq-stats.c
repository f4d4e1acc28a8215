// SPDX-License-Identifier: GPL-2.0
/*
 * lmq-stats: read (or reset) a loopmq device's statistics with the
 * LOOPMQ_GET_STATS / LOOPMQ_RESET_STATS ioctls.
 *
 * Usage: lmq-stats DEV          print "name value" lines, in the order of
 *                               /sys/block/loopmqN/loopmq/stats, then
 *                               "mode NAME", "nr_paths N", "nr_fallbacks N"
 *        lmq-stats --reset DEV  LOOPMQ_RESET_STATS
 * Exit status 0 on success; on failure prints the errno name and exits 1.
 * Exits 1 also when the reserved output fields are not zero.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include "../../include/uapi/loopmq.h"

static const char *const path_names[LOOPMQ_PATH_NR] = {
	"inline", "aio_inline", "aio_async", "kthread",
};

/* Indexed by enum loopmq_fallback; names as in sysfs. */
static const char *const fb_names[] = {
	[LOOPMQ_FB_STACK] = "fb_stack", [LOOPMQ_FB_JOURNAL] = "fb_journal",
	[LOOPMQ_FB_RECLAIM] = "fb_reclaim", [LOOPMQ_FB_NESTED] = "fb_nested",
	[LOOPMQ_FB_OP] = "fb_op", [LOOPMQ_FB_EAGAIN] = "fb_eagain",
	[LOOPMQ_FB_ADAPTIVE] = "fb_adaptive",
	[LOOPMQ_FB_NONOWAIT] = "fb_nonowait", [LOOPMQ_FB_LOCKDEP] = "fb_lockdep",
	[LOOPMQ_FB_SIGNAL] = "fb_signal", [LOOPMQ_FB_WORKER] = "fb_worker",
	[LOOPMQ_FB_REQNOWAIT] = "fb_reqnowait",
};

_Static_assert(sizeof(fb_names) / sizeof(fb_names[0]) == LOOPMQ_FB_NR,
	       "a fallback reason has no name here");

static const char *const mode_names[] = { "direct", "kthread", "aio", "auto" };

int main(int argc, char **argv)
{
	struct loopmq_stats st;
	int reset = 0, fd, i;
	const char *dev;

	if (argc == 3 && !strcmp(argv[1], "--reset")) {
		reset = 1;
		dev = argv[2];
	} else if (argc == 2) {
		dev = argv[1];
	} else {
		fprintf(stderr, "usage: lmq-stats [--reset] DEV\n");
		return 2;
	}
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "lmq-stats: open %s: %s\n", dev, strerror(errno));
		return 1;
	}
	if (reset) {
		if (ioctl(fd, LOOPMQ_RESET_STATS) < 0) {
			printf("%s\n", strerror(errno));
			return 1;
		}
		return 0;
	}
	memset(&st, 0xa5, sizeof(st));
	if (ioctl(fd, LOOPMQ_GET_STATS, &st) < 0) {
		fprintf(stderr, "lmq-stats: LOOPMQ_GET_STATS: %s\n",
			strerror(errno));
		return 1;
	}
	for (i = 0; i < LOOPMQ_PATH_NR; i++)
		printf("%s %llu\n", path_names[i],
		       (unsigned long long)st.path[i]);
	for (i = 0; i < LOOPMQ_FB_NR; i++)
		printf("%s %llu\n", fb_names[i],
		       (unsigned long long)st.fallback[i]);
	printf("kthread_wakeups %llu\n", (unsigned long long)st.kthread_wakeups);
	printf("peak_inflight %llu\n", (unsigned long long)st.peak_inflight);
	printf("errors %llu\n", (unsigned long long)st.errors);
	printf("mode %s\n", st.mode < 4 ? mode_names[st.mode] : "invalid");
	printf("nr_paths %u\n", st.nr_paths);
	printf("nr_fallbacks %u\n", st.nr_fallbacks);
	for (i = LOOPMQ_PATH_NR; i < LOOPMQ_STATS_PATHS; i++)
		if (st.path[i])
			goto dirty;
	for (i = LOOPMQ_FB_NR; i < LOOPMQ_STATS_FALLBACKS; i++)
		if (st.fallback[i])
			goto dirty;
	for (i = 0; i < 5; i++)
		if (st.reserved[i])
			goto dirty;
	if (st.pad)
		goto dirty;
	return 0;
dirty:
	fprintf(stderr, "lmq-stats: unused/reserved fields not zeroed\n");
	return 1;
}

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

/* Names as in sysfs, from the lists of the uapi header. */
#define NAME(id, name, help)	name,
#define FB_NAME(id, name, help)	"fb_" name,
static const char *const path_names[LOOPMQ_PATH_NR] = { LOOPMQ_PATHS(NAME) };
static const char *const fb_names[LOOPMQ_FB_NR] = { LOOPMQ_FALLBACKS(FB_NAME) };
static const char *const mode_names[LOOPMQ_MODE_NR] = { LOOPMQ_MODES(NAME) };

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
	printf("mode %s\n", st.mode < LOOPMQ_MODE_NR ? mode_names[st.mode] : "invalid");
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

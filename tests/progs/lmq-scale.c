// SPDX-License-Identifier: GPL-2.0
/*
 * lmq-scale: create, attach, detach and remove N loop / loopmq devices and
 * time every operation.
 *
 * Usage: lmq-scale CTL PREFIX FIRST N FILE [JOBS]
 *   CTL     control node (/dev/loopmq-control)
 *   PREFIX  device node prefix (/dev/loopmq)
 *   FIRST   first index to create (indexes FIRST .. FIRST+N-1 must be free)
 *   N       number of devices
 *   FILE    backing file (every device is attached to it)
 *   JOBS    processes sharing each phase (default 1): device i is done by
 *           process i % JOBS, so the RCU grace periods a detach and a
 *           remove wait for overlap instead of adding up
 *
 * Phases: add (LOOP_CTL_ADD i), attach (open, LOOP_SET_FD, close),
 * detach (open, LOOP_CLR_FD, close), remove (LOOP_CTL_REMOVE i).  For each
 * phase prints a line
 *   phase NAME ok N failed N total_ms X first100_us X last100_us X max_us X
 * and memory lines "mem STAGE MemAvailable_kB X Slab_kB X" before and after
 * each phase.  Exit 0 when every operation succeeded, 1 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <linux/loop.h>

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static long meminfo(const char *key)
{
	char line[256];
	size_t kl = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = atol(line + kl + 1);
			break;
		}
	fclose(f);
	return v;
}

static void mem(const char *stage)
{
	printf("mem %s MemAvailable_kB %ld Slab_kB %ld\n", stage,
	       meminfo("MemAvailable"), meminfo("Slab"));
	fflush(stdout);
}

enum { ADD, ATTACH, DETACH, REMOVE, NPHASE };
static const char *const phase_name[NPHASE] = { "add", "attach", "detach", "remove" };

/* one operation of phase P on device IDX: 0 or an errno */
static int op(int p, int ctl_fd, int bfd, const char *prefix, int idx)
{
	char path[256];
	long rc = -1;
	int fd;

	errno = 0;
	snprintf(path, sizeof(path), "%s%d", prefix, idx);
	switch (p) {
	case ADD:
		rc = ioctl(ctl_fd, LOOP_CTL_ADD, idx);
		if (rc >= 0 && rc != idx)
			rc = -1, errno = ERANGE;
		break;
	case ATTACH:
	case DETACH:
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			break;
		rc = p == ATTACH ? ioctl(fd, LOOP_SET_FD, bfd) : ioctl(fd, LOOP_CLR_FD, 0);
		close(fd);
		break;
	case REMOVE:
		rc = ioctl(ctl_fd, LOOP_CTL_REMOVE, idx);
		break;
	}
	return rc < 0 ? (errno ? errno : EIO) : 0;
}

int main(int argc, char **argv)
{
	const char *ctl, *prefix, *file;
	int first, n, i, p, j, jobs = 1, ctl_fd, bfd, bad = 0;
	double *t, t0, total;
	int *err;
	char stage[64];

	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: lmq-scale CTL PREFIX FIRST N FILE [JOBS]\n");
		return 2;
	}
	ctl = argv[1];
	prefix = argv[2];
	first = atoi(argv[3]);
	n = atoi(argv[4]);
	file = argv[5];
	if (argc == 7)
		jobs = atoi(argv[6]);
	if (n < 1 || first < 0 || jobs < 1 || jobs > 64)
		return 2;
	/* shared with the JOBS processes: each op's time and errno (0: ok) */
	t = mmap(NULL, n * (sizeof(*t) + sizeof(*err)), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	err = (int *)(t + n);
	ctl_fd = open(ctl, O_RDWR | O_CLOEXEC);
	bfd = open(file, O_RDWR | O_CLOEXEC);
	if (t == MAP_FAILED || ctl_fd < 0 || bfd < 0) {
		perror("lmq-scale: setup");
		return 2;
	}
	mem("start");
	for (p = 0; p < NPHASE; p++) {
		int ok = 0, failed = 0, firsterr = 0;
		double f100 = 0, l100 = 0, max = 0;
		int k100 = n < 100 ? n : 100;

		total = now_us();
		for (j = 0; j < jobs; j++) {
			pid_t pid = jobs > 1 ? fork() : 0;

			if (pid < 0) {
				perror("lmq-scale: fork");
				return 2;
			}
			if (pid > 0)
				continue;
			for (i = j; i < n; i += jobs) {
				t0 = now_us();
				err[i] = op(p, ctl_fd, bfd, prefix, first + i);
				t[i] = now_us() - t0;
			}
			if (jobs > 1)
				_exit(0);
		}
		while (jobs > 1 && wait(NULL) > 0)
			;
		total = (now_us() - total) / 1000;
		for (i = 0; i < n; i++) {
			if (err[i]) {
				if (!failed++)
					firsterr = err[i];
			} else {
				ok++;
			}
			if (i < k100)
				f100 += t[i];
			if (i >= n - k100)
				l100 += t[i];
			if (t[i] > max)
				max = t[i];
		}
		printf("phase %s ok %d failed %d total_ms %.0f first100_us %.0f last100_us %.0f max_us %.0f",
		       phase_name[p], ok, failed, total, f100 / k100, l100 / k100, max);
		if (failed)
			printf(" first_error %s", strerror(firsterr));
		printf("\n");
		snprintf(stage, sizeof(stage), "after-%s", phase_name[p]);
		mem(stage);
		if (failed)
			bad = 1;
	}
	return bad;
}

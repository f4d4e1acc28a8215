// SPDX-License-Identifier: GPL-2.0
/*
 * vmhelper: guest-side helper of the loopmq test harness.
 *
 *   vmhelper detach-all   LOOP_CLR_FD on every /dev/loopmqN, then
 *                         LOOP_CTL_REMOVE each through /dev/loopmq-control
 *   vmhelper drain FD     wait until the tty open on FD has sent its output
 *                         (so a result line is on the host before a panic)
 *
 * Errors are reported on stderr; the exit status is 1 if a bound device
 * could not be detached.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include <linux/loop.h>

static int is_disk_name(const char *name, long *idx)
{
	const char *p = name + strlen("loopmq");
	char *end;

	if (strncmp(name, "loopmq", 6) || !*p || *p < '0' || *p > '9')
		return 0;
	*idx = strtol(p, &end, 10);
	return *end == '\0';
}

static int detach_all(void)
{
	DIR *d = opendir("/dev");
	struct dirent *e;
	int ctl, ret = 0;
	long idx;

	if (!d)
		return 1;
	ctl = open("/dev/loopmq-control", O_RDWR | O_CLOEXEC);
	while ((e = readdir(d))) {
		char path[300];
		int fd;

		if (!is_disk_name(e->d_name, &idx))
			continue;
		snprintf(path, sizeof(path), "/dev/%s", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (ioctl(fd, LOOP_CLR_FD, 0) && errno != ENXIO) {
				fprintf(stderr, "vmhelper: %s: LOOP_CLR_FD: %s\n",
					path, strerror(errno));
				ret = 1;
			}
			close(fd);
		}
		if (ctl >= 0 && ioctl(ctl, LOOP_CTL_REMOVE, idx) &&
		    errno != ENODEV && errno != ENXIO)
			fprintf(stderr, "vmhelper: remove %ld: %s\n", idx,
				strerror(errno));
	}
	if (ctl >= 0)
		close(ctl);
	closedir(d);
	return ret;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "detach-all"))
		return detach_all();
	if (argc == 3 && !strcmp(argv[1], "drain"))
		return tcdrain(atoi(argv[2])) ? 1 : 0;
	fprintf(stderr, "usage: vmhelper detach-all | drain FD\n");
	return 2;
}

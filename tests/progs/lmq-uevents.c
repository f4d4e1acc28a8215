// SPDX-License-Identifier: GPL-2.0
/*
 * lmq-uevents: a udev-like listener for one block device, for the guest
 * test 23-partitions.  It counts the kernel's uevents for the disk and its
 * partitions and, like udev's blkid on a change event, opens the disk as
 * soon as a change uevent for it arrives.
 *
 * Usage: lmq-uevents DISK SECONDS [CPU]
 *
 *	DISK is a name in /sys/class/block (loopmq0, loop3).  The listener
 *	runs for SECONDS or until SIGTERM/SIGINT.  With CPU it runs pinned to
 *	that CPU as SCHED_FIFO, so that a change uevent preempts the task
 *	that sent it, on the same CPU, at its next scheduling point: the
 *	open then lands in whatever window the sender leaves between the
 *	uevent and its next step, every time, not once in a thousand runs.
 *
 * It prints "ready" once it listens, every event as "ACTION DEVNAME" if
 * LMQ_UEVENTS_VERBOSE is set, and at the end one line:
 *
 *	lmq-uevents DISK: C change, O opens, A partition add, R partition
 *	remove
 *
 * One attach with a partition scan and one detach add and remove each
 * partition once.  A second scan while the device stays attached drops
 * the partitions and adds them again: one more remove and add each, the
 * vanishing and reappearing devices that fail systemd's BindsTo= units.
 * Exit status: 0, 2 on usage or setup errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lmq-common.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* is NAME one of DISK's partitions (DISKp<number>)? */
static int is_part_of(const char *name, const char *disk)
{
	size_t n = strlen(disk);
	char *end;

	if (strncmp(name, disk, n) || name[n] != 'p' || !name[n + 1])
		return 0;
	return strtol(name + n + 1, &end, 10) > 0 && !*end;
}

int main(int argc, char **argv)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	unsigned long changes = 0, opens = 0, adds = 0, removes = 0;
	char node[300], buf[8192];
	struct timespec t0, t;
	const char *disk;
	double seconds;
	int fd, bufsz = 4 << 20;
	int verbose = !!getenv("LMQ_UEVENTS_VERBOSE");

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: lmq-uevents DISK SECONDS [CPU]\n");
		return 2;
	}
	disk = argv[1];
	seconds = atof(argv[2]);
	snprintf(node, sizeof(node), "/dev/%s", disk);
	if (argc == 4) {
		struct sched_param sp = { .sched_priority = 50 };
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(atoi(argv[3]), &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			die("sched_setaffinity");
		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			die("sched_setscheduler");
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
		    NETLINK_KOBJECT_UEVENT);
	if (fd < 0)
		die("socket(NETLINK_KOBJECT_UEVENT)");
	/* a burst of events must not overflow the queue and go uncounted */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz, sizeof(bufsz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("bind(uevent socket)");
	printf("ready\n");
	fflush(stdout);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		const char *action = NULL, *devname = NULL, *p;
		ssize_t len;
		int d;

		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 >=
		    seconds)
			break;
		/* after a stop, drain what is queued, then end */
		if (poll(&pfd, 1, stop ? 0 : 100) <= 0) {
			if (stop)
				break;
			continue;
		}
		len = recv(fd, buf, sizeof(buf) - 1, 0);
		if (len < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				fprintf(stderr, "lmq-uevents: events lost (ENOBUFS)\n");
				return 2;
			}
			die("recv(uevent socket)");
		}
		buf[len] = 0;
		/* "ACTION@DEVPATH\0KEY=VALUE\0...": only the kernel's format */
		if (!strchr(buf, '@'))
			continue;
		for (p = buf + strlen(buf) + 1; p < buf + len;
		     p += strlen(p) + 1) {
			if (!strncmp(p, "ACTION=", 7))
				action = p + 7;
			else if (!strncmp(p, "DEVNAME=", 8))
				devname = p + 8;
		}
		if (!action || !devname)
			continue;
		if (verbose)
			printf("%s %s\n", action, devname);
		if (!strcmp(devname, disk) && !strcmp(action, "change")) {
			changes++;
			/* what udev's blkid does first: open the disk */
			d = open(node, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
			if (d >= 0) {
				opens++;
				close(d);
			}
			continue;
		}
		if (!is_part_of(devname, disk))
			continue;
		if (!strcmp(action, "add"))
			adds++;
		else if (!strcmp(action, "remove"))
			removes++;
	}
	printf("lmq-uevents %s: %lu change, %lu opens, %lu partition add, %lu partition remove\n",
	       disk, changes, opens, adds, removes);
	return 0;
}

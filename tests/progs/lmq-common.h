/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the writers and checkers of the crash and power-loss trials share
 * (lmq-crashwriter, lmq-plwriter).  A header, not a library: tests/vm/run
 * builds every tests/progs/ *.c on its own.
 */
#ifndef LMQ_TEST_COMMON_H
#define LMQ_TEST_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* splitmix64: a seed gives the same sequence on every run and kernel */
static inline uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* a system call failed: say which, exit 2 (usage and I/O errors) */
static inline void die(const char *what)
{
	perror(what);
	exit(2);
}

#endif

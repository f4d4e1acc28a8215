// SPDX-License-Identifier: GPL-2.0
/*
 * Unit checks of the lmqdev helpers that need no device: sizes, modes,
 * direct-I/O settings and the text of sysfs loopmq/dio_auto, device names.
 * TAP output, "N passed, N failed", exit 1 on any failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lmqdev.h"

static int npass, nfail;

static void ok(int cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#include <stdarg.h>
static void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", npass + nfail + 1);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (cond)
		npass++;
	else
		nfail++;
}

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = 0;
	int r = lmq_parse_size(s, &v);

	ok(r == 0 && v == want, "size '%s' = %" PRIu64 " (got r=%d v=%" PRIu64 ")",
	   s, want, r, v);
}

static void size_bad(const char *s, int want)
{
	uint64_t v = 12345;
	int r = lmq_parse_size(s, &v);

	ok(r == want && v == 12345, "size '%s' rejected with %s (got %d)", s,
	   strerror(-want), r);
}

static void dev_ok(const char *s, int want)
{
	int idx = -1, r = lmq_parse_device(s, &idx);

	ok(r == 0 && idx == want, "device '%s' -> %d (got r=%d idx=%d)", s, want,
	   r, idx);
}

static void dev_bad(const char *s)
{
	int idx = -1, r = lmq_parse_device(s, &idx);

	ok(r < 0, "device '%s' rejected (got r=%d idx=%d)", s, r, idx);
}

static void dio_ok(const char *s, int want)
{
	int r = lmq_dio_parse(s);

	ok(r == want, "--direct-io '%s' -> %s (got %d)", s ? s : "(null)",
	   want < 0 ? "rejected" : lmq_dio_name(want), r);
}

/* The sysfs text of a device with @setting, @chosen and @reason. */
static void dio_text(char *buf, size_t len, const char *setting,
		     const char *chosen, const char *reason)
{
	snprintf(buf, len, "setting %s\nchosen %s\nreason %s\n"
		 "holes_permille 1000\nunwritten_permille 2\n"
		 "shared_permille 3\ncostly_permille 999\nblock_size 4096\n"
		 "switches 7\nwrite_costly_permille 15\n", setting, chosen,
		 reason);
}

static void dio_state_checks(void)
{
	char buf[512];
	struct lmq_dio d;
	unsigned int s, why;
	int r;

	for (s = 0; s < LOOPMQ_DIO_NR; s++)
		for (why = 0; why < LOOPMQ_DIO_WHY_NR; why++) {
			dio_text(buf, sizeof(buf), lmq_dio_name(s),
				 lmq_dio_name(s == LOOPMQ_DIO_ON ?
					      LOOPMQ_DIO_ON : LOOPMQ_DIO_OFF),
				 lmq_dio_reason_name(why));
			r = lmq_dio_state_parse(buf, &d);
			ok(r == 0 && d.setting == (int)s &&
			   d.chosen == (s == LOOPMQ_DIO_ON ? LOOPMQ_DIO_ON :
					LOOPMQ_DIO_OFF) && d.reason == (int)why,
			   "dio_auto of setting %s, reason %s (got r=%d %d %d %d)",
			   lmq_dio_name(s), lmq_dio_reason_name(why), r,
			   d.setting, d.chosen, d.reason);
		}
	dio_text(buf, sizeof(buf), lmq_dio_name(LOOPMQ_DIO_AUTO),
		 lmq_dio_name(LOOPMQ_DIO_ON),
		 lmq_dio_reason_name(LOOPMQ_DIO_WHY_WRITTEN));
	r = lmq_dio_state_parse(buf, &d);
	ok(r == 0 && d.holes_permille == 1000 && d.unwritten_permille == 2 &&
	   d.shared_permille == 3 && d.costly_permille == 999 &&
	   d.block_size == 4096 && d.switches == 7 &&
	   d.write_costly_permille == 15,
	   "dio_auto numbers (got r=%d %" PRIu64 " %" PRIu64 " %" PRIu64
	   " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 ")", r,
	   d.holes_permille, d.unwritten_permille, d.shared_permille,
	   d.costly_permille, d.block_size, d.switches,
	   d.write_costly_permille);
	r = lmq_dio_state_parse("setting auto\nwrite_costly_permille -1\n", &d);
	ok(r == 0 && d.write_costly_permille == -1,
	   "dio_auto: write_costly_permille -1 (got r=%d %" PRId64 ")", r,
	   d.write_costly_permille);
	r = lmq_dio_state_parse("setting auto\n", &d);
	ok(r == 0 && d.write_costly_permille == -1,
	   "dio_auto: no write_costly_permille line (an older module) is -1 (got r=%d %" PRId64 ")",
	   r, d.write_costly_permille);
	/* a newer module's names and lines */
	dio_text(buf, sizeof(buf), "sometimes", "maybe", "moon");
	strcat(buf, "future_key 12\n");
	r = lmq_dio_state_parse(buf, &d);
	ok(r == 0 && d.setting == -1 && d.chosen == -1 && d.reason == -1 &&
	   d.switches == 7,
	   "dio_auto: unknown names are -1, unknown lines skipped (got r=%d %d %d %d)",
	   r, d.setting, d.chosen, d.reason);
	/* "chosen" is on or off, never auto */
	dio_text(buf, sizeof(buf), lmq_dio_name(LOOPMQ_DIO_AUTO),
		 lmq_dio_name(LOOPMQ_DIO_AUTO),
		 lmq_dio_reason_name(LOOPMQ_DIO_WHY_SPARSE));
	r = lmq_dio_state_parse(buf, &d);
	ok(r == 0 && d.chosen == -1, "dio_auto: chosen auto is unknown (got %d)",
	   d.chosen);
	/* a line is read alone: an empty value is not the next line's key */
	r = lmq_dio_state_parse("setting\nchosen on\nreason set\n", &d);
	ok(r == -EINVAL, "dio_auto without a setting value rejected (got %d)",
	   r);
	ok(lmq_dio_state_parse("", &d) == -EINVAL,
	   "empty dio_auto rejected");
	ok(lmq_dio_state_parse("switches 3", &d) == -EINVAL,
	   "dio_auto without a setting line rejected");
	r = lmq_dio_state_parse("switches 3\nsetting on", &d);
	ok(r == 0 && d.setting == LOOPMQ_DIO_ON && d.switches == 3,
	   "dio_auto: any order, no final newline (got r=%d %d)", r, d.setting);
}

int main(void)
{
	unsigned int m;

	unsetenv("LOOPMQCTL_PREFIX");
	size_ok("0", 0);
	size_ok("512", 512);
	size_ok("4K", 4096);
	size_ok("4k", 4096);
	size_ok("4KiB", 4096);
	size_ok("4KB", 4000);
	size_ok("1M", 1048576);
	size_ok("1MiB", 1048576);
	size_ok("1MB", 1000000);
	size_ok("3G", 3ULL << 30);
	size_ok("2T", 2ULL << 40);
	size_ok("1P", 1ULL << 50);
	size_ok("15E", 15ULL << 60);
	size_ok("18446744073709551615", UINT64_MAX);
	size_ok("100B", 100);
	size_bad("", -EINVAL);
	size_bad("-1", -EINVAL);
	size_bad("+1", -EINVAL);
	size_bad(" 1", -EINVAL);
	size_bad("1X", -EINVAL);
	size_bad("1KiBx", -EINVAL);
	size_bad("0x10", -EINVAL);
	size_bad("1.5M", -EINVAL);
	size_bad("K", -EINVAL);
	size_bad("16E", -ERANGE);
	size_bad("18446744073709551616", -ERANGE);
	size_bad("17179869184G", -ERANGE);

	for (m = 0; m < LOOPMQ_MODE_NR; m++)
		ok(lmq_mode_parse(lmq_mode_name(m)) == (int)m,
		   "mode %s round-trips", lmq_mode_name(m));
	ok(lmq_mode_parse("AUTO") == -EINVAL, "mode names are case-sensitive");
	ok(lmq_mode_parse("") == -EINVAL, "empty mode rejected");
	ok(lmq_mode_name(LOOPMQ_MODE_NR) == NULL, "no name past the last mode");
	for (m = 0; m < LOOPMQ_FB_NR; m++)
		ok(lmq_fallback_names[m] != NULL, "fallback reason %u has a name (%s)",
		   m, lmq_fallback_name(m));

	for (m = 0; m < LOOPMQ_DIO_NR; m++)
		dio_ok(lmq_dio_name(m), (int)m);
	dio_ok("1", LOOPMQ_DIO_ON);
	dio_ok("0", LOOPMQ_DIO_OFF);
	dio_ok("bogus", -EINVAL);
	dio_ok("AUTO", -EINVAL);
	dio_ok("", -EINVAL);
	dio_ok("2", -EINVAL);
	dio_ok(NULL, -EINVAL);
	ok(lmq_dio_name(LOOPMQ_DIO_NR) == NULL, "no name past the last setting");
	for (m = 0; m < LOOPMQ_DIO_WHY_NR; m++)
		ok(lmq_dio_reason_names[m] && *lmq_dio_reason_names[m],
		   "direct-I/O reason %u has a name (%s)", m,
		   lmq_dio_reason_name(m));
	ok(lmq_dio_reason_name(LOOPMQ_DIO_WHY_NR) == NULL,
	   "no name past the last reason");
	dio_state_checks();

	dev_ok("/dev/loopmq3", 3);
	dev_ok("loopmq3", 3);
	dev_ok("3", 3);
	dev_ok("0", 0);
	dev_ok("/dev/loopmq12345", 12345);
	dev_bad("/dev/loop3");
	dev_bad("loop3");
	dev_bad("loopmq");
	dev_bad("loopmq-1");
	dev_bad("-1");
	dev_bad("loopmq3p1");
	dev_bad("");
	dev_bad("99999999999");
	dev_bad("/nonexistent/loopmq3x");
	ok(strcmp(lmq_control_path(), "/dev/loopmq-control") == 0,
	   "control path %s", lmq_control_path());
	setenv("LOOPMQCTL_PREFIX", "loop", 1);
	dev_ok("/dev/loop7", 7);
	dev_bad("/dev/loopmq7");
	ok(strcmp(lmq_control_path(), "/dev/loop-control") == 0,
	   "test prefix: control path %s", lmq_control_path());

	printf("%d passed, %d failed\n", npass, nfail);
	return nfail ? 1 : 0;
}

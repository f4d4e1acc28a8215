// SPDX-License-Identifier: GPL-2.0
/*
 * loopmqctl: set up and control loopmq devices, with losetup's interface.
 *
 * A thin front end over lmqdev.c.  Every input is validated before any
 * device is touched; every failure names the object and the cause and
 * makes the exit status non-zero.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/fiemap.h>
#include <linux/fs.h>

#include "lmqdev.h"

#ifndef LOOPMQ_VERSION
#define LOOPMQ_VERSION "0.1"
#endif

static const char *prog = "loopmqctl";

/* ---- messages --------------------------------------------------------- */

static int module_missing(void)
{
	return access(lmq_control_path(), F_OK) != 0;
}

/*
 * "loopmqctl: OBJ: WHAT: strerror(err)" (+ a hint when the control
 * device is missing).  obj may be NULL, err may be 0.
 */
static void __attribute__((format(printf, 3, 4)))
error_at(const char *obj, int err, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", prog);
	if (obj)
		fprintf(stderr, "%s: ", obj);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	if ((err == ENOENT || err == ENODEV || err == ENXIO) && module_missing())
		fprintf(stderr, " (is the %s module loaded? try 'modprobe %s')",
			lmq_prefix(), lmq_prefix());
	fputc('\n', stderr);
}

static void try_help(void)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", prog);
}

/* ---- columns ---------------------------------------------------------- */

enum col_type { T_STR, T_NUM, T_BOOL, T_INT /* signed */ };

/*
 * A column's cell: a field of lmq_info, a path or a fallback counter, or
 * the direct-I/O state (sysfs loopmq/dio_auto).
 */
enum col_src { S_INFO, S_PATH, S_FB, S_DIO, S_NR };

#define COL_PATH_ID(id, name, help)	C_##id,
#define COL_FB_ID(id, name, help)	C_FB_##id,

/* The per-path and per-fallback columns come from the uapi header's lists. */
enum col_id {
	C_NAME, C_AUTOCLEAR, C_BACK_FILE, C_BACK_INO, C_BACK_MAJMIN,
	C_MAJMIN, C_OFFSET, C_PARTSCAN, C_RO, C_SIZELIMIT, C_DIO, C_LOG_SEC,
	C_MODE,
	LOOPMQ_PATHS(COL_PATH_ID)
	C_FALLBACKS,
	LOOPMQ_FALLBACKS(COL_FB_ID)
	C_WAKEUPS, C_PEAK_INFLIGHT, C_ERRORS,
	C_DIRECT_IO, C_DIO_REASON, C_DIO_HOLES, C_DIO_UNWRITTEN, C_DIO_SHARED,
	C_DIO_COSTLY, C_DIO_BLOCK, C_DIO_SWITCHES, C_DIO_WRITES,
	C_NR,
	/*
	 * Not columns of their own: the two values of DIRECT-IO, which it is
	 * in JSON and --stats (expand_columns())
	 */
	C_DIO_SETTING = C_NR, C_DIO_CHOSEN,
	C_ALL
};

/* the most columns -O takes; JSON and --stats may make one two */
#define MAX_COLS	(C_NR * 2)

struct column {
	const char	*name;		/* NULL: init_columns makes it */
	enum col_type	type;
	int		right;
	const char	*help;
	enum col_src	src;
	int		stat;		/* S_PATH, S_FB: index in loopmq_stats */
	/*
	 * The name --stats gives it (S_PATH, S_FB: the name in the list);
	 * NULL: not a --stats column.  S_DIO: its JSON key with -l too.
	 */
	const char	*stat_name;
};

#define COL_PATH(id, name, help) \
	[C_##id] = { NULL, T_NUM, 1, help, S_PATH, LOOPMQ_PATH_##id, name },
#define COL_FB(id, name, help) \
	[C_FB_##id] = { NULL, T_NUM, 1, "fallbacks: " help, S_FB, \
			LOOPMQ_FB_##id, name },

static struct column columns[C_ALL] = {
	[C_NAME]	= { "NAME", T_STR, 0, "loop device name", S_INFO, 0,
			    "name" },
	[C_AUTOCLEAR]	= { "AUTOCLEAR", T_BOOL, 1, "autoclear flag set" },
	[C_BACK_FILE]	= { "BACK-FILE", T_STR, 0, "device backing file" },
	[C_BACK_INO]	= { "BACK-INO", T_NUM, 1, "backing file inode number" },
	[C_BACK_MAJMIN]	= { "BACK-MAJ:MIN", T_STR, 1,
			    "backing file major:minor device number" },
	[C_MAJMIN]	= { "MAJ:MIN", T_STR, 1,
			    "loop device major:minor number" },
	[C_OFFSET]	= { "OFFSET", T_NUM, 1, "offset from the beginning" },
	[C_PARTSCAN]	= { "PARTSCAN", T_BOOL, 1, "partscan flag set" },
	[C_RO]		= { "RO", T_BOOL, 1, "read-only device" },
	[C_SIZELIMIT]	= { "SIZELIMIT", T_NUM, 1,
			    "size limit of the file in bytes" },
	[C_DIO]		= { "DIO", T_BOOL, 1,
			    "access backing file with direct-io" },
	[C_LOG_SEC]	= { "LOG-SEC", T_NUM, 1,
			    "logical sector size in bytes" },
	[C_MODE]	= { "MODE", T_STR, 0, NULL /* init_columns */, S_INFO,
			    0, "mode" },
	LOOPMQ_PATHS(COL_PATH)
	[C_FALLBACKS]	= { "FALLBACKS", T_NUM, 1,
			    "requests sent to the kthread, all reasons" },
	LOOPMQ_FALLBACKS(COL_FB)
	[C_WAKEUPS]	= { "WAKEUPS", T_NUM, 1, "kthread wakeups", S_INFO, 0,
			    "kthread_wakeups" },
	[C_PEAK_INFLIGHT] = { "PEAK-INFLIGHT", T_NUM, 1,
			      "most requests in flight", S_INFO, 0,
			      "peak_inflight" },
	[C_ERRORS]	= { "ERRORS", T_NUM, 1, "requests completed with error",
			    S_INFO, 0, "errors" },
	[C_DIRECT_IO]	= { "DIRECT-IO", T_STR, 0, NULL /* init_columns */,
			    S_DIO },
	[C_DIO_REASON]	= { "DIO-REASON", T_STR, 0,
			    "why direct I/O is on or off (see loopmq(4))", S_DIO,
			    0, "dio_reason" },
	[C_DIO_HOLES]	= { "DIO-HOLES", T_NUM, 1,
			    "auto: holes when mapped, per mille", S_DIO, 0,
			    "dio_holes_permille" },
	[C_DIO_UNWRITTEN] = { "DIO-UNWRITTEN", T_NUM, 1,
			      "auto: unwritten extents when mapped, per mille",
			      S_DIO, 0, "dio_unwritten_permille" },
	[C_DIO_SHARED]	= { "DIO-SHARED", T_NUM, 1,
			    "auto: shared extents when mapped, per mille", S_DIO,
			    0, "dio_shared_permille" },
	[C_DIO_COSTLY]	= { "DIO-COSTLY", T_NUM, 1,
			    "auto: blocks costly for direct I/O now, per mille",
			    S_DIO, 0, "dio_costly_permille" },
	[C_DIO_BLOCK]	= { "DIO-BLOCK", T_NUM, 1,
			    "auto: block size of its map, 0 without one", S_DIO,
			    0, "dio_block_size" },
	[C_DIO_SWITCHES] = { "DIO-SWITCHES", T_NUM, 1,
			     "auto: switches since the setting was made", S_DIO,
			     0, "dio_switches" },
	[C_DIO_WRITES]	= { "DIO-WRITES", T_INT, 1,
			    "auto: costly blocks in the last window of writes, per mille (-1: none)",
			    S_DIO, 0, "dio_write_costly_permille" },
	/* DIRECT-IO's two values (expand_columns()) */
	[C_DIO_SETTING]	= { NULL, T_STR, 0, NULL, S_DIO, 0, "direct_io" },
	[C_DIO_CHOSEN]	= { NULL, T_STR, 0, NULL, S_DIO, 0, "dio_chosen" },
};

/*
 * The @n names of @names into @buf: @sep between them and @last before
 * the last one.
 */
static const char *name_list(const char *const *names, int n,
			     const char *sep, const char *last, char *buf,
			     size_t len)
{
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s",
				      !i ? "" : i + 1 < n ? sep : last,
				      names[i]);
	return buf;
}

/*
 * The mode names, ", " between them and @last before the last one; valid
 * until the next call.
 */
static const char *mode_list(const char *last)
{
	static const char *names[LOOPMQ_MODE_NR];
	static char buf[128];
	unsigned int m;

	for (m = 0; m < LOOPMQ_MODE_NR; m++)
		names[m] = lmq_mode_name(m);
	return name_list(names, LOOPMQ_MODE_NR, ", ", last, buf, sizeof(buf));
}

/* The direct-I/O settings, as mode_list() */
static const char *dio_list(const char *sep, const char *last)
{
	static char buf[128];

	return name_list(lmq_dio_names, LOOPMQ_DIO_NR, sep, last, buf,
			 sizeof(buf));
}

/*
 * The MODE column's help, and the names of the list columns: the list's
 * name (@stat_name) in capitals with '-' for '_' ("aio_inline" ->
 * AIO-INLINE), "FB-" in front of a fallback reason.
 */
static void init_columns(void)
{
	static char names[C_NR][32], mode_help[160], dio_help[160];
	const char *s;
	size_t o;
	int c;

	snprintf(mode_help, sizeof(mode_help), "dispatch mode (%s)",
		 mode_list(", "));
	columns[C_MODE].help = mode_help;
	snprintf(dio_help, sizeof(dio_help),
		 "direct I/O, setting:chosen (setting %s; chosen %s or %s)",
		 dio_list(", ", " or "), lmq_dio_name(LOOPMQ_DIO_ON),
		 lmq_dio_name(LOOPMQ_DIO_OFF));
	columns[C_DIRECT_IO].help = dio_help;
	for (c = 0; c < C_NR; c++) {
		if (columns[c].name)
			continue;
		o = (size_t)snprintf(names[c], sizeof(names[c]), "%s",
				     columns[c].src == S_FB ? "FB-" : "");
		for (s = columns[c].stat_name; *s && o + 1 < sizeof(names[c]);
		     s++)
			names[c][o++] = *s == '_' ? '-' :
				(char)toupper((unsigned char)*s);
		names[c][o] = '\0';
		columns[c].name = names[c];
	}
}

static const enum col_id default_columns[] = {
	C_NAME, C_SIZELIMIT, C_OFFSET, C_AUTOCLEAR, C_RO, C_BACK_FILE, C_DIO,
	C_LOG_SEC, C_MODE, C_DIRECT_IO, C_DIO_REASON,
};

/*
 * The columns of --stats, in its order: the device, its mode, then the
 * counters in the order of sysfs loopmq/stats, then the direct-I/O state
 * in the order of sysfs loopmq/dio_auto.
 */
static const enum col_id stats_columns[] = {
	C_NAME, C_MODE,
	LOOPMQ_PATHS(COL_PATH_ID)
	LOOPMQ_FALLBACKS(COL_FB_ID)
	C_WAKEUPS, C_PEAK_INFLIGHT, C_ERRORS,
	C_DIRECT_IO, C_DIO_REASON, C_DIO_HOLES, C_DIO_UNWRITTEN, C_DIO_SHARED,
	C_DIO_COSTLY, C_DIO_BLOCK, C_DIO_SWITCHES, C_DIO_WRITES,
};

#define ARRAY_SIZE(a)	((int)(sizeof(a) / sizeof((a)[0])))

struct cell {
	int		null;
	char		str[PATH_MAX + 32];
	uint64_t	num;
	int		b;
};

/* A name of a list for a cell: "?" for a value this tool does not know. */
static const char *known(const char *name)
{
	return name ? name : "?";
}

static void get_cell(const struct lmq_info *in, enum col_id c, struct cell *v)
{
	const struct loopmq_stats *st = &in->stats;
	const struct lmq_dio *d = &in->dio_state;
	int need_bound = 1, need_stats = 0, i;

	memset(v, 0, sizeof(*v));
	switch (c) {
	case C_NAME:
		snprintf(v->str, sizeof(v->str), "%s", in->path);
		need_bound = 0;
		break;
	case C_MAJMIN:
		snprintf(v->str, sizeof(v->str), "%u:%u", in->maj, in->min);
		need_bound = 0;
		break;
	case C_RO:
		v->b = in->ro;
		need_bound = 0;
		break;
	case C_LOG_SEC:
		v->num = in->log_sec;
		v->null = !in->log_sec;
		need_bound = 0;
		break;
	case C_MODE:
		snprintf(v->str, sizeof(v->str), "%s",
			 lmq_mode_name(in->mode) ? lmq_mode_name(in->mode) : "?");
		v->null = !in->have_mode;
		need_bound = 0;
		break;
	case C_AUTOCLEAR:
		v->b = in->autoclear;
		break;
	case C_PARTSCAN:
		v->b = in->partscan;
		break;
	case C_DIO:
		v->b = in->dio;
		break;
	case C_BACK_FILE:
		snprintf(v->str, sizeof(v->str), "%s", in->back_file);
		break;
	case C_BACK_INO:
		v->num = in->back_ino;
		break;
	case C_BACK_MAJMIN:
		snprintf(v->str, sizeof(v->str), "%u:%u", in->back_maj,
			 in->back_min);
		break;
	case C_OFFSET:
		v->num = in->offset;
		break;
	case C_SIZELIMIT:
		v->num = in->sizelimit;
		break;
	case C_FALLBACKS:
		for (i = 0; i < LOOPMQ_FB_NR; i++)
			v->num += st->fallback[i];
		need_stats = 1;
		break;
	case C_WAKEUPS:
		v->num = st->kthread_wakeups;
		need_stats = 1;
		break;
	case C_PEAK_INFLIGHT:
		v->num = st->peak_inflight;
		need_stats = 1;
		break;
	case C_ERRORS:
		v->num = st->errors;
		need_stats = 1;
		break;
	case C_DIRECT_IO:
		snprintf(v->str, sizeof(v->str), "%s:%s",
			 known(lmq_dio_name(d->setting)),
			 known(lmq_dio_name(d->chosen)));
		break;
	case C_DIO_SETTING:
		snprintf(v->str, sizeof(v->str), "%s",
			 known(lmq_dio_name(d->setting)));
		break;
	case C_DIO_CHOSEN:
		snprintf(v->str, sizeof(v->str), "%s",
			 known(lmq_dio_name(d->chosen)));
		break;
	case C_DIO_REASON:
		snprintf(v->str, sizeof(v->str), "%s",
			 known(lmq_dio_reason_name(d->reason)));
		break;
	case C_DIO_HOLES:
		v->num = d->holes_permille;
		break;
	case C_DIO_UNWRITTEN:
		v->num = d->unwritten_permille;
		break;
	case C_DIO_SHARED:
		v->num = d->shared_permille;
		break;
	case C_DIO_COSTLY:
		v->num = d->costly_permille;
		break;
	case C_DIO_BLOCK:
		v->num = d->block_size;
		break;
	case C_DIO_SWITCHES:
		v->num = d->switches;
		break;
	case C_DIO_WRITES:
		v->num = (uint64_t)d->write_costly_permille;
		break;
	default:
		/* the columns of the header's lists */
		if (columns[c].src == S_PATH)
			v->num = st->path[columns[c].stat];
		else if (columns[c].src == S_FB)
			v->num = st->fallback[columns[c].stat];
		need_stats = columns[c].src == S_PATH ||
			     columns[c].src == S_FB;
		break;
	}
	if (need_stats) {
		need_bound = 0;
		v->null = !in->have_stats;
	}
	if (columns[c].src == S_DIO) {
		/* read only from a bound device */
		need_bound = 0;
		v->null = !in->have_dio_state;
	}
	if (need_bound && !in->bound) {
		/* like losetup: flags of an unbound device read as 0 */
		if (columns[c].type == T_BOOL)
			v->b = 0;
		else
			v->null = 1;
	}
	if (!v->null && columns[c].type == T_NUM)
		snprintf(v->str, sizeof(v->str), "%" PRIu64, v->num);
	else if (!v->null && columns[c].type == T_INT)
		snprintf(v->str, sizeof(v->str), "%" PRId64, (int64_t)v->num);
	else if (!v->null && columns[c].type == T_BOOL)
		snprintf(v->str, sizeof(v->str), "%d", v->b);
	else if (v->null)
		v->str[0] = '\0';
}

/* ---- output ----------------------------------------------------------- */

/*
 * What to print and how.  With -l a device is a table line of a cell per
 * column, and a JSON object keyed by the lower-case column names.  With
 * --stats (@stats) the first column names the device and every other
 * column is a table line of its own, DEVICE COUNTER VALUE; the JSON keys
 * are the columns' stat_name, the path and the fallback counters in
 * objects of their own.
 */
struct outfmt {
	int	json, raw, noheadings, stats;
	int	ncols;
	enum col_id cols[MAX_COLS * 2];
};

static void set_columns(struct outfmt *f, const enum col_id *cols, int n)
{
	for (f->ncols = 0; f->ncols < n; f->ncols++)
		f->cols[f->ncols] = cols[f->ncols];
}

/*
 * JSON and --stats give each value a key (a line) of its own: DIRECT-IO
 * ("setting:chosen") is two there, direct_io and dio_chosen.
 */
static void expand_columns(struct outfmt *f)
{
	enum col_id cols[MAX_COLS * 2];
	int i, n = 0;

	for (i = 0; i < f->ncols && n + 1 < MAX_COLS * 2; i++) {
		if (f->cols[i] == C_DIRECT_IO) {
			cols[n++] = C_DIO_SETTING;
			cols[n++] = C_DIO_CHOSEN;
		} else {
			cols[n++] = f->cols[i];
		}
	}
	set_columns(f, cols, n);
}

/*
 * Safe text for the table: non-printable bytes (and in raw mode blanks
 * and backslashes) as \xNN.
 */
static void encode(const char *s, int raw, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 5 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f || (raw && (c == ' ' || c == '\\')))
			o += snprintf(out + o, len - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	out[o] = '\0';
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c < 0x20 || c == 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_key(const char *name)
{
	char key[64];
	size_t i;

	for (i = 0; name[i] && i + 1 < sizeof(key); i++)
		key[i] = (char)tolower((unsigned char)name[i]);
	key[i] = '\0';
	json_string(key);
	fputs(": ", stdout);
}

static void json_value(enum col_id c, const struct cell *v)
{
	if (v->null)
		fputs("null", stdout);
	else if (columns[c].type == T_STR)
		json_string(v->str);
	else if (columns[c].type == T_BOOL)
		fputs(v->b ? "true" : "false", stdout);
	else if (columns[c].type == T_INT)
		printf("%" PRId64, (int64_t)v->num);
	else
		printf("%" PRIu64, v->num);
}

/* --stats: the objects of the path and of the fallback counters */
static const char *const json_groups[S_NR] = {
	[S_PATH] = "paths", [S_FB] = "fallbacks",
};

/*
 * "loopdevices": an object per device, a key per column; a run of columns
 * of a group (--stats) is an object of its own on one line.
 */
static void print_json(const struct outfmt *f, const struct lmq_info *infos,
		       int n)
{
	/* cur: the group of the object not yet closed */
	const char *group, *cur;
	struct cell v;
	int i, j;

	printf("{\n   \"loopdevices\": [\n");
	if (!n)
		printf("\n");
	for (i = 0; i < n; i++) {
		printf("      {\n");
		cur = NULL;
		for (j = 0; j < f->ncols; j++) {
			enum col_id c = f->cols[j];

			group = f->stats ? json_groups[columns[c].src] : NULL;
			if (group && group == cur) {
				fputs(", ", stdout);
			} else {
				printf("%s%s         ", cur ? "}" : "",
				       j ? ",\n" : "");
				if (group) {
					json_key(group);
					putchar('{');
				}
				cur = group;
			}
			/* -l: the column's name, but as --stats for S_DIO */
			json_key(f->stats || columns[c].src == S_DIO ?
				 columns[c].stat_name : columns[c].name);
			get_cell(&infos[i], c, &v);
			json_value(c, &v);
		}
		printf("%s\n      }%s\n", cur ? "}" : "", i + 1 < n ? "," : "");
	}
	printf("   ]\n}\n");
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p) {
		error_at(NULL, ENOMEM, "cannot format output");
		exit(1);
	}
	return p;
}

/*
 * The shape of the table.  -l: a line per device, a column per column.
 * --stats: a line per device and column after the first, three columns:
 * the first column's cell (the device), the column's stat_name ("fb_" in
 * front of a fallback reason, as sysfs loopmq/stats) and its cell.
 */
static const char *const stats_head[] = { "DEVICE", "COUNTER", "VALUE" };

static int table_cols(const struct outfmt *f)
{
	return f->stats ? ARRAY_SIZE(stats_head) : f->ncols;
}

static int table_lines(const struct outfmt *f, int n)
{
	return f->stats ? n * (f->ncols - 1) : n;
}

static const char *table_head(const struct outfmt *f, int j)
{
	return f->stats ? stats_head[j] : columns[f->cols[j]].name;
}

static int table_right(const struct outfmt *f, int j)
{
	return !f->stats && columns[f->cols[j]].right;
}

/* The cell of line @i, column @j of the table. */
static void table_cell(const struct outfmt *f, const struct lmq_info *infos,
		       int i, int j, struct cell *v)
{
	int per_dev = f->ncols - 1;
	enum col_id c;

	if (!f->stats) {
		get_cell(&infos[i], f->cols[j], v);
		return;
	}
	c = f->cols[1 + i % per_dev];
	if (j == 1) {
		memset(v, 0, sizeof(*v));
		snprintf(v->str, sizeof(v->str), "%s%s",
			 columns[c].src == S_FB ? "fb_" : "",
			 columns[c].stat_name);
	} else {
		get_cell(&infos[i / per_dev], j ? c : f->cols[0], v);
	}
}

static void print_table(const struct outfmt *f, const struct lmq_info *infos,
			int n)
{
	size_t width[MAX_COLS * 2], enc_len = 4 * (PATH_MAX + 32);
	int ncols = table_cols(f), nlines = table_lines(f, n);
	/* --stats has always had two blanks between its columns */
	const char *sep = f->stats && !f->raw ? "  " : " ";
	char **cells, *enc;
	struct cell v;
	int i, j;

	if (!nlines)
		return;	/* like losetup: nothing at all, not even a header */
	cells = xcalloc((size_t)nlines * ncols, sizeof(*cells));
	enc = xcalloc(1, enc_len);
	/* like losetup, the header sets the minimum width even with -n */
	for (j = 0; j < ncols; j++)
		width[j] = strlen(table_head(f, j));
	for (i = 0; i < nlines; i++)
		for (j = 0; j < ncols; j++) {
			char **cell = &cells[(size_t)i * ncols + j];

			table_cell(f, infos, i, j, &v);
			encode(v.str, f->raw, enc, enc_len);
			*cell = strdup(enc);
			if (!*cell) {
				error_at(NULL, ENOMEM, "cannot format output");
				exit(1);
			}
			if (strlen(*cell) > width[j])
				width[j] = strlen(*cell);
		}
	for (i = f->noheadings ? 0 : -1; i < nlines; i++) {
		char *line = NULL;
		size_t llen = 0;
		FILE *m = open_memstream(&line, &llen);

		if (!m) {
			error_at(NULL, ENOMEM, "cannot format output");
			exit(1);
		}
		for (j = 0; j < ncols; j++) {
			const char *s = i < 0 ? table_head(f, j) :
				cells[(size_t)i * ncols + j];
			const char *end = j + 1 == ncols ? "" : sep;

			if (f->raw)
				fprintf(m, "%s%s", s, end);
			else if (table_right(f, j))
				fprintf(m, "%*s%s", (int)width[j], s, end);
			else
				fprintf(m, "%-*s%s", (int)width[j], s, end);
		}
		fclose(m);
		/* no trailing blanks when the last cells are empty */
		while (llen && line[llen - 1] == ' ' && !f->raw)
			line[--llen] = '\0';
		printf("%s\n", line);
		free(line);
	}
	for (i = 0; i < nlines * ncols; i++)
		free(cells[i]);
	free(cells);
	free(enc);
}

/* losetup's classic one-line format */
static void print_oldstyle(const struct lmq_info *in)
{
	printf("%s: [%04" PRIu64 "]:%" PRIu64 " (%s)", in->path, in->back_devno,
	       in->back_ino, in->back_file);
	if (in->offset)
		printf(", offset %" PRIu64, in->offset);
	if (in->sizelimit)
		printf(", sizelimit %" PRIu64, in->sizelimit);
	putchar('\n');
}

static int parse_columns(const char *spec, struct outfmt *f)
{
	char *copy, *tok, *save = NULL;
	int c, rc = 0;

	if (*spec == '+')
		spec++;
	else
		f->ncols = 0;
	copy = strdup(spec);
	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (c = 0; c < C_NR; c++)
			if (!strcasecmp(tok, columns[c].name))
				break;
		if (c == C_NR) {
			error_at(NULL, 0, "unknown column: %s", tok);
			rc = -1;
			break;
		}
		if (f->ncols >= MAX_COLS) {
			error_at(NULL, 0, "too many columns: %s", spec);
			rc = -1;
			break;
		}
		f->cols[f->ncols++] = (enum col_id)c;
	}
	if (!rc && !f->ncols) {
		error_at(NULL, 0, "no columns given in '%s'", spec);
		rc = -1;
	}
	free(copy);
	return rc;
}

/* ---- options ---------------------------------------------------------- */

enum {
	OPT_SIZELIMIT = 0x100, OPT_SHOW, OPT_DIO, OPT_RAW, OPT_OUTPUT_ALL,
	OPT_MODE, OPT_STATS, OPT_RESET_STATS, OPT_REMAP,
};

static const struct option longopts[] = {
	{ "all",		no_argument,		NULL, 'a' },
	{ "sector-size",	required_argument,	NULL, 'b' },
	{ "set-capacity",	required_argument,	NULL, 'c' },
	{ "detach",		required_argument,	NULL, 'd' },
	{ "detach-all",		no_argument,		NULL, 'D' },
	{ "find",		no_argument,		NULL, 'f' },
	{ "help",		no_argument,		NULL, 'h' },
	{ "associated",		required_argument,	NULL, 'j' },
	{ "json",		no_argument,		NULL, 'J' },
	{ "list",		no_argument,		NULL, 'l' },
	{ "noheadings",		no_argument,		NULL, 'n' },
	{ "offset",		required_argument,	NULL, 'o' },
	{ "output",		required_argument,	NULL, 'O' },
	{ "output-all",		no_argument,		NULL, OPT_OUTPUT_ALL },
	{ "sizelimit",		required_argument,	NULL, OPT_SIZELIMIT },
	{ "partscan",		no_argument,		NULL, 'P' },
	{ "read-only",		no_argument,		NULL, 'r' },
	{ "direct-io",		optional_argument,	NULL, OPT_DIO },
	{ "raw",		no_argument,		NULL, OPT_RAW },
	{ "show",		no_argument,		NULL, OPT_SHOW },
	{ "verbose",		no_argument,		NULL, 'v' },
	{ "version",		no_argument,		NULL, 'V' },
	{ "mode",		required_argument,	NULL, OPT_MODE },
	{ "remap",		required_argument,	NULL, OPT_REMAP },
	{ "stats",		no_argument,		NULL, OPT_STATS },
	{ "reset-stats",	no_argument,		NULL, OPT_RESET_STATS },
	{ NULL, 0, NULL, 0 },
};

/*
 * Options that cannot go together: a command line may give at most one
 * option of each row (as losetup's exclusivity table).  Rows end with 0.
 */
static const int exclusive[][9] = {
	/* the actions */
	{ 'a', 'c', 'd', 'D', 'f', 'j', OPT_STATS, OPT_RESET_STATS, 0 },
	{ 'J', OPT_RAW, 0 },
	{ 'O', OPT_OUTPUT_ALL, 0 },
};

static const char *long_name(int c)
{
	const struct option *lo;

	for (lo = longopts; lo->name; lo++)
		if (lo->val == c)
			return lo->name;
	return "?";
}

/* Refuse option @c when another of one of its rows came first (@seen). */
static int check_exclusive(int c, int seen[])
{
	size_t r;
	const int *p;

	for (r = 0; r < sizeof(exclusive) / sizeof(exclusive[0]); r++) {
		for (p = exclusive[r]; *p && *p != c; p++)
			;
		if (!*p)
			continue;
		if (seen[r] && seen[r] != c) {
			error_at(NULL, 0, "options --%s and --%s are mutually "
				 "exclusive", long_name(seen[r]), long_name(c));
			return -1;
		}
		seen[r] = c;
	}
	return 0;
}

static void usage(void)
{
	char dio_opt[64];
	int c;

	snprintf(dio_opt, sizeof(dio_opt), "--direct-io[=<%s>]",
		 dio_list("|", "|"));
	printf("\nUsage:\n"
	       " %1$s [options] [<loopmqdev>]\n"
	       " %1$s [options] -f | <loopmqdev> <file>\n"
	       "\nSet up and control loopmq devices (losetup's interface).\n"
	       "A device is /dev/loopmqN, loopmqN or N.\n"
	       "\nOptions:\n"
	       " -a, --all                     list all used devices\n"
	       " -d, --detach <loopmqdev>...   detach one or more devices\n"
	       " -D, --detach-all              detach all used devices\n"
	       " -f, --find                    find first unused device\n"
	       " -c, --set-capacity <loopmqdev> resize the device\n"
	       " -j, --associated <file>       list all devices associated with <file>\n"
	       "\n"
	       " -o, --offset <num>            start at offset <num> into file\n"
	       "     --sizelimit <num>         device is limited to <num> bytes of the file\n"
	       " -b, --sector-size <num>       set the logical sector size to <num>\n"
	       " -P, --partscan                create a partitioned loop device\n"
	       " -r, --read-only               set up a read-only loop device\n"
	       "     %3$-25s open backing file with O_DIRECT (auto:\n"
	       "                               loopmq chooses from the file's layout)\n"
	       "     --mode <mode>             dispatch mode: %2$s\n"
	       "     --remap <pinned|file>     pin the file and remap its I/O to the disk,\n"
	       "                               or go through the file again\n"
	       "     --show                    print device name after setup (with -f)\n"
	       " -v, --verbose                 verbose mode\n"
	       "\n"
	       "     --stats [<loopmqdev>...]  print per-path counters and fallback reasons\n"
	       "     --reset-stats <loopmqdev>... zero the counters\n"
	       "\n"
	       " -J, --json                    use JSON --list output format\n"
	       " -l, --list                    list info about all or specified (default)\n"
	       " -n, --noheadings              don't print headings for --list output\n"
	       " -O, --output <cols>           specify columns to output for --list\n"
	       "     --output-all              output all columns\n"
	       "     --raw                     use raw --list output format\n"
	       "\n"
	       " -h, --help                    display this help\n"
	       " -V, --version                 display version\n"
	       "\nAvailable output columns:\n", prog, mode_list(", "),
	       dio_opt);
	for (c = 0; c < C_NR; c++)
		printf(" %13s  %s\n", columns[c].name, columns[c].help);
	printf("\nSizes accept K, M, G, T, P, E (KiB, MiB ...: powers of 1024)"
	       " and KB, MB ... (powers of 1000).\n"
	       "\nFor more details see loopmqctl(8) and loopmq(4).\n");
}

enum action {
	A_NONE, A_FIND, A_DETACH, A_DETACH_ALL, A_CAPACITY, A_ASSOC, A_ALL,
	A_STATS, A_RESET,
	/* decided after parsing */
	A_ATTACH, A_SET, A_LIST, A_SHOW_ONE, A_PRINT_FREE,
};

static const char *const action_opt[] = {
	[A_FIND] = "--find", [A_DETACH] = "--detach",
	[A_DETACH_ALL] = "--detach-all", [A_CAPACITY] = "--set-capacity",
	[A_ASSOC] = "--associated", [A_ALL] = "--all", [A_STATS] = "--stats",
	[A_RESET] = "--reset-stats",
};

struct opts {
	enum action	act;
	int		list, json, raw, noheadings, output_all, verbose;
	const char	*output;
	const char	*assoc;
	const char	*actdev;	/* argument of -d / -c */
	int		show, ro, partscan;
	int		have_offset, have_sizelimit, have_bs, have_dio, have_mode;
	int		have_remap;
	uint64_t	offset, sizelimit;
	unsigned int	bs;
	int		dio, mode, remap;
};

static int parse_number(const char *what, const char *arg, uint64_t *v)
{
	int r = lmq_parse_size(arg, v);

	if (r == -ERANGE) {
		error_at(NULL, ERANGE, "invalid %s '%s'", what, arg);
		return -1;
	}
	if (r) {
		error_at(NULL, 0, "invalid %s '%s': not a non-negative number",
			 what, arg);
		return -1;
	}
	return 0;
}

/* ---- validation helpers ------------------------------------------------ */

/*
 * Resolve a device argument to an index and its /dev path, and check that
 * the node exists; report failure.
 */
static int resolve_device(const char *arg, int *index, char *path)
{
	struct stat st;
	int r = lmq_parse_device(arg, index);

	if (r == -ENODEV) {
		error_at(arg, 0, "not a %s device (expected /dev/%sN, %sN or N)",
			 lmq_prefix(), lmq_prefix(), lmq_prefix());
		return -1;
	}
	if (r) {
		error_at(arg, -r, "cannot open device");
		return -1;
	}
	lmq_dev_path(*index, path, LMQ_NAME_MAX);
	if (stat(path, &st) != 0) {
		error_at(path, errno, "cannot open device");
		return -1;
	}
	if (!S_ISBLK(st.st_mode)) {
		error_at(path, 0, "cannot open device: not a block device");
		return -1;
	}
	return 0;
}

/* The backing file is usable as asked; returns its size in *size. */
static int check_backing_file(const struct opts *o, const char *file,
			      uint64_t *size)
{
	struct stat st;
	int fd;

	if (stat(file, &st) != 0) {
		error_at(file, errno, "cannot open backing file");
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		error_at(file, EISDIR, "cannot use as backing file");
		return -1;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		error_at(file, 0, "cannot use as backing file: "
			 "not a regular file or block device");
		return -1;
	}
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		error_at(file, errno, "cannot open backing file for reading");
		return -1;
	}
	if (S_ISBLK(st.st_mode)) {
		uint64_t sz = 0;

		if (ioctl(fd, BLKGETSIZE64, &sz) != 0) {
			error_at(file, errno, "cannot get size");
			close(fd);
			return -1;
		}
		*size = sz;
	} else {
		*size = (uint64_t)st.st_size;
	}
	close(fd);
	if (!o->ro) {
		fd = open(file, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;

			fflush(stdout);
			fprintf(stderr, "%s: %s: cannot open backing file "
				"read-write: %s%s\n", prog, file, strerror(e),
				(e == EACCES || e == EROFS || e == EPERM) ?
				" (use -r/--read-only to attach it read-only)" :
				"");
			return -1;
		}
		close(fd);
	}
	return 0;
}

/* ---- actions ----------------------------------------------------------- */

/*
 * The first extent of @file that a pin refuses, from FIEMAP, as text in
 * @buf; 0 if FIEMAP shows none (or cannot tell).
 */
static int pin_bad_extent(const char *file, char *buf, size_t len)
{
	enum { NR = 64 };
	struct {
		struct fiemap		fm;
		struct fiemap_extent	fe[NR];
	} m;
	uint64_t pos = 0, size;
	struct stat st;
	int fd, i, found = 0;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	size = (uint64_t)st.st_size;
	if (!size) {
		snprintf(buf, len, "the file is empty");
		close(fd);
		return 1;
	}
	while (pos < size && !found) {
		memset(&m, 0, sizeof(m));
		m.fm.fm_start = pos;
		m.fm.fm_length = FIEMAP_MAX_OFFSET - pos;
		m.fm.fm_flags = FIEMAP_FLAG_SYNC;
		m.fm.fm_extent_count = NR;
		if (ioctl(fd, FS_IOC_FIEMAP, &m) < 0)
			break;
		if (!m.fm.fm_mapped_extents) {
			snprintf(buf, len, "a hole from offset %llu to the "
				 "end (%llu bytes)", (unsigned long long)pos,
				 (unsigned long long)(size - pos));
			found = 1;
			break;
		}
		for (i = 0; i < (int)m.fm.fm_mapped_extents && !found; i++) {
			struct fiemap_extent *e = &m.fm.fm_extents[i];
			uint32_t f = e->fe_flags;
			const char *what = NULL;

			if (e->fe_logical > pos) {
				snprintf(buf, len, "a hole at offset %llu "
					 "(%llu bytes)", (unsigned long long)pos,
					 (unsigned long long)(e->fe_logical - pos));
				found = 1;
				break;
			}
			if (f & FIEMAP_EXTENT_UNWRITTEN)
				what = "an unwritten (preallocated) extent";
			else if (f & FIEMAP_EXTENT_SHARED)
				what = "a shared (reflinked) extent";
			else if (f & FIEMAP_EXTENT_DATA_INLINE)
				what = "inline data";
			else if (f & FIEMAP_EXTENT_DELALLOC)
				what = "a delayed allocation";
			else if (f & (FIEMAP_EXTENT_ENCODED |
				      FIEMAP_EXTENT_DATA_ENCRYPTED))
				what = "an encoded extent";
			else if (f & FIEMAP_EXTENT_UNKNOWN)
				what = "an extent of unknown location";
			if (what && e->fe_logical < size) {
				snprintf(buf, len, "%s at offset %llu "
					 "(%llu bytes)", what,
					 (unsigned long long)e->fe_logical,
					 (unsigned long long)e->fe_length);
				found = 1;
				break;
			}
			pos = e->fe_logical + e->fe_length;
			if (f & FIEMAP_EXTENT_LAST) {
				if (pos < size) {
					snprintf(buf, len, "a hole from offset "
						 "%llu to the end (%llu bytes)",
						 (unsigned long long)pos,
						 (unsigned long long)(size - pos));
					found = 1;
				}
				pos = size;
				break;
			}
		}
	}
	close(fd);
	return found;
}

/* Is @in bound to the file @st describes (its inode, as -j compares)? */
static int info_backs(const struct lmq_info *in, const struct stat *st)
{
	return in->bound && in->back_ino == st->st_ino &&
	       in->back_maj == major(st->st_dev) &&
	       in->back_min == minor(st->st_dev);
}

/* Undo the \ooo escapes of a /proc file's path, in place. */
static void unescape_octal(char *s)
{
	char *r = s, *w = s;

	while (*r) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' &&
		    r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 |
				      (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = 0;
}

/*
 * Why the kernel found @file busy (EBUSY) for a pin: another device has
 * it pinned, or it is a swap file (both: S_SWAPFILE), or else its page
 * cache could not be dropped.  Writes the cause into @buf.
 */
static void pin_busy_cause(const char *file, char *buf, size_t len)
{
	struct lmq_info in;
	char line[PATH_MAX + 64], *sp;
	struct stat st, o;
	int *list, n, i;
	FILE *f;

	if (stat(file, &st)) {
		snprintf(buf, len, "it is pinned by another device, in use as "
			 "swap, or a page of it could not be dropped from the "
			 "page cache");
		return;
	}
	if (lmq_list(&list, &n, 1) == 0) {
		for (i = 0; i < n; i++) {
			if (lmq_get_pinned(list[i]) != 1 ||
			    lmq_get_info(list[i], &in) || !info_backs(&in, &st))
				continue;
			snprintf(buf, len, "it is pinned by %s", in.path);
			free(list);
			return;
		}
		free(list);
	}
	/*
	 * /proc/swaps: "Filename Type Size Used Priority" after a header;
	 * a blank, tab, newline or backslash in a name is written \ooo
	 */
	f = fopen("/proc/swaps", "re");
	while (f && fgets(line, sizeof(line), f)) {
		sp = strpbrk(line, " \t");
		if (!sp || line[0] != '/')
			continue;
		*sp = 0;
		unescape_octal(line);
		if (stat(line, &o) == 0 && o.st_dev == st.st_dev &&
		    o.st_ino == st.st_ino) {
			snprintf(buf, len, "it is in use as swap");
			fclose(f);
			return;
		}
	}
	if (f)
		fclose(f);
	snprintf(buf, len, "a page of it could not be dropped from the "
		 "page cache (a process writing to it through a shared "
		 "mapping); no device here pins it and it is no swap file");
}

/* Report a failed LOOPMQ_SET_REMAP(PINNED) of @dev with its cause. */
static void pin_failed(const char *dev, const char *file, int err,
		       const char *tail)
{
	char why[256];

	switch (err) {
	case EPERM:
		snprintf(why, sizeof(why), "pinning needs CAP_SYS_ADMIN");
		break;
	case EBUSY:
		pin_busy_cause(file, why, sizeof(why));
		break;
	case EOPNOTSUPP:
		snprintf(why, sizeof(why), "only files on ext4 and xfs that "
			 "take direct I/O and are neither encrypted nor DAX "
			 "can be pinned");
		break;
	case EINVAL:
		if (pin_bad_extent(file, why, sizeof(why)))
			break;
		snprintf(why, sizeof(why), "its file system gives no block "
			 "map for it (on xfs: a file that has shared extents "
			 "or is on the realtime device), or the sector size "
			 "or offset is not a multiple of its disk's logical "
			 "block size");
		break;
	default:
		snprintf(why, sizeof(why), "pinning failed");
		break;
	}
	error_at(dev, err, "cannot pin %s: %s%s", file, why, tail);
}

/*
 * Report a failed direct-I/O setting @setting of @dev (LOOP_SET_DIRECT_IO,
 * LOOPMQ_SET_DIO) with its cause.
 */
static void dio_failed(const char *dev, int setting, int err,
		       const char *tail)
{
	const char *why = NULL;

	switch (err) {
	case ENOTTY:
	case EINVAL:
		/* what loopmq and the stock driver answer to an unknown ioctl */
		if (setting == LOOPMQ_DIO_AUTO)
			why = "the driver has no direct I/O auto (LOOPMQ_SET_DIO): "
			      "an older loopmq module or not loopmq";
		else if (setting == LOOPMQ_DIO_ON)
			why = "the backing file does not take direct I/O at "
			      "this offset and sector size";
		break;
	case ENXIO:
		why = "no file is attached to it";
		break;
	case EPERM:
		why = "this needs CAP_SYS_ADMIN";
		break;
	case EAGAIN:
		why = "its backing file changed while it was mapped; try again";
		break;
	}
	error_at(dev, err, "set direct-io %s failed%s%s%s",
		 lmq_dio_name(setting), why ? ": " : "", why ? why : "", tail);
}

static int do_attach(const struct opts *o, const char *devarg,
		     const char *file)
{
	struct lmq_attach a;
	struct lmq_info in;
	uint64_t size = 0;
	enum lmq_attach_step step = LMQ_STEP_OPEN_FILE;
	char path[LMQ_NAME_MAX];
	int index = -1, r, tries;

	/* everything is checked before a device is touched */
	if (check_backing_file(o, file, &size))
		return 1;
	if (o->have_offset && o->offset && o->offset >= size) {
		error_at(file, 0, "offset %" PRIu64 " is past the end of the "
			 "file (size %" PRIu64 ")", o->offset, size);
		return 1;
	}
	if (o->have_sizelimit && o->sizelimit &&
	    o->offset > UINT64_MAX - o->sizelimit) {
		error_at(file, ERANGE, "offset + sizelimit");
		return 1;
	}
	if (devarg) {
		if (resolve_device(devarg, &index, path))
			return 1;
		r = lmq_is_bound(index);
		if (r < 0) {
			error_at(path, -r, "cannot get status");
			return 1;
		}
		if (r > 0) {
			lmq_get_info(index, &in);
			error_at(path, EBUSY, "attach failed (bound to %s)",
				 in.back_file);
			return 1;
		}
	} else {
		r = lmq_control_open();
		if (r < 0) {
			error_at(lmq_control_path(), -r,
				 "cannot open control device");
			return 1;
		}
		close(r);
	}

	memset(&a, 0, sizeof(a));
	a.file = file;
	a.offset = o->offset;
	a.sizelimit = o->sizelimit;
	a.block_size = o->have_bs ? o->bs : 0;
	a.read_only = o->ro;
	a.partscan = o->partscan;
	a.dio_setting = o->have_dio ? o->dio : -1;
	a.mode = o->have_mode ? o->mode : -1;
	a.remap = o->have_remap ? o->remap : -1;

	for (tries = 0; ; tries++) {
		if (!devarg) {
			index = lmq_find_free();
			if (index < 0) {
				error_at(lmq_control_path(), -index,
					 "cannot find an unused %s device",
					 lmq_prefix());
				return 1;
			}
		}
		lmq_dev_path(index, path, sizeof(path));
		r = lmq_attach(index, &a, &step);
		/* -f races with other users: take the next free one */
		if (r == -EBUSY && !devarg && tries < 16)
			continue;
		break;
	}
	if (r) {
		switch (step) {
		case LMQ_STEP_OPEN_FILE:
			error_at(file, -r, "cannot open backing file");
			break;
		case LMQ_STEP_OPEN_DEV:
			error_at(path, -r, "cannot open device");
			break;
		case LMQ_STEP_ATTACH:
			error_at(path, -r, "attach failed");
			break;
		case LMQ_STEP_SET_REMAP:
			pin_failed(path, file, -r, " (device detached again)");
			break;
		case LMQ_STEP_SET_DIO:
			dio_failed(path, a.dio_setting, -r,
				   " (device detached again)");
			break;
		default:
			error_at(path, -r, "%s failed (device detached again)",
				 lmq_attach_step_name(step));
			break;
		}
		return 1;
	}
	if (a.dio_setting == LOOPMQ_DIO_ON && lmq_get_info(index, &in) == 0 &&
	    !in.dio)
		fprintf(stderr, "%s: %s: warning: direct I/O not enabled "
			"(the backing file does not support it)\n", prog, path);
	if (o->show)
		printf("%s\n", path);
	return 0;
}

static int do_set(const struct opts *o, const char *devarg)
{
	char path[LMQ_NAME_MAX];
	int index, r;

	if (resolve_device(devarg, &index, path))
		return 1;
	if (o->have_bs) {
		r = lmq_set_block_size(index, o->bs);
		if (r) {
			error_at(path, -r, "set sector size failed");
			return 1;
		}
	}
	if (o->have_dio) {
		/* on and off as losetup; auto is loopmq's */
		if (o->dio == LOOPMQ_DIO_AUTO)
			r = lmq_set_dio(index, LOOPMQ_DIO_AUTO);
		else
			r = lmq_set_direct_io(index, o->dio == LOOPMQ_DIO_ON);
		if (r) {
			dio_failed(path, o->dio, -r, "");
			return 1;
		}
	}
	if (o->have_mode) {
		r = lmq_set_mode(index, (unsigned int)o->mode);
		if (r) {
			error_at(path, -r, "set mode failed");
			return 1;
		}
	}
	if (o->have_remap) {
		r = lmq_set_remap(index, (unsigned int)o->remap);
		if (r) {
			struct lmq_info in;

			if (o->remap == LOOPMQ_REMAP_PINNED &&
			    lmq_get_info(index, &in) == 0)
				pin_failed(path, in.back_file, -r, "");
			else
				error_at(path, -r, "set remap failed");
			return 1;
		}
	}
	return 0;
}

/* @op on every device named; a failure is reported as "<what> failed". */
static int each_device(int argc, char **argv, int (*op)(int index),
		       const char *what)
{
	char path[LMQ_NAME_MAX];
	int i, index, r, rc = 0;

	for (i = 0; i < argc; i++) {
		if (resolve_device(argv[i], &index, path)) {
			rc = 1;
			continue;
		}
		r = op(index);
		if (r) {
			error_at(path, -r, "%s failed", what);
			rc = 1;
		}
	}
	return rc;
}

static int do_detach(int argc, char **argv)
{
	return each_device(argc, argv, lmq_detach, "detach");
}

/* Indexes of bound devices. */
static int bound_devices(int **list, int *n)
{
	int *all, count, i, k = 0, r;

	/* the order of /sys/block, as losetup lists */
	r = lmq_list(&all, &count, 0);
	if (r) {
		error_at("/sys/block", -r, "cannot list devices");
		return -1;
	}
	for (i = 0; i < count; i++)
		if (lmq_is_bound(all[i]) == 1)
			all[k++] = all[i];
	*list = all;
	*n = k;
	return 0;
}

/*
 * The devices named on the command line, or every bound device when none is
 * named.  Returns 0; 1 when a name did not resolve (it was reported and left
 * out); -1 when no list could be made.
 */
static int device_list(int argc, char **argv, int **list, int *n)
{
	int i, rc = 0;

	*n = 0;
	if (!argc)
		return bound_devices(list, n);
	*list = calloc((size_t)argc, sizeof(**list));
	if (!*list)
		return -1;
	for (i = 0; i < argc; i++) {
		char path[LMQ_NAME_MAX];

		if (resolve_device(argv[i], &(*list)[*n], path)) {
			rc = 1;
			continue;
		}
		(*n)++;
	}
	return rc;
}

static int do_detach_all(void)
{
	char path[LMQ_NAME_MAX];
	int *list, n, i, r, rc = 0;

	if (bound_devices(&list, &n))
		return 1;
	for (i = 0; i < n; i++) {
		r = lmq_detach(list[i]);
		if (r) {
			lmq_dev_path(list[i], path, sizeof(path));
			error_at(path, -r, "detach failed");
			rc = 1;
		}
	}
	free(list);
	return rc;
}

static int do_capacity(const char *devarg)
{
	char path[LMQ_NAME_MAX];
	int index, r;

	if (resolve_device(devarg, &index, path))
		return 1;
	r = lmq_set_capacity(index);
	if (r) {
		error_at(path, -r, "set capacity failed");
		return 1;
	}
	return 0;
}

static int do_print_free(void)
{
	char path[LMQ_NAME_MAX];
	int index = lmq_find_free();

	if (index < 0) {
		error_at(lmq_control_path(), -index,
			 "cannot find an unused %s device", lmq_prefix());
		return 1;
	}
	lmq_dev_path(index, path, sizeof(path));
	printf("%s\n", path);
	return 0;
}

static void emit(const struct opts *o, const struct outfmt *f,
		 const struct lmq_info *infos, int n)
{
	int i;

	if (f->json)
		print_json(f, infos, n);
	else if (o->list || f->stats)
		print_table(f, infos, n);
	else
		for (i = 0; i < n; i++)
			if (infos[i].bound)
				print_oldstyle(&infos[i]);
}

/*
 * List devices: the ones named on the command line (unbound ones too with
 * -l, an error without), else every bound one (filtered by -j).
 */
static int do_list(const struct opts *o, const struct outfmt *f,
		   int argc, char **argv)
{
	struct lmq_info *infos;
	struct stat fst;
	int *list = NULL, n = 0, i, k = 0, r, rc = 0;

	if (o->assoc && stat(o->assoc, &fst) != 0) {
		error_at(o->assoc, errno, "cannot stat");
		return 1;
	}
	rc = device_list(argc, argv, &list, &n);
	if (rc < 0)
		return 1;
	infos = calloc((size_t)n + 1, sizeof(*infos));
	if (!infos) {
		free(list);
		return 1;
	}
	for (i = 0; i < n; i++) {
		char path[LMQ_NAME_MAX];

		r = lmq_get_info(list[i], &infos[k]);
		lmq_dev_path(list[i], path, sizeof(path));
		if (r) {
			error_at(path, -r, "cannot get status");
			rc = 1;
			continue;
		}
		if (argc && !o->list && !f->json && !infos[k].bound) {
			error_at(path, ENXIO, "cannot get status");
			rc = 1;
			continue;
		}
		if (o->assoc && (!info_backs(&infos[k], &fst) ||
				 (o->have_offset &&
				  infos[k].offset != o->offset)))
			continue;
		k++;
	}
	emit(o, f, infos, k);
	free(infos);
	free(list);
	return rc;
}

/*
 * What --stats shows of a device: the answer of LOOPMQ_GET_STATS, and the
 * direct-I/O state of a bound one.
 */
static int get_stats_info(int index, struct lmq_info *in)
{
	int r;

	memset(in, 0, sizeof(*in));
	in->index = index;
	lmq_dev_path(index, in->path, sizeof(in->path));
	r = lmq_get_stats(index, &in->stats);
	if (r)
		return r;
	in->have_stats = 1;
	in->have_mode = 1;
	in->mode = in->stats.mode;
	if (lmq_get_dio(index, &in->dio_state) == 0)
		in->have_dio_state = 1;
	return 0;
}

/* The statistics of the devices named, else of every bound one. */
static int do_stats(const struct opts *o, const struct outfmt *f,
		    int argc, char **argv)
{
	struct lmq_info *infos;
	int *list = NULL, n = 0, i, k = 0, r, rc;

	rc = device_list(argc, argv, &list, &n);
	if (rc < 0)
		return 1;
	infos = calloc((size_t)n + 1, sizeof(*infos));
	if (!infos) {
		free(list);
		return 1;
	}
	for (i = 0; i < n; i++) {
		r = get_stats_info(list[i], &infos[k]);
		if (r) {
			error_at(infos[k].path, -r, "cannot read statistics");
			rc = 1;
			continue;
		}
		k++;
	}
	emit(o, f, infos, k);
	free(infos);
	free(list);
	return rc;
}

static int do_reset(int argc, char **argv)
{
	return each_device(argc, argv, lmq_reset_stats, "reset statistics");
}

/* ---- main ------------------------------------------------------------- */

static int reject(const char *opt, const char *need)
{
	error_at(NULL, 0, "option %s is only allowed %s", opt, need);
	try_help();
	return 1;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct outfmt f;
	uint64_t v;
	int excl_seen[sizeof(exclusive) / sizeof(exclusive[0])] = { 0 };
	int c, nargs, i;
	char **args;

	/* getopt's own messages say "loopmqctl:" too */
	argv[0] = (char *)prog;
	init_columns();
	memset(&o, 0, sizeof(o));
	memset(&f, 0, sizeof(f));
	set_columns(&f, default_columns, ARRAY_SIZE(default_columns));

	while ((c = getopt_long(argc, argv, "ab:c:d:Dfhj:JlnO:o:PrvV", longopts,
				NULL)) != -1) {
		if (check_exclusive(c, excl_seen))
			return 1;
		switch (c) {
		case 'a':
			o.act = A_ALL;
			break;
		case 'b':
			if (parse_number("sector size", optarg, &v))
				return 1;
			if (v != 512 && v != 1024 && v != 2048 && v != 4096) {
				error_at(NULL, 0, "invalid sector size '%s': "
					 "must be 512, 1024, 2048 or 4096",
					 optarg);
				return 1;
			}
			o.have_bs = 1;
			o.bs = (unsigned int)v;
			break;
		case 'c':
			/* as losetup: the device is the option's argument */
			o.act = A_CAPACITY;
			o.actdev = optarg;
			break;
		case 'd':
			/* the first device is the argument, more may follow */
			o.act = A_DETACH;
			if (o.actdev) {
				error_at(NULL, 0, "option --detach given twice");
				return 1;
			}
			o.actdev = optarg;
			break;
		case 'D':
			o.act = A_DETACH_ALL;
			break;
		case 'f':
			o.act = A_FIND;
			break;
		case 'h':
			usage();
			return 0;
		case 'j':
			o.act = A_ASSOC;
			o.assoc = optarg;
			break;
		case 'J':
			o.json = 1;
			break;
		case 'l':
			o.list = 1;
			break;
		case 'n':
			o.noheadings = 1;
			break;
		case 'O':
			if (o.output) {
				error_at(NULL, 0, "option --output given twice");
				return 1;
			}
			o.output = optarg;
			if (parse_columns(optarg, &f))
				return 1;
			break;
		case 'o':
			if (parse_number("offset", optarg, &o.offset))
				return 1;
			o.have_offset = 1;
			break;
		case OPT_SIZELIMIT:
			if (parse_number("sizelimit", optarg, &o.sizelimit))
				return 1;
			o.have_sizelimit = 1;
			break;
		case 'P':
			o.partscan = 1;
			break;
		case 'r':
			o.ro = 1;
			break;
		case OPT_DIO:
			/* alone, as losetup's: on */
			o.dio = optarg ? lmq_dio_parse(optarg) : LOOPMQ_DIO_ON;
			if (o.dio < 0) {
				error_at(NULL, 0, "invalid --direct-io argument "
					 "'%s' (expected %s)", optarg,
					 dio_list(", ", " or "));
				return 1;
			}
			o.have_dio = 1;
			break;
		case OPT_RAW:
			o.raw = 1;
			break;
		case OPT_OUTPUT_ALL:
			o.output_all = 1;
			break;
		case OPT_SHOW:
			o.show = 1;
			break;
		case 'v':
			o.verbose = 1;
			break;
		case 'V':
			printf("%s from loopmq %s\n", prog, LOOPMQ_VERSION);
			return 0;
		case OPT_REMAP:
			if (!strcmp(optarg, "pinned")) {
				o.remap = LOOPMQ_REMAP_PINNED;
			} else if (!strcmp(optarg, "file")) {
				o.remap = LOOPMQ_REMAP_FILE;
			} else {
				error_at(NULL, 0, "unknown --remap '%s' "
					 "(expected pinned or file)", optarg);
				return 1;
			}
			o.have_remap = 1;
			break;
		case OPT_MODE:
			o.mode = lmq_mode_parse(optarg);
			if (o.mode < 0) {
				error_at(NULL, 0, "unknown mode '%s' (expected "
					 "%s)", optarg, mode_list(" or "));
				return 1;
			}
			o.have_mode = 1;
			break;
		case OPT_STATS:
			o.act = A_STATS;
			break;
		case OPT_RESET_STATS:
			o.act = A_RESET;
			break;
		default:
			try_help();
			return 1;
		}
	}
	args = argv + optind;
	nargs = argc - optind;
	if (o.actdev) {
		/* the device of -d/-c goes first, before the other arguments */
		args = calloc((size_t)nargs + 2, sizeof(*args));
		if (!args)
			return 1;
		args[0] = (char *)o.actdev;
		memcpy(args + 1, argv + optind, (size_t)nargs * sizeof(*args));
		nargs++;
	}

	/* output format */
	if (o.output_all) {
		f.ncols = 0;
		for (i = 0; i < C_NR; i++)
			f.cols[f.ncols++] = (enum col_id)i;
	}
	f.json = o.json;
	f.raw = o.raw;
	f.noheadings = o.noheadings;
	/* any list-format option means --list */
	if (o.json || o.raw || o.noheadings || o.output || o.output_all)
		o.list = 1;

	/* decide what to do */
	switch (o.act) {
	case A_NONE:
		if (o.list || (nargs == 0 && !o.have_offset &&
			       !o.have_sizelimit && !o.have_bs &&
			       !o.have_dio && !o.have_mode && !o.have_remap &&
			       !o.ro &&
			       !o.partscan && !o.show)) {
			o.act = nargs ? A_SHOW_ONE : A_LIST;
		} else if (nargs == 2) {
			o.act = A_ATTACH;
		} else if (nargs == 1 &&
			   (o.have_bs || o.have_dio || o.have_mode ||
			    o.have_remap)) {
			o.act = A_SET;
		} else if (nargs == 1) {
			o.act = A_SHOW_ONE;
		} else {
			error_at(NULL, 0, nargs ? "too many arguments" :
				 "no device or file given");
			try_help();
			return 1;
		}
		break;
	case A_FIND:
		if (nargs > 1) {
			error_at(NULL, 0, "option --find takes at most one "
				 "file (no device)");
			try_help();
			return 1;
		}
		o.act = nargs ? A_ATTACH : A_PRINT_FREE;
		break;
	case A_RESET:
		if (!nargs) {
			error_at(NULL, 0, "option %s needs a device",
				 action_opt[o.act]);
			try_help();
			return 1;
		}
		break;
	case A_CAPACITY:
		if (nargs != 1) {
			error_at(NULL, 0, "option --set-capacity needs exactly "
				 "one device");
			try_help();
			return 1;
		}
		break;
	case A_DETACH_ALL: case A_ASSOC: case A_ALL:
		if (nargs) {
			error_at(NULL, 0, "option %s takes no device or file",
				 action_opt[o.act]);
			try_help();
			return 1;
		}
		break;
	default:
		break;
	}

	/* options that belong to other actions */
	if (o.act != A_ATTACH) {
		if (o.have_offset && o.act != A_ASSOC)
			return reject("--offset", "when attaching a file "
				      "(or with --associated)");
		if (o.have_sizelimit)
			return reject("--sizelimit", "when attaching a file");
		if (o.ro)
			return reject("--read-only", "when attaching a file");
		if (o.partscan)
			return reject("--partscan", "when attaching a file");
		if (o.show)
			return reject("--show", "when attaching a file");
	}
	if (o.act != A_ATTACH && o.act != A_SET) {
		if (o.have_bs)
			return reject("--sector-size",
				      "when attaching a file or with one device");
		if (o.have_dio)
			return reject("--direct-io",
				      "when attaching a file or with one device");
		if (o.have_mode)
			return reject("--mode",
				      "when attaching a file or with one device");
		if (o.have_remap)
			return reject("--remap",
				      "when attaching a file or with one device");
	}
	if (o.list && o.act != A_LIST && o.act != A_SHOW_ONE &&
	    o.act != A_ALL && o.act != A_ASSOC && o.act != A_STATS) {
		const char *opt = o.json ? "--json" : o.raw ? "--raw" :
			o.noheadings ? "--noheadings" : o.output ? "--output" :
			o.output_all ? "--output-all" : "--list";

		return reject(opt, "when listing devices");
	}
	if (o.act == A_STATS && (o.output || o.output_all))
		return reject(o.output ? "--output" : "--output-all",
			      "with --list");
	if (o.act == A_STATS) {
		f.stats = 1;
		set_columns(&f, stats_columns, ARRAY_SIZE(stats_columns));
	}
	if (f.json || f.stats)
		expand_columns(&f);

	switch (o.act) {
	case A_ATTACH:
		return do_attach(&o, nargs == 2 ? args[0] : NULL,
				 args[nargs - 1]);
	case A_SET:
		return do_set(&o, args[0]);
	case A_DETACH:
		return do_detach(nargs, args);
	case A_DETACH_ALL:
		return do_detach_all();
	case A_CAPACITY:
		return do_capacity(args[0]);
	case A_PRINT_FREE:
		return do_print_free();
	case A_STATS:
		return do_stats(&o, &f, nargs, args);
	case A_RESET:
		return do_reset(nargs, args);
	case A_LIST:
		/* "loopmqctl" alone lists like "loopmqctl -l" */
		o.list = 1;
		return do_list(&o, &f, 0, NULL);
	case A_ALL: case A_ASSOC:
		return do_list(&o, &f, 0, NULL);
	case A_SHOW_ONE:
		return do_list(&o, &f, nargs, args);
	default:
		return 1;
	}
}

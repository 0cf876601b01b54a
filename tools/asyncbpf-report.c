// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* asyncbpf-report: summarize or convert what asyncbpf-record wrote. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/readers.h"
#include "view/tables.h"
#include "profile/writers.h"
#include "errmsg.h"

#define EXIT_USAGE 1
#define EXIT_INPUT 2

#define MAX_FILE (1024ull << 20)

static const char usage[] =
	"usage: asyncbpf-report [--top N] [--task NAME] [--pid PID] [--grep REGEX]\n"
	"                       [-o FILE [--format FORMAT]] FILE\n"
	"\n"
	"Reads a profile written by asyncbpf-record (collapsed or pprof, gzip-compressed or\n"
	"not; - for stdin) and prints the top functions by self and total samples, the top\n"
	"stacks and the top task paths; with -o, writes the (filtered) profile instead.\n"
	"\n"
	"  -n, --top N          lines per table (default 10; 0: all)\n"
	"  -t, --task NAME      only stacks in which the task NAME runs or awaits\n"
	"  -p, --pid PID        only stacks of this process\n"
	"  -g, --grep REGEX     only stacks with a frame matching this extended regex\n"
	"  -o, --output FILE    write the profile here (- for stdout)\n"
	"      --format FORMAT  collapsed, pprof, speedscope or html (default: from the -o\n"
	"                       name: .pb.gz/.pprof, .json, .html; else collapsed)\n"
	"\n"
	"Exit status: 0 done, 1 usage error, 2 the input cannot be read or the output written.\n"
	"See asyncbpf-report(8).\n";

struct opts {
	const char *input, *output, *task, *grep;
	long top;
	int pid; /* 0: any */
	enum out_format format;
	bool format_set;
	regex_t re;
};

#define err(...) errmsg("asyncbpf-report", __VA_ARGS__)

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'n' },
		{ "task", required_argument, NULL, 't' },
		{ "pid", required_argument, NULL, 'p' },
		{ "grep", required_argument, NULL, 'g' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	char *end;
	long v;
	int c;

	o->top = 10;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:t:p:g:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (*end || end == optarg || errno || v < 0) {
				err("invalid --top '%s' (a count, 0 for all)", optarg);
				return -1;
			}
			o->top = v;
			break;
		case 't':
			o->task = optarg;
			break;
		case 'p':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (*end || end == optarg || errno || v <= 0 || v > INT_MAX) {
				err("invalid pid '%s'", optarg);
				return -1;
			}
			o->pid = v;
			break;
		case 'g': {
			int ret = regcomp(&o->re, optarg, REG_EXTENDED | REG_NOSUB);

			if (ret) {
				char msg[256];

				regerror(ret, &o->re, msg, sizeof(msg));
				err("invalid --grep '%s': %s", optarg, msg);
				return -1;
			}
			o->grep = optarg;
			break;
		}
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			if (writer_format(optarg, &o->format)) {
				err("unknown format '%s' (known: %s)", optarg, writer_formats());
				return -1;
			}
			o->format_set = true;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case ':':
			err("option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			err("unknown option '%s' (see --help)", argv[optind - 1]);
			return -1;
		}
	}
	if (optind != argc - 1) {
		err(optind < argc ? "one input file only (see --help)"
				  : "no input file (see --help)");
		return -1;
	}
	o->input = argv[optind];
	if (o->format_set && !o->output) {
		err("--format needs -o");
		return -1;
	}
	if (!o->format_set)
		o->format = writer_guess(o->output);
	return 0;
}

static char *slurp(const char *path, size_t *len)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	size_t n = 0, cap = 1 << 16;
	char *buf = NULL;
	struct stat st;

	if (fd < 0) {
		err("cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	if (!fstat(fd, &st) && S_ISDIR(st.st_mode)) {
		err("%s is a directory", path);
		goto fail;
	}
	for (;;) {
		ssize_t r;

		if (!buf || n == cap) {
			char *nb;

			if (buf)
				cap *= 2;
			nb = cap <= MAX_FILE + 1 ? realloc(buf, cap) : NULL;
			if (!nb) {
				err("%s: too large (at most %llu MiB)", path, MAX_FILE >> 20);
				goto fail;
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err("cannot read %s: %s", path, strerror(errno));
			goto fail;
		}
		if (!r)
			break;
		n += r;
	}
	if (fd)
		close(fd);
	*len = n;
	return buf;
fail:
	if (fd > 0)
		close(fd);
	free(buf);
	return NULL;
}

/* The stacks that pass the filters, in a new profile. */
static struct profile *filter(struct opts *o, struct profile *in)
{
	struct stack_filter f = { .pid = o->pid, .task = o->task, .re = o->grep ? &o->re : NULL };
	struct profile *out = profile_new();
	size_t n;

	/* heaviest first, so that the new profile's frames are numbered in that order */
	profile_stacks(in, &n);
	if (!out || profile_merge(out, in, &f, NULL)) {
		err("out of memory");
		profile_free(out);
		return NULL;
	}
	return out;
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * v / total : 0;
}

static void print_row(uint64_t v, uint64_t total, const char *key)
{
	printf("  %10llu %6.2f%%  %s\n", (unsigned long long)v, pct(v, total), key);
}

static void report_tables(struct tables *t, long top)
{
	size_t lim;

	lim = top && (size_t)top < t->nfuncs ? (size_t)top : t->nfuncs;
	tables_sort_funcs(t, BY_SELF);
	printf("\nTop functions by self samples:\n  %10s %7s  %s\n", "self", "", "function");
	for (size_t i = 0; i < lim; i++)
		print_row(t->funcs[i].self, t->total, t->funcs[i].key);
	tables_sort_funcs(t, BY_TOTAL);
	printf("\nTop functions by total samples (self and callees):\n  %10s %7s  %s\n", "total",
	       "", "function");
	for (size_t i = 0; i < lim; i++)
		print_row(t->funcs[i].total, t->total, t->funcs[i].key);
	tables_sort_paths(t, false);
	printf("\nTop task paths (outermost task first: running function), %llu samples in "
	       "tasks (%.2f%%):\n",
	       (unsigned long long)t->in_tasks, pct(t->in_tasks, t->total));
	for (size_t i = 0; i < t->npaths && (!top || i < (size_t)top); i++)
		print_row(t->paths[i].weight, t->total, t->paths[i].key);
}

static void report_stacks(struct profile *p, long top)
{
	size_t n;
	const struct stack_ent *st = profile_stacks(p, &n);
	uint64_t total = profile_total(p);
	char text[4096];

	printf("\nTop stacks (root first):\n");
	for (size_t i = 0; i < n && (!top || i < (size_t)top); i++) {
		printf("  %10llu %6.2f%%\n", (unsigned long long)st[i].count,
		       pct(st[i].count, total));
		for (uint32_t k = 0; k < st[i].n; k++) {
			frame_text(profile_frame_sym(p, st[i].ids[k]), text, sizeof(text));
			printf("        %s\n", text);
		}
	}
}

int main(int argc, char **argv)
{
	struct opts o = {};
	struct profile *in, *p;
	char why[512], *buf;
	size_t len, nstacks;
	int rc = 0;

	if (parse_args(argc, argv, &o))
		return EXIT_USAGE;
	buf = slurp(o.input, &len);
	if (!buf)
		return EXIT_INPUT;
	in = profile_new();
	if (!in) {
		err("out of memory");
		free(buf);
		return EXIT_INPUT;
	}
	if (profile_read(buf, len, in, why, sizeof(why))) {
		err("%s: %s", o.input, why);
		free(buf);
		profile_free(in);
		return EXIT_INPUT;
	}
	free(buf);
	p = filter(&o, in);
	profile_free(in);
	if (!p)
		return EXIT_INPUT;
	if (o.output) {
		if (writer_write(o.output, o.format, p, why, sizeof(why))) {
			err("%s", why);
			rc = EXIT_INPUT;
		}
	} else {
		profile_stacks(p, &nstacks);
		printf("%s: %llu samples in %zu distinct stacks", o.input,
		       (unsigned long long)profile_total(p), nstacks);
		if (profile_period(p))
			printf(", one every %.3f ms", profile_period(p) / 1e6);
		printf("\n");
		struct tables t;

		if (tables_build(&t, p, NULL, NULL)) {
			err("out of memory");
			rc = EXIT_INPUT;
		} else {
			report_tables(&t, o.top);
			tables_free(&t);
			report_stacks(p, o.top);
		}
	}
	if (o.grep)
		regfree(&o.re);
	profile_free(p);
	return rc;
}

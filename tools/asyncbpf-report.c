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

#include "readers.h"
#include "writers.h"

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
	"Exit status: 0 done, 1 usage error, 2 the input cannot be read or the output written.\n";

struct opts {
	const char *input, *output, *task, *grep;
	long top;
	int pid; /* 0: any */
	enum out_format format;
	bool format_set;
	regex_t re;
};

static void err(const char *fmt, ...)
{
	va_list ap;

	fputs("asyncbpf-report: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

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

static bool keep(struct opts *o, struct profile *p, const struct stack_ent *st)
{
	bool pid_ok = !o->pid, task_ok = !o->task, grep_ok = !o->grep;

	for (uint32_t i = 0; i < st->n; i++) {
		const struct frame_sym *s = profile_frame_sym(p, st->ids[i]);

		if (s->kind == FRAME_PROCESS && s->line == o->pid)
			pid_ok = true;
		if (o->task && s->kind == FRAME_TASK && !strcmp(s->name, o->task))
			task_ok = true;
		if (o->grep && !grep_ok) {
			char text[4096];

			frame_text(s, text, sizeof(text));
			grep_ok = !regexec(&o->re, text, 0, NULL, 0);
		}
	}
	return pid_ok && task_ok && grep_ok;
}

/* The stacks that pass the filters, in a new profile. */
static struct profile *filter(struct opts *o, struct profile *in)
{
	struct profile *out = profile_new();
	const struct stack_ent *st;
	size_t n, nframes = profile_nframes(in);
	uint32_t *map = calloc(nframes + 1, sizeof(*map)), *ids = NULL;
	uint32_t maxn = 0;

	if (!out || !map)
		goto fail;
	for (size_t i = 0; i < nframes; i++)
		map[i] = UINT32_MAX;
	st = profile_stacks(in, &n);
	for (size_t i = 0; i < n; i++)
		if (st[i].n > maxn)
			maxn = st[i].n;
	ids = malloc((maxn + 1) * sizeof(*ids));
	if (!ids)
		goto fail;
	profile_set_period(out, profile_period(in));
	for (size_t i = 0; i < n; i++) {
		if (!keep(o, in, &st[i]))
			continue;
		for (uint32_t k = 0; k < st[i].n; k++) {
			uint32_t id = st[i].ids[k];

			if (map[id] == UINT32_MAX) {
				const struct frame_sym *s = profile_frame_sym(in, id);

				map[id] = profile_frame(out, s->kind, s->name, s->file, s->line);
				if (map[id] == UINT32_MAX)
					goto fail;
				profile_set_start_line(out, map[id], s->start_line);
			}
			ids[k] = map[id];
		}
		if (profile_add(out, ids, st[i].n, st[i].count))
			goto fail;
	}
	free(map);
	free(ids);
	return out;
fail:
	err("out of memory");
	free(map);
	free(ids);
	profile_free(out);
	return NULL;
}

/* A function: Python frames at any line of one (qualname, file); other frames as such. */
struct func {
	char *key;
	uint64_t self, total;
	size_t last_stack; /* +1: the stack that counted it in total last */
};

struct ranked {
	char *key;
	uint64_t count;
};

static char *func_key(const struct frame_sym *s)
{
	char text[4096], *k;

	if (s->kind != FRAME_PYTHON) {
		frame_text(s, text, sizeof(text));
		return strdup(text);
	}
	if (asprintf(&k, "%s (%s)", s->name, s->file ? s->file : "?") < 0)
		return NULL;
	return k;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct ranked *)a)->key, ((const struct ranked *)b)->key);
}

static int by_count_desc(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->key, y->key);
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * v / total : 0;
}

static void print_ranked(struct ranked *r, size_t n, long top, uint64_t total)
{
	qsort(r, n, sizeof(*r), by_count_desc);
	for (size_t i = 0; i < n && (!top || i < (size_t)top); i++)
		printf("  %10llu %6.2f%%  %s\n", (unsigned long long)r[i].count,
		       pct(r[i].count, total), r[i].key);
}

static int report_functions(struct profile *p, long top)
{
	size_t n, nframes = profile_nframes(p), nfuncs = 0;
	const struct stack_ent *st = profile_stacks(p, &n);
	struct ranked *keys = calloc(nframes + 1, sizeof(*keys)), *r = NULL;
	uint32_t *func_of = calloc(nframes + 1, sizeof(*func_of));
	struct func *funcs = calloc(nframes + 1, sizeof(*funcs));
	uint64_t total = profile_total(p);
	int ret = -1;

	if (!keys || !func_of || !funcs)
		goto out;
	/* group frames by function: sort (key, frame id) pairs */
	for (size_t i = 0; i < nframes; i++) {
		keys[i].key = func_key(profile_frame_sym(p, i));
		keys[i].count = i;
		if (!keys[i].key)
			goto out;
	}
	qsort(keys, nframes, sizeof(*keys), by_key);
	for (size_t i = 0; i < nframes; i++) {
		if (!i || strcmp(keys[i].key, keys[i - 1].key))
			funcs[nfuncs++].key = keys[i].key;
		func_of[keys[i].count] = nfuncs - 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (!st[i].n)
			continue;
		funcs[func_of[st[i].ids[st[i].n - 1]]].self += st[i].count;
		for (uint32_t k = 0; k < st[i].n; k++) {
			struct func *f = &funcs[func_of[st[i].ids[k]]];

			if (f->last_stack != i + 1) {
				f->last_stack = i + 1;
				f->total += st[i].count;
			}
		}
	}
	r = calloc(nfuncs + 1, sizeof(*r));
	if (!r)
		goto out;
	for (size_t i = 0; i < nfuncs; i++)
		r[i] = (struct ranked){ funcs[i].key, funcs[i].self };
	printf("\nTop functions by self samples:\n  %10s %7s  %s\n", "self", "", "function");
	print_ranked(r, nfuncs, top, total);
	for (size_t i = 0; i < nfuncs; i++)
		r[i] = (struct ranked){ funcs[i].key, funcs[i].total };
	printf("\nTop functions by total samples (self and callees):\n  %10s %7s  %s\n", "total",
	       "", "function");
	print_ranked(r, nfuncs, top, total);
	ret = 0;
out:
	if (keys)
		for (size_t i = 0; i < nframes; i++)
			free(keys[i].key);
	free(keys);
	free(func_of);
	free(funcs);
	free(r);
	return ret;
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

/* The tasks of a stack from the outermost, and the function running in the innermost. */
static char *task_path(struct profile *p, const struct stack_ent *st)
{
	char *buf = NULL, text[4096];
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	bool any = false;

	if (!m)
		return NULL;
	for (uint32_t k = 0; k < st->n; k++) {
		const struct frame_sym *s = profile_frame_sym(p, st->ids[k]);

		if (s->kind == FRAME_TASK) {
			frame_text(s, text, sizeof(text));
			fprintf(m, "%s%s", any ? " -> " : "", text);
			any = true;
		}
	}
	if (any && st->n) {
		const struct frame_sym *leaf = profile_frame_sym(p, st->ids[st->n - 1]);

		if (leaf->kind == FRAME_PYTHON)
			fprintf(m, ": %s", leaf->name);
		else {
			frame_text(leaf, text, sizeof(text));
			fprintf(m, ": %s", text);
		}
	}
	fclose(m);
	if (!any) {
		free(buf);
		return strdup("");
	}
	return buf;
}

static int report_task_paths(struct profile *p, long top)
{
	size_t n, nr = 0;
	const struct stack_ent *st = profile_stacks(p, &n);
	struct ranked *r = calloc(n + 1, sizeof(*r));
	uint64_t total = profile_total(p), in_tasks = 0;
	int ret = -1;

	if (!r)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char *k = task_path(p, &st[i]);

		if (!k)
			goto out;
		if (!*k) {
			free(k);
			continue;
		}
		r[nr++] = (struct ranked){ k, st[i].count };
		in_tasks += st[i].count;
	}
	qsort(r, nr, sizeof(*r), by_key);
	/* merge equal paths */
	{
		size_t w = 0;

		for (size_t i = 0; i < nr; i++) {
			if (w && !strcmp(r[w - 1].key, r[i].key)) {
				r[w - 1].count += r[i].count;
				free(r[i].key);
			} else {
				r[w++] = r[i];
			}
		}
		nr = w;
	}
	printf("\nTop task paths (outermost task first: running function), %llu samples in "
	       "tasks (%.2f%%):\n",
	       (unsigned long long)in_tasks, pct(in_tasks, total));
	print_ranked(r, nr, top, total);
	ret = 0;
out:
	for (size_t i = 0; i < nr; i++)
		free(r[i].key);
	free(r);
	return ret;
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
		if (report_functions(p, o.top) || report_task_paths(p, o.top)) {
			err("out of memory");
			rc = EXIT_INPUT;
		} else {
			report_stacks(p, o.top);
		}
	}
	if (o.grep)
		regfree(&o.re);
	profile_free(p);
	return rc;
}

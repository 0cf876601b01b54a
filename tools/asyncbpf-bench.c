// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* asyncbpf-bench: the three readers (bpf, memcpy, vmreadv) on one asyncio workload,
 * against no profiler, at two rates, in interleaved repetitions, and what linking a pool
 * worker's sample to its task adds to BPF's. Prints a Markdown table and writes it with a
 * CSV and a plot of cost per sample against stack depth. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/benchreport.h"
#include "bench/benchrun.h"
#include "profile/readers.h"
#include "bench/sigcost.h"
#include "clock.h"
#include "errmsg.h"

/* where make install puts the preload library and the workload (the Makefile passes
 * $(PREFIX)/lib/asyncbpf) */
#ifndef ASYNCBPF_LIBDIR
#define ASYNCBPF_LIBDIR "/usr/local/lib/asyncbpf"
#endif

/* thread work (benchreport.h): fn's rounds, about 5 ms of CPU on this machine */
#define TW_WORK 100000

static const char usage[] =
	"usage: asyncbpf-bench [--quick] [--reps N] [--python PATH] [--out DIR]\n"
	"                      [--workload FILE]\n"
	"\n"
	"Runs the bundled asyncio workload with no profiler and under each reader (bpf,\n"
	"memcpy, vmreadv, and bpf with --native) at 99 and 999 Hz, repetitions interleaved,\n"
	"then a pool worker's samples linked to the task awaiting its item against the\n"
	"same work in a plain thread (bpf, 999 Hz), then the recorder's start-up in CPU\n"
	"and wall mode, then a depth sweep at 999 Hz. Writes DIR/readers.md, readers.csv,\n"
	"depth.csv and depth.svg (default DIR: bench-out). Needs root. --quick:\n"
	"2 repetitions of a small workload (under 2 min).\n"
	"See asyncbpf-bench(8).\n";

struct opts {
	int tw_requests; /* thread work: fn calls per run */
	bool quick;
	int reps;
	const char *python, *out, *workload;
	char record[PATH_MAX], preload[PATH_MAX], script[PATH_MAX];
	char profile[PATH_MAX], stats[PATH_MAX]; /* the recorder's, in a temporary directory */
	int requests, work;
};

/* A configuration's profiles: all runs, even and odd runs; and their leaves alone. */
struct profiles {
	struct profile *prof, *half[2];
	struct profile *leaf, *leaf_half[2];
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	errmsg_v("asyncbpf-bench", fmt, ap);
	va_end(ap);
	exit(1);
}

/* --- profiles ------------------------------------------------------------------------ */

/* f interned in p, an unnamed task's number dropped (Task-N): it differs between runs. */
static uint32_t frame_in(struct profile *p, const struct frame_sym *f)
{
	const char *r = f->name;
	char name[512];

	if (f->kind != FRAME_TASK || strncmp(r, "Task-", 5) || r[5] < '0' || r[5] > '9')
		return profile_frame(p, f->kind, f->name, f->file, f->line);
	for (r += 5; *r >= '0' && *r <= '9'; r++)
		;
	snprintf(name, sizeof(name), "Task-N%s", r);
	return profile_frame(p, f->kind, name, NULL, 0);
}

/* Adds a run's collapsed profile to c's: its stacks without their process and thread
 * frames (a stack of those alone keeps them), and their leaves. */
static void add_run_profile(struct profiles *c, int half, const char *path)
{
	/* whole stacks into the first two, leaves into the others */
	struct profile *run = profile_new(),
		       *to[] = { c->prof, c->half[half], c->leaf, c->leaf_half[half] };
	const struct stack_ent *s;
	size_t len, n;
	char *buf = bench_read_file(path, &len), why[256];

	if (!run || !buf)
		die("out of memory");
	if (collapsed_read(buf, len, run, why, sizeof(why)))
		fprintf(stderr, "asyncbpf-bench: %s: %s\n", path, why);
	s = profile_stacks(run, &n);
	for (size_t i = 0; i < n; i++) {
		uint32_t *ids = malloc(s[i].n * sizeof(*ids) + 1);

		if (!ids)
			die("out of memory");
		for (int d = 0; d < 4 && s[i].n; d++) {
			uint32_t from = d >= 2 ? s[i].n - 1 : s[i].n > 2 ? 2 : 0;

			for (uint32_t k = from; k < s[i].n; k++) {
				ids[k - from] =
					frame_in(to[d], profile_frame_sym(run, s[i].ids[k]));
				if (ids[k - from] == UINT32_MAX)
					die("out of memory");
			}
			if (profile_add(to[d], ids, s[i].n - from, s[i].count))
				die("out of memory");
		}
		free(ids);
	}
	profile_free(run);
	free(buf);
}

/* The overlaps the report shows, from the configurations' profiles. */
static void set_overlaps(struct bench_report *r, struct profiles *p)
{
	for (int i = 0; i < BENCH_NCONFIGS; i++) {
		struct bench_config *c = &r->cfg[i];
		/* bpf at c's rate */
		const struct profiles *b = &p[1 + (c->freq == bench_freqs[1])];

		c->overlap_bpf = c->reader > 0 ? profile_overlap(p[i].prof, b->prof) : NAN;
		c->overlap_bpf_leaves = c->reader > 0 ? profile_overlap(p[i].leaf, b->leaf) : NAN;
		c->overlap_self = profile_overlap(p[i].half[0], p[i].half[1]);
	}
	for (int f = 0; f < BENCH_NFREQS; f++) {
		const struct profiles *b = &p[1 + f], *m = &p[3 + f], *v = &p[5 + f];

		r->pair_overlap[f][0] = profile_overlap(b->prof, m->prof);
		r->pair_overlap[f][1] = profile_overlap(b->prof, v->prof);
		r->pair_overlap[f][2] = profile_overlap(m->prof, v->prof);
		r->pair_overlap_leaves[f][0] = profile_overlap(b->leaf, m->leaf);
		r->pair_overlap_leaves[f][1] = profile_overlap(b->leaf, v->leaf);
		r->pair_overlap_leaves[f][2] = profile_overlap(m->leaf, v->leaf);
	}
}

/* --- main ---------------------------------------------------------------------------- */

/* One run of the workload under reader r (-1: none) at freq; depth 0: the mixed one. */
static struct bench_result run_one(const struct opts *o, int r, unsigned int freq, int requests,
				   int depth)
{
	struct bench_workload w = { .python = o->python,
				    .script = o->script,
				    .requests = requests,
				    .work = o->work,
				    .depth = depth,
				    .preload = r == 1 ? o->preload : NULL };
	struct bench_recorder rec = { .path = o->record,
				      .reader = r == BENCH_NATIVE ? "bpf"
						: r >= 0	  ? bench_readers[r]
								  : NULL,
				      .native = r == BENCH_NATIVE,
				      /* BPF as users run it: the creation probe links each
				       * task at its birth (the userspace readers have none) */
				      .origins = r == 0 || r == BENCH_NATIVE,
				      .freq = freq,
				      .output = o->profile,
				      .stats = o->stats };

	return bench_run("asyncbpf-bench", &w, r >= 0 ? &rec : NULL);
}

static void locate(struct opts *o)
{
	char self[PATH_MAX], dir[PATH_MAX - 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		die("cannot find its own path");
	self[n] = 0;
	if (strlen(dirname(self)) >= sizeof(dir))
		die("its path is too long");
	memcpy(dir, self, strlen(self) + 1);
	snprintf(o->record, sizeof(o->record), "%s/asyncbpf-record", dir);
	/* a build tree has the library next to the tools and the workload in tools/bench;
	 * make install puts both in ASYNCBPF_LIBDIR */
	snprintf(o->preload, sizeof(o->preload), "%s/libasyncbpf-memcpy.so", dir);
	if (access(o->preload, R_OK))
		snprintf(o->preload, sizeof(o->preload), "%s/libasyncbpf-memcpy.so",
			 ASYNCBPF_LIBDIR);
	if (o->workload) {
		snprintf(o->script, sizeof(o->script), "%s", o->workload);
	} else {
		snprintf(o->script, sizeof(o->script), "%s/../tools/bench/workload.py", dir);
		if (access(o->script, R_OK))
			snprintf(o->script, sizeof(o->script), "%s/workload.py", ASYNCBPF_LIBDIR);
	}
	if (access(o->record, X_OK))
		die("%s: %s", o->record, strerror(errno));
	if (access(o->preload, R_OK))
		die("%s: %s", o->preload, strerror(errno));
	if (access(o->script, R_OK))
		die("%s: %s (--workload names it)", o->script, strerror(errno));
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "reps", required_argument, NULL, 'r' },
		{ "python", required_argument, NULL, 'P' },
		{ "out", required_argument, NULL, 'o' },
		{ "workload", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c;

	o->python = "python3";
	o->out = "bench-out";
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			o->quick = true;
			break;
		case 'r': {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || end == optarg || v < 1 || v > BENCH_MAX_REPS) {
				fprintf(stderr, "asyncbpf-bench: invalid --reps '%s' (1 to %d)\n",
					optarg, BENCH_MAX_REPS);
				exit(1);
			}
			o->reps = v;
			break;
		}
		case 'P':
			o->python = optarg;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'w':
			o->workload = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fprintf(stderr, "asyncbpf-bench: unknown option '%s' (see --help)\n",
				argv[optind - 1]);
			exit(1);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "asyncbpf-bench: unexpected argument '%s'\n", argv[optind]);
		exit(1);
	}
	if (!o->reps)
		o->reps = o->quick ? 2 : 5;
	o->requests = o->quick ? 24 : 120;
	o->tw_requests = o->quick ? 60 : 200;
	o->work = 3000;
}

int main(int argc, char **argv)
{
	static struct bench_report report;
	static struct profiles profs[BENCH_NCONFIGS];
	static const int quick_depths[] = { 10, 30, 60, 120 };
	static const int full_depths[] = { 5, 15, 30, 60, 120, 240 };
	char tmp[] = "/tmp/asyncbpf-bench.XXXXXX", md[PATH_MAX], why[PATH_MAX + 64], *text;
	struct opts o = {};
	int failed = 0;
	double t0 = mono_s();
	size_t len;

	parse_args(argc, argv, &o);
	if (geteuid())
		die("must run as root (the bpf reader needs CAP_BPF and CAP_PERFMON)");
	locate(&o);
	if (mkdir(o.out, 0755) && errno != EEXIST)
		die("cannot create %s: %s", o.out, strerror(errno));
	if (!mkdtemp(tmp))
		die("cannot create a temporary directory: %s", strerror(errno));
	snprintf(o.profile, sizeof(o.profile), "%s/profile.txt", tmp);
	snprintf(o.stats, sizeof(o.stats), "%s/stats.txt", tmp);
	signal(SIGPIPE, SIG_IGN);
	report.reps = o.reps;
	report.depths = o.quick ? quick_depths : full_depths;
	report.ndepths = o.quick ? 4 : 6;
	bench_report_init(&report);

	for (int i = 0; i < BENCH_NCONFIGS; i++) {
		struct profiles *c = &profs[i];

		c->prof = profile_new();
		c->leaf = profile_new();
		for (int h = 0; h < 2; h++) {
			c->half[h] = profile_new();
			c->leaf_half[h] = profile_new();
		}
		if (!c->prof || !c->leaf || !c->half[0] || !c->half[1] || !c->leaf_half[0] ||
		    !c->leaf_half[1])
			die("out of memory");
	}
	/* interleaved: every repetition runs each configuration once, in a rotated order */
	for (int rep = 0; rep < o.reps; rep++) {
		report.signal_ns[rep] = bench_signal_ns(BENCH_SIGNAL_ROUNDS);
		if (isnan(report.signal_ns[rep]))
			die("cannot measure a signal's round trip (sigaction or tgkill failed)");
		fprintf(stderr, "asyncbpf-bench: rep %d signal round trip %.0f ns\n", rep + 1,
			report.signal_ns[rep]);
		for (int k = 0; k < BENCH_NCONFIGS; k++) {
			int i = (k + rep) % BENCH_NCONFIGS;
			struct bench_config *c = &report.cfg[i];
			struct bench_result *x = &c->runs[c->nruns++];
			char name[64];

			*x = run_one(&o, c->reader, c->freq, o.requests, 0);
			if (!x->ok)
				failed++;
			else if (c->reader >= 0)
				add_run_profile(&profs[i], rep % 2, o.profile);
			fprintf(stderr, "asyncbpf-bench: rep %d %-18s wall %.3f s cost %.0f ns\n",
				rep + 1, bench_config_name(c, name, sizeof(name)), x->wall,
				x->cost_ns);
		}
	}
	/* thread work, interleaved as well: linked first on even repetitions */
	for (int rep = 0; rep < o.reps; rep++)
		for (int k = 0; k < BENCH_NTW; k++) {
			int m = (k + rep) % BENCH_NTW;
			struct bench_workload w = { .python = o.python,
						    .script = o.script,
						    .requests = o.tw_requests,
						    .work = TW_WORK,
						    .depth = BENCH_TW_DEPTH,
						    .mode = bench_tw_modes[m] };
			struct bench_recorder rec = { .path = o.record,
						      .reader = "bpf",
						      .freq = BENCH_TW_FREQ,
						      .output = o.profile,
						      .stats = o.stats,
						      .origins = 1 };
			struct bench_result *x = &report.tw[m][rep];

			*x = bench_run("asyncbpf-bench", &w, &rec);
			if (!x->ok)
				failed++;
			fprintf(stderr,
				"asyncbpf-bench: rep %d thread work %-6s wall %.3f s cost %.0f ns "
				"(mean %.0f), %.0f of %.0f samples linked\n",
				rep + 1, bench_tw_modes[m], x->wall, x->cost_ns, x->mean_ns,
				x->work_linked, x->taken);
		}
	/* the long-lived chain: each reader in turn, the order rotated */
	for (int rep = 0; rep < o.reps; rep++)
		for (int k = 0; k < BENCH_CHAIN_READERS; k++) {
			int r = (k + rep) % BENCH_CHAIN_READERS;
			/* as many rounds of work as the mixed workload's leaves do */
			struct bench_workload w = { .python = o.python,
						    .script = o.script,
						    .requests = o.requests * 36,
						    .work = o.work,
						    .depth = BENCH_CHAIN_DEPTH,
						    .mode = "chain",
						    .preload =
							    r == BENCH_MEMCPY ? o.preload : NULL };
			struct bench_recorder rec = { .path = o.record,
						      .reader = bench_readers[r],
						      .freq = BENCH_TW_FREQ,
						      .output = o.profile,
						      .stats = o.stats,
						      .origins = r == 0 };
			struct bench_result *x = &report.chain[r][rep];

			*x = bench_run("asyncbpf-bench", &w, &rec);
			if (!x->ok)
				failed++;
			fprintf(stderr,
				"asyncbpf-bench: rep %d chain %-7s wall %.3f s cost %.0f ns (mean "
				"%.0f), %.0f of %.0f samples in a task chain\n",
				rep + 1, bench_readers[r], x->wall, x->cost_ns, x->mean_ns,
				x->in_task, x->taken);
		}
	for (int m = 0; m < BENCH_NMODES; m++) {
		struct bench_workload w = { .python = o.python,
					    .script = o.script,
					    .requests = o.requests,
					    .work = o.work };
		char *args[] = { "--mode", (char *)bench_modes[m], NULL };

		failed += bench_startup("asyncbpf-bench", &w, o.record, args, o.profile, o.stats,
					report.startup_s[m], BENCH_STARTUPS);
		fprintf(stderr, "asyncbpf-bench: start-up %s:", bench_modes[m]);
		for (int i = 0; i < BENCH_STARTUPS; i++)
			fprintf(stderr, " %.3f", report.startup_s[m][i]);
		fprintf(stderr, " s\n");
	}
	for (int d = 0; d < report.ndepths; d++)
		for (int r = 0; r < BENCH_NREADERS; r++) {
			int depth = report.depths[d];
			struct bench_result x = run_one(&o, r, 999, o.quick ? 4 : 12, depth);

			report.depth_cost[r][d] = x.ok ? x.cost_ns : NAN;
			fprintf(stderr, "asyncbpf-bench: depth %d %s: %.0f ns per sample\n", depth,
				bench_readers[r], report.depth_cost[r][d]);
		}
	set_overlaps(&report, profs);
	if (bench_report_write(o.out, &report, why, sizeof(why)))
		die("%s", why);
	unlink(o.profile);
	unlink(o.stats);
	rmdir(tmp);
	snprintf(md, sizeof(md), "%s/readers.md", o.out);
	text = bench_read_file(md, &len);
	if (text)
		fputs(text, stdout);
	free(text);
	printf("\n%d runs failed; %.0f s; written to %s/\n", failed, mono_s() - t0, o.out);
	return failed ? 1 : 0;
}

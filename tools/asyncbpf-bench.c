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

#include "bench/benchrun.h"
#include "bench/benchstats.h"
#include "profile/readers.h"
#include "bench/sigcost.h"
#include "bench/svgplot.h"
#include "clock.h"
#include "errmsg.h"

#define MAX_REPS   20
#define NREADERS   4 /* the three readers, then bpf with --native */
#define NFREQS	   2
#define NCONFIGS   (1 + NREADERS * NFREQS)
#define MAX_DEPTHS 8

static const char *const readers[NREADERS] = { "bpf", "memcpy", "vmreadv", "bpf --native" };
#define NATIVE 3
static const unsigned int freqs[NFREQS] = { 99, 999 };
#define SIGNAL_ROUNDS 20000
/* start-up: the recorder started this many times in each mode, with the default
 * options (the creation probe too) */
#define STARTUPS 5
#define NMODES	 2
/* where make install puts the preload library and the workload (the Makefile passes
 * $(PREFIX)/lib/asyncbpf) */
#ifndef ASYNCBPF_LIBDIR
#define ASYNCBPF_LIBDIR "/usr/local/lib/asyncbpf"
#endif

static const char *const modes[NMODES] = { "cpu", "wall" };

/* thread work: the workload's modes (workload.py): a pool worker's items awaited by tasks
 * (its samples linked to them), and the same function in a plain thread (no link); bpf
 * at TW_FREQ with the creation probe, which makes each new task known at once */
#define NTW	 2
#define TW_FREQ	 999
#define TW_DEPTH 30	/* fn's Python calls above its burn loop */
#define TW_WORK	 100000 /* its rounds: about 5 ms of CPU on this machine */
static const char *const tw_modes[NTW] = { "linked", "thread" };

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
	double signal_ns[MAX_REPS]; /* a profiling signal's cost, measured at each repetition */
	double startup_s[NMODES][STARTUPS];    /* the recorder's CPU before its first sample */
	struct bench_result tw[NTW][MAX_REPS]; /* thread work, each repetition */
	int tw_requests;		       /* fn calls per run */
	bool quick;
	int reps;
	const char *python, *out, *workload;
	char record[PATH_MAX], preload[PATH_MAX], script[PATH_MAX];
	char profile[PATH_MAX], stats[PATH_MAX]; /* the recorder's, in a temporary directory */
	int requests, work;
};

struct config {
	int reader; /* -1: none */
	unsigned int freq;
	struct bench_result runs[MAX_REPS];
	int nruns;
	struct profile *prof, *half[2]; /* all runs; even and odd runs */
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
static void add_run_profile(struct config *c, int half, const char *path)
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

/* --- output -------------------------------------------------------------------------- */

/* A field of the runs that succeeded. */
static struct bench_summary runs_summary(const struct bench_result *runs, int n, size_t off)
{
	double v[MAX_REPS];

	for (int i = 0; i < n; i++)
		v[i] = runs[i].ok ? *(const double *)((const char *)&runs[i] + off) : NAN;
	return bench_summarize(v, n);
}

#define SUMMARY(c, field) runs_summary((c)->runs, (c)->nruns, offsetof(struct bench_result, field))
#define TW_SUMMARY(o, m, field)                                                                    \
	runs_summary((o)->tw[m], (o)->reps, offsetof(struct bench_result, field))

/* The share of a thread work run's Python samples linked to a task, over the runs. */
static struct bench_summary tw_share(const struct opts *o, int m)
{
	double v[MAX_REPS];

	for (int i = 0; i < o->reps; i++) {
		const struct bench_result *x = &o->tw[m][i];

		v[i] = x->ok && x->taken > 0 ? x->work_linked / x->taken : NAN;
	}
	return bench_summarize(v, o->reps);
}

/* linked less thread in each repetition (the two ran one after the other), over them */
static struct bench_summary tw_paired(const struct opts *o, size_t off)
{
	double v[MAX_REPS];

	for (int i = 0; i < o->reps; i++) {
		const struct bench_result *l = &o->tw[0][i], *t = &o->tw[1][i];

		v[i] = l->ok && t->ok ? *(const double *)((const char *)l + off) -
						*(const double *)((const char *)t + off)
				      : NAN;
	}
	return bench_summarize(v, o->reps);
}

/* Thread work: each mode's cost per sample, and the difference, the link's cost. */
static void write_threadwork(const struct opts *o, FILE *md, FILE *csv)
{
	struct bench_summary cost[NTW], mean[NTW], reads[NTW], bytes[NTW],
		dcost = tw_paired(o, offsetof(struct bench_result, cost_ns)),
		dmean = tw_paired(o, offsetof(struct bench_result, mean_ns));

	fprintf(md,
		"\nThread work (bpf @ %d Hz, creation probe on, %d repetitions interleaved): "
		"`linked`: tasks one after another, each awaiting `asyncio.to_thread(fn)` through "
		"4 coroutines, the worker's samples drawn under the task; `thread`: the same fn in "
		"a plain thread, the loop idle, nothing to link. fn is %d calls deep, the worker "
		"the same number of Python frames in both. The link's cost is linked less thread "
		"in each repetition (the two ran back to back), median (min-max) over the "
		"repetitions; the means are exact, the medians histogram buckets a quarter "
		"octave wide:\n\n"
		"| run | n | cost/sample µs, median (min-max) | mean µs | reads/sample (bytes) | "
		"python samples | linked (share) |\n|---|---|---|---|---|---|---|\n",
		TW_FREQ, o->reps, TW_DEPTH);
	for (int m = 0; m < NTW; m++) {
		struct bench_summary w = TW_SUMMARY(o, m, wall), taken = TW_SUMMARY(o, m, taken),
				     linked = TW_SUMMARY(o, m, work_linked), share = tw_share(o, m);

		cost[m] = TW_SUMMARY(o, m, cost_ns);
		mean[m] = TW_SUMMARY(o, m, mean_ns);
		reads[m] = TW_SUMMARY(o, m, reads);
		bytes[m] = TW_SUMMARY(o, m, read_bytes);
		fprintf(md,
			"| %s | %d | %.1f (%.1f-%.1f) | %.1f | %.1f (%.0f) | %.0f | %.0f (%.2f) "
			"|\n",
			tw_modes[m], cost[m].n, cost[m].med / 1e3, cost[m].min / 1e3,
			cost[m].max / 1e3, mean[m].med / 1e3, reads[m].med, bytes[m].med, taken.med,
			linked.med, share.med);
		/* the readers' columns where they apply */
		fprintf(csv,
			"thread work %s @ %d "
			"Hz,bpf,%d,%d,%.4f,%.4f,%.4f,nan,%.4f,nan,%.0f,%.0f,%.0f,"
			"nan,%.4f,%.0f,%.0f,%.0f,nan,nan,%.1f,%.0f,nan,nan,%.0f,0,%.0f,%.0f,%.0f,"
			"%.4f\n",
			tw_modes[m], TW_FREQ, TW_FREQ, w.n, w.med, w.min, w.max,
			TW_SUMMARY(o, m, cpu).med, cost[m].med, cost[m].min, cost[m].max,
			TW_SUMMARY(o, m, prof_cpu).med, taken.mean, TW_SUMMARY(o, m, recorded).mean,
			TW_SUMMARY(o, m, lost).mean, reads[m].med, bytes[m].med,
			TW_SUMMARY(o, m, p90_ns).med, cost[m].med, TW_SUMMARY(o, m, p90_ns).med,
			linked.med, share.med);
	}
	fprintf(md,
		"| link's cost (linked - thread) | %d | %.1f (%.1f-%.1f) | %.1f | "
		"%+.1f (%+.0f) | | |\n",
		dcost.n, dcost.med / 1e3, dcost.min / 1e3, dcost.max / 1e3, dmean.med / 1e3,
		reads[0].med - reads[1].med, bytes[0].med - bytes[1].med);
	fprintf(md, "\nThe difference of the two medians above: %.1f µs (of the means: %.1f µs).\n",
		(cost[0].med - cost[1].med) / 1e3, (mean[0].med - mean[1].med) / 1e3);
	/* cost_ns: the repetitions' differences, median (min-max) */
	fprintf(csv,
		"thread work link cost @ %d Hz,bpf,%d,%d,nan,nan,nan,nan,nan,nan,%.0f,%.0f,%.0f,"
		"nan,nan,nan,nan,nan,nan,nan,%.1f,%.0f,nan,nan,nan,0,%.0f,nan,nan,nan\n",
		TW_FREQ, TW_FREQ, dcost.n, dcost.med, dcost.min, dcost.max,
		reads[0].med - reads[1].med, bytes[0].med - bytes[1].med, dcost.med);
}

static const char *cname(const struct config *c, char *buf, size_t len)
{
	if (c->reader < 0)
		snprintf(buf, len, "none");
	else
		snprintf(buf, len, "%s @ %u Hz", readers[c->reader], c->freq);
	return buf;
}

/* "reads (bytes)" per sample, median over the runs; "-" where the reader does not count
 * them (memcpy: its walk runs in the target) */
static const char *reads_text(const struct config *c, char *buf, size_t len)
{
	struct bench_summary r = SUMMARY(c, reads), b = SUMMARY(c, read_bytes);

	if (!r.n || isnan(r.med))
		return "-";
	snprintf(buf, len, "%.1f (%.0f)", r.med, b.med);
	return buf;
}

/* --native: stack bytes copied and the recorder's unwind time (µs) per sample */
static const char *native_text(const struct config *c, char *buf, size_t len)
{
	struct bench_summary b = SUMMARY(c, native_bytes), u = SUMMARY(c, unwind_ns);

	if (!b.n || isnan(b.med))
		return "-";
	snprintf(buf, len, "%.0f B, %.1f µs", b.med, u.med / 1e3);
	return buf;
}

/* What a sample costs the target beyond the reader's own time: for memcpy the signal
 * around its handler; bpf's program and vmreadv's walk (in the recorder, while the target
 * runs on) are all of theirs. */
static double extra_ns(const struct config *c, const struct bench_summary *sig)
{
	return c->reader == 1 ? sig->med : c->reader < 0 ? NAN : 0;
}

/* Each reader's whole cost to the target per sample, and the readers against each other. */
static void write_costs(FILE *md, struct config *cfg, const struct bench_summary *sig)
{
	fprintf(md,
		"\nWhat a sample costs the target (µs, medians over the repetitions): the "
		"reader's own time per sample, for memcpy with the signal's delivery and return "
		"(a tgkill round trip to an empty handler less a tgkill of signal 0, measured at "
		"each repetition: median %.2f µs, %.2f-%.2f, %d rounds each); reads of the "
		"target's memory per sample:\n\n",
		sig->med / 1e3, sig->min / 1e3, sig->max / 1e3, SIGNAL_ROUNDS);
	fprintf(md, "| run | own median | own p90 | + signal | whole median | whole p90 | "
		    "reads/sample | bytes/sample |\n|---|---|---|---|---|---|---|---|\n");
	for (int i = 1; i < NCONFIGS; i++) {
		struct config *c = &cfg[i];
		struct bench_summary r = SUMMARY(c, reads), b = SUMMARY(c, read_bytes);
		double own = SUMMARY(c, cost_ns).med, p90 = SUMMARY(c, p90_ns).med,
		       x = extra_ns(c, sig);
		char name[64];

		fprintf(md, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.0f |\n",
			cname(c, name, sizeof(name)), own / 1e3, p90 / 1e3, x / 1e3,
			(own + x) / 1e3, (p90 + x) / 1e3, r.med, b.med);
	}
	fprintf(md, "\nWhole cost per sample, median, bpf : memcpy : vmreadv (bpf = 1):\n\n"
		    "| Hz | bpf µs | memcpy µs | vmreadv µs | bpf : memcpy : vmreadv |\n"
		    "|---|---|---|---|---|\n");
	for (int f = 0; f < NFREQS; f++) {
		double b = SUMMARY(&cfg[1 + f], cost_ns).med,
		       m = SUMMARY(&cfg[3 + f], cost_ns).med + sig->med,
		       v = SUMMARY(&cfg[5 + f], cost_ns).med;

		fprintf(md, "| %u | %.2f | %.2f | %.2f | 1 : %.2f : %.1f |\n", freqs[f], b / 1e3,
			m / 1e3, v / 1e3, m / b, v / b);
	}
}

static void write_outputs(const struct opts *o, struct config *cfg,
			  double (*depth_cost)[MAX_DEPTHS], const int *depths, int ndepths)
{
	char path[PATH_MAX], name[64], rtext[48], ntext[64];
	struct bench_summary bw = SUMMARY(&cfg[0], wall), bc = SUMMARY(&cfg[0], cpu),
			     sig = bench_summarize(o->signal_ns, o->reps);
	FILE *md, *csv;

	snprintf(path, sizeof(path), "%s/readers.md", o->out);
	md = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/readers.csv", o->out);
	csv = fopen(path, "w");
	if (!md || !csv)
		die("cannot write into %s: %s", o->out, strerror(errno));
	fprintf(csv, "config,reader,freq,runs,wall_med,wall_min,wall_max,slowdown_wall,cpu_med,"
		     "slowdown_cpu,cost_ns_med,cost_ns_min,cost_ns_max,target_cpu_ns_per_sample,"
		     "profiler_cpu_s,taken,"
		     "recorded,lost,overlap_bpf,overlap_self,reads_per_sample,bytes_per_sample,"
		     "native_stack_bytes,unwind_ns,p90_ns_med,signal_ns,whole_ns_med,"
		     "whole_p90_ns_med,work_linked,linked_share\n");
	fprintf(md, "| run | n | wall s (min-max) | slowdown wall | target CPU s | slowdown CPU | "
		    "cost/sample µs, median (min-max) | mean | reads/sample (bytes) | "
		    "native stack copy, unwind per sample | "
		    "target CPU µs per sample | "
		    "profiler CPU s | "
		    "samples taken | recorded | lost | "
		    "overlap with bpf (stacks / leaves) | overlap self (stacks) |\n");
	fprintf(md, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < NCONFIGS; i++) {
		struct config *c = &cfg[i];
		struct bench_summary w = SUMMARY(c, wall), cp = SUMMARY(c, cpu),
				     cost = SUMMARY(c, cost_ns), pc = SUMMARY(c, prof_cpu),
				     mean = SUMMARY(c, mean_ns);
		const struct config *b = c->reader > 0 ? &cfg[1 + (c->freq == freqs[1])] : NULL;
		double ov = b ? profile_overlap(c->prof, b->prof) : NAN,
		       ovl = b ? profile_overlap(c->leaf, b->leaf) : NAN,
		       self = profile_overlap(c->half[0], c->half[1]);
		/* the target's extra CPU time per sample: the whole cost a sample puts on it,
		 * signal delivery and kernel entries included (µs) */
		double tcpu =
			c->reader < 0 ? NAN : (cp.med - bc.med) / SUMMARY(c, taken).mean * 1e6;

		cname(c, name, sizeof(name));
		fprintf(md, "| %s | %d | %.3f (%.3f-%.3f) | %.3f | %.3f | %.3f |", name, w.n, w.med,
			w.min, w.max, w.med / bw.med, cp.med, cp.med / bc.med);
		if (c->reader < 0)
			fprintf(md, " - | - | - | - | - | - | - | - | - | - | - |\n");
		else
			fprintf(md,
				" %.1f (%.1f-%.1f) | %.1f | %s | %s | %.1f | %.3f | %.0f | %.0f | "
				"%.0f "
				"| "
				"%s%.3f / "
				"%.3f | %.3f |\n",
				cost.med / 1e3, cost.min / 1e3, cost.max / 1e3, mean.med / 1e3,
				reads_text(c, rtext, sizeof(rtext)),
				native_text(c, ntext, sizeof(ntext)), tcpu, pc.med,
				SUMMARY(c, taken).mean, SUMMARY(c, recorded).mean,
				SUMMARY(c, lost).mean, b ? "" : "(is bpf) ", b ? ov : 1.0,
				b ? ovl : 1.0, self);
		fprintf(csv,
			"%s,%s,%u,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.0f,%.0f,%.0f,%.0f,%.4f,%.0f,"
			"%.0f,%.0f,%.4f,%.4f,%.1f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,nan\n",
			name, c->reader < 0 ? "none" : readers[c->reader], c->freq, w.n, w.med,
			w.min, w.max, w.med / bw.med, cp.med, cp.med / bc.med, cost.med, cost.min,
			cost.max, tcpu * 1e3, pc.med, SUMMARY(c, taken).mean,
			SUMMARY(c, recorded).mean, SUMMARY(c, lost).mean, ov, self,
			SUMMARY(c, reads).med, SUMMARY(c, read_bytes).med,
			SUMMARY(c, native_bytes).med, SUMMARY(c, unwind_ns).med,
			SUMMARY(c, p90_ns).med, extra_ns(c, &sig),
			SUMMARY(c, cost_ns).med + extra_ns(c, &sig),
			SUMMARY(c, p90_ns).med + extra_ns(c, &sig), SUMMARY(c, work_linked).med);
	}
	write_costs(md, cfg, &sig);
	write_threadwork(o, md, csv);
	fprintf(md,
		"\nPairwise overlap of the readers' profiles (all runs at a rate together):\n\n");
	fprintf(md, "| Hz | bpf-memcpy | bpf-vmreadv | memcpy-vmreadv |\n|---|---|---|---|\n");
	for (int f = 0; f < NFREQS; f++) {
		struct config *b = &cfg[1 + f], *m = &cfg[3 + f], *v = &cfg[5 + f];

		fprintf(md, "| %u | %.3f | %.3f | %.3f |\n", freqs[f],
			profile_overlap(b->prof, m->prof), profile_overlap(b->prof, v->prof),
			profile_overlap(m->prof, v->prof));
	}
	fprintf(md,
		"\nStart-up: the recorder's CPU before its first sample (`--stats`' "
		"`profiler cpu ... s before`), %d starts in each mode on the workload, "
		"default options:\n\n| mode | starts | CPU s, median (min-max) |\n"
		"|---|---|---|\n",
		STARTUPS);
	for (int m = 0; m < NMODES; m++) {
		struct bench_summary st = bench_summarize(o->startup_s[m], STARTUPS);

		fprintf(md, "| %s | %d | %.3f (%.3f-%.3f) |\n", modes[m], st.n, st.med, st.min,
			st.max);
	}
	fprintf(md, "\nCost per sample (µs) against the workload's stack depth, 999 Hz:\n\n"
		    "| depth | bpf | memcpy | vmreadv | bpf --native |\n|---|---|---|---|---|\n");
	for (int d = 0; d < ndepths; d++)
		fprintf(md, "| %d | %.1f | %.1f | %.1f | %.1f |\n", depths[d],
			depth_cost[0][d] / 1e3, depth_cost[1][d] / 1e3, depth_cost[2][d] / 1e3,
			depth_cost[3][d] / 1e3);
	fclose(md);
	fclose(csv);

	snprintf(path, sizeof(path), "%s/depth.csv", o->out);
	csv = fopen(path, "w");
	if (!csv)
		die("cannot write %s: %s", path, strerror(errno));
	fprintf(csv, "depth,bpf_ns,memcpy_ns,vmreadv_ns,bpf_native_ns\n");
	for (int d = 0; d < ndepths; d++)
		fprintf(csv, "%d,%.0f,%.0f,%.0f,%.0f\n", depths[d], depth_cost[0][d],
			depth_cost[1][d], depth_cost[2][d], depth_cost[3][d]);
	fclose(csv);
}

static void write_svg(const struct opts *o, double (*cost)[MAX_DEPTHS], const int *depths, int nd)
{
	static const char *const colors[NREADERS] = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd" };
	struct svgplot_series series[NREADERS];
	struct svgplot plot = { .title = "Read cost per sample against stack depth (999 Hz)",
				.xlabel = "coroutine chain depth",
				.yunit = "µs",
				.yscale = 1e3,
				.x = depths,
				.nx = nd,
				.series = series,
				.nseries = NREADERS };
	char path[PATH_MAX];

	for (int r = 0; r < NREADERS; r++)
		series[r] = (struct svgplot_series){ readers[r], colors[r], cost[r] };
	snprintf(path, sizeof(path), "%s/depth.svg", o->out);
	if (svgplot_write(path, &plot) < 0)
		die("cannot write %s: %s", path, strerror(errno));
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
				      .reader = r == NATIVE ? "bpf"
						: r >= 0    ? readers[r]
							    : NULL,
				      .native = r == NATIVE,
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

			if (*end || end == optarg || v < 1 || v > MAX_REPS) {
				fprintf(stderr, "asyncbpf-bench: invalid --reps '%s' (1 to %d)\n",
					optarg, MAX_REPS);
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
	static struct config cfg[NCONFIGS];
	static const int quick_depths[] = { 10, 30, 60, 120 };
	static const int full_depths[] = { 5, 15, 30, 60, 120, 240 };
	double depth_cost[NREADERS][MAX_DEPTHS] = {};
	char tmp[] = "/tmp/asyncbpf-bench.XXXXXX", md[PATH_MAX], *text;
	struct opts o = {};
	const int *depths;
	int ndepths, failed = 0;
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
	depths = o.quick ? quick_depths : full_depths;
	ndepths = o.quick ? 4 : 6;

	for (int i = 0; i < NCONFIGS; i++) {
		struct config *c = &cfg[i];

		c->reader = i ? (i - 1) / NFREQS : -1;
		c->freq = i ? freqs[(i - 1) % NFREQS] : 0;
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
		o.signal_ns[rep] = bench_signal_ns(SIGNAL_ROUNDS);
		if (isnan(o.signal_ns[rep]))
			die("cannot measure a signal's round trip (sigaction or tgkill failed)");
		fprintf(stderr, "asyncbpf-bench: rep %d signal round trip %.0f ns\n", rep + 1,
			o.signal_ns[rep]);
		for (int k = 0; k < NCONFIGS; k++) {
			struct config *c = &cfg[(k + rep) % NCONFIGS];
			struct bench_result *x = &c->runs[c->nruns++];
			char name[64];

			*x = run_one(&o, c->reader, c->freq, o.requests, 0);
			if (!x->ok)
				failed++;
			else if (c->reader >= 0)
				add_run_profile(c, rep % 2, o.profile);
			fprintf(stderr, "asyncbpf-bench: rep %d %-18s wall %.3f s cost %.0f ns\n",
				rep + 1, cname(c, name, sizeof(name)), x->wall, x->cost_ns);
		}
	}
	/* thread work, interleaved as well: linked first on even repetitions */
	for (int rep = 0; rep < o.reps; rep++)
		for (int k = 0; k < NTW; k++) {
			int m = (k + rep) % NTW;
			struct bench_workload w = { .python = o.python,
						    .script = o.script,
						    .requests = o.tw_requests,
						    .work = TW_WORK,
						    .depth = TW_DEPTH,
						    .mode = tw_modes[m] };
			struct bench_recorder rec = { .path = o.record,
						      .reader = "bpf",
						      .freq = TW_FREQ,
						      .output = o.profile,
						      .stats = o.stats,
						      .origins = 1 };
			struct bench_result *x = &o.tw[m][rep];

			*x = bench_run("asyncbpf-bench", &w, &rec);
			if (!x->ok)
				failed++;
			fprintf(stderr,
				"asyncbpf-bench: rep %d thread work %-6s wall %.3f s cost %.0f ns "
				"(mean %.0f), %.0f of %.0f samples linked\n",
				rep + 1, tw_modes[m], x->wall, x->cost_ns, x->mean_ns,
				x->work_linked, x->taken);
		}
	for (int m = 0; m < NMODES; m++) {
		struct bench_workload w = { .python = o.python,
					    .script = o.script,
					    .requests = o.requests,
					    .work = o.work };
		char *args[] = { "--mode", (char *)modes[m], NULL };

		failed += bench_startup("asyncbpf-bench", &w, o.record, args, o.profile, o.stats,
					o.startup_s[m], STARTUPS);
		fprintf(stderr, "asyncbpf-bench: start-up %s:", modes[m]);
		for (int i = 0; i < STARTUPS; i++)
			fprintf(stderr, " %.3f", o.startup_s[m][i]);
		fprintf(stderr, " s\n");
	}
	for (int d = 0; d < ndepths; d++)
		for (int r = 0; r < NREADERS; r++) {
			struct bench_result x = run_one(&o, r, 999, o.quick ? 4 : 12, depths[d]);

			depth_cost[r][d] = x.ok ? x.cost_ns : NAN;
			fprintf(stderr, "asyncbpf-bench: depth %d %s: %.0f ns per sample\n",
				depths[d], readers[r], depth_cost[r][d]);
		}
	write_outputs(&o, cfg, depth_cost, depths, ndepths);
	write_svg(&o, depth_cost, depths, ndepths);
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

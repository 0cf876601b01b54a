// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "bench/benchreport.h"
#include "bench/benchstats.h"
#include "bench/svgplot.h"

const char *const bench_readers[BENCH_NREADERS] = { "bpf", "memcpy", "vmreadv", "bpf --native" };
const unsigned int bench_freqs[BENCH_NFREQS] = { 99, 999 };
const char *const bench_modes[BENCH_NMODES] = { "cpu", "wall" };
const char *const bench_tw_modes[BENCH_NTW] = { "linked", "thread" };

void bench_report_init(struct bench_report *r)
{
	for (int i = 0; i < BENCH_NCONFIGS; i++) {
		r->cfg[i].reader = i ? (i - 1) / BENCH_NFREQS : -1;
		r->cfg[i].freq = i ? bench_freqs[(i - 1) % BENCH_NFREQS] : 0;
	}
}

/* A field of the runs that succeeded. */
static struct bench_summary runs_summary(const struct bench_result *runs, int n, size_t off)
{
	double v[BENCH_MAX_REPS];

	for (int i = 0; i < n; i++)
		v[i] = runs[i].ok ? *(const double *)((const char *)&runs[i] + off) : NAN;
	return bench_summarize(v, n);
}

#define SUMMARY(c, field) runs_summary((c)->runs, (c)->nruns, offsetof(struct bench_result, field))
#define TW_SUMMARY(rep, m, field)                                                                  \
	runs_summary((rep)->tw[m], (rep)->reps, offsetof(struct bench_result, field))
#define CHAIN_SUMMARY(rep, r, field)                                                               \
	runs_summary((rep)->chain[r], (rep)->reps, offsetof(struct bench_result, field))

/* The share of a thread work run's Python samples linked to a task, over the runs. */
static struct bench_summary tw_share(const struct bench_report *rep, int m)
{
	double v[BENCH_MAX_REPS];

	for (int i = 0; i < rep->reps; i++) {
		const struct bench_result *x = &rep->tw[m][i];

		v[i] = x->ok && x->taken > 0 ? x->work_linked / x->taken : NAN;
	}
	return bench_summarize(v, rep->reps);
}

/* linked less thread in each repetition (the two ran one after the other), over them */
static struct bench_summary tw_paired(const struct bench_report *rep, size_t off)
{
	double v[BENCH_MAX_REPS];

	for (int i = 0; i < rep->reps; i++) {
		const struct bench_result *l = &rep->tw[0][i], *t = &rep->tw[1][i];

		v[i] = l->ok && t->ok ? *(const double *)((const char *)l + off) -
						*(const double *)((const char *)t + off)
				      : NAN;
	}
	return bench_summarize(v, rep->reps);
}

/* Thread work: each mode's cost per sample, and the difference, the link's cost. */
static void write_threadwork(const struct bench_report *rep, FILE *md, FILE *csv)
{
	struct bench_summary cost[BENCH_NTW], mean[BENCH_NTW], reads[BENCH_NTW], bytes[BENCH_NTW],
		dcost = tw_paired(rep, offsetof(struct bench_result, cost_ns)),
		dmean = tw_paired(rep, offsetof(struct bench_result, mean_ns));

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
		BENCH_TW_FREQ, rep->reps, BENCH_TW_DEPTH);
	for (int m = 0; m < BENCH_NTW; m++) {
		struct bench_summary w = TW_SUMMARY(rep, m, wall),
				     taken = TW_SUMMARY(rep, m, taken),
				     linked = TW_SUMMARY(rep, m, work_linked),
				     share = tw_share(rep, m);

		cost[m] = TW_SUMMARY(rep, m, cost_ns);
		mean[m] = TW_SUMMARY(rep, m, mean_ns);
		reads[m] = TW_SUMMARY(rep, m, reads);
		bytes[m] = TW_SUMMARY(rep, m, read_bytes);
		fprintf(md,
			"| %s | %d | %.1f (%.1f-%.1f) | %.1f | %.1f (%.0f) | %.0f | %.0f (%.2f) "
			"|\n",
			bench_tw_modes[m], cost[m].n, cost[m].med / 1e3, cost[m].min / 1e3,
			cost[m].max / 1e3, mean[m].med / 1e3, reads[m].med, bytes[m].med, taken.med,
			linked.med, share.med);
		/* the readers' columns where they apply */
		fprintf(csv,
			"thread work %s @ %d "
			"Hz,bpf,%d,%d,%.4f,%.4f,%.4f,nan,%.4f,nan,%.0f,%.0f,%.0f,"
			"nan,%.4f,%.0f,%.0f,%.0f,nan,nan,%.1f,%.0f,nan,nan,%.0f,0,%.0f,%.0f,%.0f,"
			"%.4f,nan\n",
			bench_tw_modes[m], BENCH_TW_FREQ, BENCH_TW_FREQ, w.n, w.med, w.min, w.max,
			TW_SUMMARY(rep, m, cpu).med, cost[m].med, cost[m].min, cost[m].max,
			TW_SUMMARY(rep, m, prof_cpu).med, taken.mean,
			TW_SUMMARY(rep, m, recorded).mean, TW_SUMMARY(rep, m, lost).mean,
			reads[m].med, bytes[m].med, TW_SUMMARY(rep, m, p90_ns).med, cost[m].med,
			TW_SUMMARY(rep, m, p90_ns).med, linked.med, share.med);
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
		"nan,nan,nan,nan,nan,nan,nan,%.1f,%.0f,nan,nan,nan,0,%.0f,nan,nan,nan,nan\n",
		BENCH_TW_FREQ, BENCH_TW_FREQ, dcost.n, dcost.med, dcost.min, dcost.max,
		reads[0].med - reads[1].med, bytes[0].med - bytes[1].med, dcost.med);
}

/* The long-lived chain: each reader's cost per sample, its whole cost (memcpy's with the
 * signal) and the share of its samples that walked the task chain. */
static void write_chain(const struct bench_report *rep, FILE *md, FILE *csv,
			const struct bench_summary *sig)
{
	fprintf(md,
		"\nLong-lived chain (workload mode `chain`: 3 tasks, each awaiting the next from "
		"the bottom of %d coroutines, the last spinning at the bottom of its own; every "
		"sample walks the running chain and two suspended ones), %d Hz, default options, "
		"%d repetitions interleaved:\n\n"
		"| reader | n | cost/sample µs, median (min-max) | mean µs | whole median µs | "
		"reads/sample (bytes) | in a task chain |\n|---|---|---|---|---|---|---|\n",
		BENCH_CHAIN_DEPTH, BENCH_TW_FREQ, rep->reps);
	for (int r = 0; r < BENCH_CHAIN_READERS; r++) {
		struct bench_summary cost = CHAIN_SUMMARY(rep, r, cost_ns),
				     mean = CHAIN_SUMMARY(rep, r, mean_ns),
				     reads = CHAIN_SUMMARY(rep, r, reads),
				     bytes = CHAIN_SUMMARY(rep, r, read_bytes),
				     in = CHAIN_SUMMARY(rep, r, in_task),
				     taken = CHAIN_SUMMARY(rep, r, taken),
				     p90 = CHAIN_SUMMARY(rep, r, p90_ns);
		double extra = r == BENCH_MEMCPY ? sig->med : 0, share = in.mean / taken.mean;

		fprintf(md, "| %s | %d | %.1f (%.1f-%.1f) | %.1f | %.1f | %.1f (%.0f) | %.3f |\n",
			bench_readers[r], cost.n, cost.med / 1e3, cost.min / 1e3, cost.max / 1e3,
			mean.med / 1e3, (cost.med + extra) / 1e3, reads.med, bytes.med, share);
		/* the readers' columns where they apply */
		fprintf(csv,
			"chain %s @ %d Hz,%s,%d,%d,nan,nan,nan,nan,nan,nan,%.0f,%.0f,%.0f,nan,nan,"
			"%.0f,nan,nan,nan,nan,%.1f,%.0f,nan,nan,%.0f,%.0f,%.0f,%.0f,nan,nan,%.4f\n",
			bench_readers[r], BENCH_TW_FREQ, bench_readers[r], BENCH_TW_FREQ, cost.n,
			cost.med, cost.min, cost.max, taken.mean, reads.med, bytes.med, p90.med,
			extra, cost.med + extra, p90.med + extra, share);
	}
}

const char *bench_config_name(const struct bench_config *c, char *buf, size_t len)
{
	if (c->reader < 0)
		snprintf(buf, len, "none");
	else
		snprintf(buf, len, "%s @ %u Hz", bench_readers[c->reader], c->freq);
	return buf;
}

/* "reads (bytes)" per sample, median over the runs; "-" where the reader does not count
 * them (memcpy: its walk runs in the target) */
static const char *reads_text(const struct bench_config *c, char *buf, size_t len)
{
	struct bench_summary r = SUMMARY(c, reads), b = SUMMARY(c, read_bytes);

	if (!r.n || isnan(r.med))
		return "-";
	snprintf(buf, len, "%.1f (%.0f)", r.med, b.med);
	return buf;
}

/* --native: stack bytes copied and the recorder's unwind time (µs) per sample */
static const char *native_text(const struct bench_config *c, char *buf, size_t len)
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
static double extra_ns(const struct bench_config *c, const struct bench_summary *sig)
{
	return c->reader == BENCH_MEMCPY ? sig->med : c->reader < 0 ? NAN : 0;
}

/* Each reader's whole cost to the target per sample, and the readers against each other. */
static void write_costs(FILE *md, const struct bench_config *cfg, const struct bench_summary *sig)
{
	fprintf(md,
		"\nWhat a sample costs the target (µs, medians over the repetitions): the "
		"reader's own time per sample, for memcpy with the signal's delivery and return "
		"(a tgkill round trip to an empty handler less a tgkill of signal 0, measured at "
		"each repetition: median %.2f µs, %.2f-%.2f, %d rounds each); reads of the "
		"target's memory per sample:\n\n",
		sig->med / 1e3, sig->min / 1e3, sig->max / 1e3, BENCH_SIGNAL_ROUNDS);
	fprintf(md, "| run | own median | own p90 | + signal | whole median | whole p90 | "
		    "reads/sample | bytes/sample |\n|---|---|---|---|---|---|---|---|\n");
	for (int i = 1; i < BENCH_NCONFIGS; i++) {
		const struct bench_config *c = &cfg[i];
		struct bench_summary r = SUMMARY(c, reads), b = SUMMARY(c, read_bytes);
		double own = SUMMARY(c, cost_ns).med, p90 = SUMMARY(c, p90_ns).med,
		       x = extra_ns(c, sig);
		char name[64];

		fprintf(md, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.0f |\n",
			bench_config_name(c, name, sizeof(name)), own / 1e3, p90 / 1e3, x / 1e3,
			(own + x) / 1e3, (p90 + x) / 1e3, r.med, b.med);
	}
	fprintf(md, "\nWhole cost per sample, median, bpf : memcpy : vmreadv (bpf = 1):\n\n"
		    "| Hz | bpf µs | memcpy µs | vmreadv µs | bpf : memcpy : vmreadv |\n"
		    "|---|---|---|---|---|\n");
	for (int f = 0; f < BENCH_NFREQS; f++) {
		double b = SUMMARY(&cfg[1 + f], cost_ns).med,
		       m = SUMMARY(&cfg[3 + f], cost_ns).med + sig->med,
		       v = SUMMARY(&cfg[5 + f], cost_ns).med;

		fprintf(md, "| %u | %.2f | %.2f | %.2f | 1 : %.2f : %.1f |\n", bench_freqs[f],
			b / 1e3, m / 1e3, v / 1e3, m / b, v / b);
	}
}

/* One configuration's row of the readers' table and of its CSV. */
static void write_config(FILE *md, FILE *csv, const struct bench_report *rep,
			 const struct bench_config *c, const struct bench_summary *sig)
{
	const struct bench_config *none = &rep->cfg[0];
	struct bench_summary w = SUMMARY(c, wall), cp = SUMMARY(c, cpu), cost = SUMMARY(c, cost_ns),
			     pc = SUMMARY(c, prof_cpu), mean = SUMMARY(c, mean_ns),
			     bw = SUMMARY(none, wall), bc = SUMMARY(none, cpu);
	bool vs_bpf = c->reader > 0;
	double ov = vs_bpf ? c->overlap_bpf : NAN, ovl = vs_bpf ? c->overlap_bpf_leaves : NAN;
	/* the target's extra CPU time per sample: the whole cost a sample puts on it, signal
	 * delivery and kernel entries included (µs) */
	double tcpu = c->reader < 0 ? NAN : (cp.med - bc.med) / SUMMARY(c, taken).mean * 1e6;
	/* the share of its samples that walked a task chain: BPF's creation probe knows
	 * every task at birth, the other readers only those of the last task snapshot */
	double in_task = c->reader < 0 ? NAN : SUMMARY(c, in_task).mean / SUMMARY(c, taken).mean;
	char name[64], rtext[48], ntext[64];

	bench_config_name(c, name, sizeof(name));
	fprintf(md, "| %s | %d | %.3f (%.3f-%.3f) | %.3f | %.3f | %.3f |", name, w.n, w.med, w.min,
		w.max, w.med / bw.med, cp.med, cp.med / bc.med);
	if (c->reader < 0)
		fprintf(md, " - | - | - | - | - | - | - | - | - | - | - | - |\n");
	else
		fprintf(md,
			" %.1f (%.1f-%.1f) | %.1f | %s | %s | %.1f | %.3f | %.0f | %.0f | %.0f | "
			"%.3f | %s%.3f / %.3f | %.3f |\n",
			cost.med / 1e3, cost.min / 1e3, cost.max / 1e3, mean.med / 1e3,
			reads_text(c, rtext, sizeof(rtext)), native_text(c, ntext, sizeof(ntext)),
			tcpu, pc.med, SUMMARY(c, taken).mean, SUMMARY(c, recorded).mean,
			SUMMARY(c, lost).mean, in_task, vs_bpf ? "" : "(is bpf) ",
			vs_bpf ? ov : 1.0, vs_bpf ? ovl : 1.0, c->overlap_self);
	fprintf(csv,
		"%s,%s,%u,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.0f,%.0f,%.0f,%.0f,%.4f,%.0f,"
		"%.0f,%.0f,%.4f,%.4f,%.1f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,nan,%.4f\n",
		name, c->reader < 0 ? "none" : bench_readers[c->reader], c->freq, w.n, w.med, w.min,
		w.max, w.med / bw.med, cp.med, cp.med / bc.med, cost.med, cost.min, cost.max,
		tcpu * 1e3, pc.med, SUMMARY(c, taken).mean, SUMMARY(c, recorded).mean,
		SUMMARY(c, lost).mean, ov, c->overlap_self, SUMMARY(c, reads).med,
		SUMMARY(c, read_bytes).med, SUMMARY(c, native_bytes).med, SUMMARY(c, unwind_ns).med,
		SUMMARY(c, p90_ns).med, extra_ns(c, sig),
		SUMMARY(c, cost_ns).med + extra_ns(c, sig),
		SUMMARY(c, p90_ns).med + extra_ns(c, sig), SUMMARY(c, work_linked).med, in_task);
}

/* The readers' profiles against each other, the start-up and the depth sweep. */
static void write_overlaps_startup_depth(FILE *md, const struct bench_report *rep)
{
	fprintf(md, "\nPairwise overlap of the readers' profiles (all runs at a rate together), "
		    "whole stacks / leaves. Whole stacks compare like with like only where the "
		    "readers know the same tasks: BPF's creation probe knows every task at birth, "
		    "the other readers those of the last task snapshot (the `in a task chain` "
		    "column), so they differ on a workload of short-lived tasks; the leaves "
		    "compare the frames alone:\n\n");
	fprintf(md, "| Hz | bpf-memcpy | bpf-vmreadv | memcpy-vmreadv |\n|---|---|---|---|\n");
	for (int f = 0; f < BENCH_NFREQS; f++) {
		fprintf(md, "| %u |", bench_freqs[f]);
		for (int k = 0; k < 3; k++)
			fprintf(md, " %.3f / %.3f |", rep->pair_overlap[f][k],
				rep->pair_overlap_leaves[f][k]);
		fputc('\n', md);
	}
	fprintf(md,
		"\nStart-up: the recorder's CPU before its first sample (`--stats`' "
		"`profiler cpu ... s before`), %d starts in each mode on the workload, "
		"default options:\n\n| mode | starts | CPU s, median (min-max) |\n"
		"|---|---|---|\n",
		BENCH_STARTUPS);
	for (int m = 0; m < BENCH_NMODES; m++) {
		struct bench_summary st = bench_summarize(rep->startup_s[m], BENCH_STARTUPS);

		fprintf(md, "| %s | %d | %.3f (%.3f-%.3f) |\n", bench_modes[m], st.n, st.med,
			st.min, st.max);
	}
	fprintf(md, "\nCost per sample (µs) against the workload's stack depth, 999 Hz:\n\n"
		    "| depth | bpf | memcpy | vmreadv | bpf --native |\n|---|---|---|---|---|\n");
	for (int d = 0; d < rep->ndepths; d++)
		fprintf(md, "| %d | %.1f | %.1f | %.1f | %.1f |\n", rep->depths[d],
			rep->depth_cost[0][d] / 1e3, rep->depth_cost[1][d] / 1e3,
			rep->depth_cost[2][d] / 1e3, rep->depth_cost[3][d] / 1e3);
}

/* DIR/readers.md and readers.csv. */
static int write_readers(const char *dir, const struct bench_report *rep, char *why, size_t len)
{
	struct bench_summary sig = bench_summarize(rep->signal_ns, rep->reps);
	char path[PATH_MAX];
	FILE *md, *csv;

	snprintf(path, sizeof(path), "%s/readers.md", dir);
	md = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/readers.csv", dir);
	csv = fopen(path, "w");
	if (!md || !csv) {
		snprintf(why, len, "cannot write into %s: %s", dir, strerror(errno));
		if (md)
			fclose(md);
		if (csv)
			fclose(csv);
		return -1;
	}
	fprintf(csv, "config,reader,freq,runs,wall_med,wall_min,wall_max,slowdown_wall,cpu_med,"
		     "slowdown_cpu,cost_ns_med,cost_ns_min,cost_ns_max,target_cpu_ns_per_sample,"
		     "profiler_cpu_s,taken,"
		     "recorded,lost,overlap_bpf,overlap_self,reads_per_sample,bytes_per_sample,"
		     "native_stack_bytes,unwind_ns,p90_ns_med,signal_ns,whole_ns_med,"
		     "whole_p90_ns_med,work_linked,linked_share,in_task_share\n");
	fprintf(md, "| run | n | wall s (min-max) | slowdown wall | target CPU s | slowdown CPU | "
		    "cost/sample µs, median (min-max) | mean | reads/sample (bytes) | "
		    "native stack copy, unwind per sample | "
		    "target CPU µs per sample | "
		    "profiler CPU s | "
		    "samples taken | recorded | lost | in a task chain | "
		    "overlap with bpf (stacks / leaves) | overlap self (stacks) |\n");
	fprintf(md, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < BENCH_NCONFIGS; i++)
		write_config(md, csv, rep, &rep->cfg[i], &sig);
	write_costs(md, rep->cfg, &sig);
	write_threadwork(rep, md, csv);
	write_chain(rep, md, csv, &sig);
	write_overlaps_startup_depth(md, rep);
	fclose(md);
	fclose(csv);
	return 0;
}

/* DIR/depth.csv. */
static int write_depth(const char *dir, const struct bench_report *rep, char *why, size_t len)
{
	char path[PATH_MAX];
	FILE *csv;

	snprintf(path, sizeof(path), "%s/depth.csv", dir);
	csv = fopen(path, "w");
	if (!csv) {
		snprintf(why, len, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	fprintf(csv, "depth,bpf_ns,memcpy_ns,vmreadv_ns,bpf_native_ns\n");
	for (int d = 0; d < rep->ndepths; d++)
		fprintf(csv, "%d,%.0f,%.0f,%.0f,%.0f\n", rep->depths[d], rep->depth_cost[0][d],
			rep->depth_cost[1][d], rep->depth_cost[2][d], rep->depth_cost[3][d]);
	fclose(csv);
	return 0;
}

/* DIR/depth.svg: the depth sweep plotted. */
static int write_svg(const char *dir, const struct bench_report *rep, char *why, size_t len)
{
	static const char *const colors[BENCH_NREADERS] = { "#1f77b4", "#d62728", "#2ca02c",
							    "#9467bd" };
	struct svgplot_series series[BENCH_NREADERS];
	struct svgplot plot = { .title = "Read cost per sample against stack depth (999 Hz)",
				.xlabel = "coroutine chain depth",
				.yunit = "µs",
				.yscale = 1e3,
				.x = rep->depths,
				.nx = rep->ndepths,
				.series = series,
				.nseries = BENCH_NREADERS };
	char path[PATH_MAX];

	for (int r = 0; r < BENCH_NREADERS; r++)
		series[r] =
			(struct svgplot_series){ bench_readers[r], colors[r], rep->depth_cost[r] };
	snprintf(path, sizeof(path), "%s/depth.svg", dir);
	if (svgplot_write(path, &plot) < 0) {
		snprintf(why, len, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int bench_report_write(const char *dir, const struct bench_report *r, char *why, size_t len)
{
	if (write_readers(dir, r, why, len) || write_depth(dir, r, why, len))
		return -1;
	return write_svg(dir, r, why, len);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What asyncbpf-bench writes of fixed measurements: the readers' table, its CSV, the
 * pairwise overlaps, the depth sweep's CSV and plot, and a directory it cannot write. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/benchreport.h"
#include "tests/unit/unit.h"

static char *read_in(const char *dir, const char *name)
{
	char path[512];
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bench_read_file(path, &len);
}

static void fill(struct bench_report *r)
{
	static const int depths[] = { 10, 30 };
	const struct bench_result run = { .wall = 2,
					  .cpu = 1,
					  .prof_cpu = 0.1,
					  .cost_ns = 1000,
					  .p90_ns = 2000,
					  .mean_ns = 1500,
					  .reads = 3,
					  .read_bytes = 300,
					  .native_bytes = NAN,
					  .unwind_ns = NAN,
					  .taken = 100,
					  .recorded = 100,
					  .in_task = 80,
					  .ok = 1 };

	bench_report_init(r);
	r->reps = 1;
	r->signal_ns[0] = 500;
	for (int i = 0; i < BENCH_NCONFIGS; i++) {
		r->cfg[i].runs[0] = run;
		r->cfg[i].nruns = 1;
		r->cfg[i].overlap_bpf = 0.5;
		r->cfg[i].overlap_bpf_leaves = 0.25;
		r->cfg[i].overlap_self = 0.9;
	}
	r->cfg[0].runs[0].wall = 1;
	r->cfg[0].runs[0].cpu = 0.5;
	for (int f = 0; f < BENCH_NFREQS; f++)
		for (int k = 0; k < 3; k++) {
			r->pair_overlap[f][k] = 0.5 / (1 << k);
			r->pair_overlap_leaves[f][k] = 0.9 - 0.1 * k;
		}
	for (int m = 0; m < BENCH_NTW; m++)
		r->tw[m][0] = run;
	for (int k = 0; k < BENCH_CHAIN_READERS; k++)
		r->chain[k][0] = run;
	r->depths = depths;
	r->ndepths = 2;
	for (int k = 0; k < BENCH_NREADERS; k++) {
		r->depth_cost[k][0] = 1000 * (k + 1);
		r->depth_cost[k][1] = 2000 * (k + 1);
	}
}

static void test_write(void)
{
	static struct bench_report r;
	char dir[] = "/tmp/test_benchreport.XXXXXX", why[256], *md, *csv, *depth, *svg;

	fill(&r);
	if (!mkdtemp(dir)) {
		SKIP("no temporary directory");
		return;
	}
	CHECK(bench_report_write(dir, &r, why, sizeof(why)) == 0, "%s", why);
	md = read_in(dir, "readers.md");
	csv = read_in(dir, "readers.csv");
	depth = read_in(dir, "depth.csv");
	svg = read_in(dir, "depth.svg");
	CHECK(md && strstr(md, "| none | 1 | 1.000 (1.000-1.000) | 1.000 | 0.500 | 1.000 | - |"),
	      "%s", md);
	CHECK(md && strstr(md, "| memcpy @ 99 Hz | 1 | 2.000 (2.000-2.000) | 2.000 | 1.000 | "
			       "2.000 | 1.0 (1.0-1.0) | 1.5 | 3.0 (300) | - | 5000.0 | 0.100 | "
			       "100 | 100 | 0 | 0.800 | 0.500 / 0.250 | 0.900 |\n"),
	      "%s", md);
	CHECK(md && strstr(md, "| bpf @ 999 Hz |") && strstr(md, "| (is bpf) 1.000 / 1.000 |"),
	      "bpf against itself: %s", md);
	CHECK(md && strstr(md, "| memcpy @ 99 Hz | 1.00 | 2.00 | 0.50 | 1.50 | 2.50 |"),
	      "the signal added to memcpy: %s", md);
	CHECK(md && strstr(md, "| 999 | 0.500 / 0.900 | 0.250 / 0.800 | 0.125 / 0.700 |\n"),
	      "pairwise: %s", md);
	CHECK(md && strstr(md, "| memcpy | 1 | 1.0 (1.0-1.0) | 1.5 | 1.5 | 3.0 (300) | 0.800 |") &&
		      strstr(md, "| vmreadv | 1 | 1.0 (1.0-1.0) | 1.5 | 1.0 | 3.0 (300) | 0.800 |"),
	      "the long chain, memcpy's whole cost with the signal: %s", md);
	CHECK(csv && !strncmp(csv, "config,reader,freq,runs,", 24) &&
		      strstr(csv, "\nbpf --native @ 999 Hz,bpf --native,999,1,2.0000,"),
	      "%s", csv);
	/* every row of readers.csv has the header's columns */
	for (const char *l = csv, *e; l && *l; l = e + 1) {
		static int want = -1;
		int n = 0;

		e = strchr(l, '\n');
		if (!e)
			break;
		for (const char *c = l; c < e; c++)
			n += *c == ',';
		if (want < 0)
			want = n;
		CHECK(n == want, "%d columns, the header %d: %.*s", n + 1, want + 1, (int)(e - l),
		      l);
	}
	CHECK(depth && !strcmp(depth, "depth,bpf_ns,memcpy_ns,vmreadv_ns,bpf_native_ns\n"
				      "10,1000,2000,3000,4000\n30,2000,4000,6000,8000\n"),
	      "%s", depth);
	CHECK(svg && strstr(svg, "<svg") && strstr(svg, "bpf --native"), "%s", svg);
	free(md);
	free(csv);
	free(depth);
	free(svg);
	CHECK(bench_report_write("/nonexistent/dir", &r, why, sizeof(why)) == -1 &&
		      strstr(why, "cannot write into /nonexistent/dir"),
	      "%s", why);
	for (const char *const *n = (const char *const[]){ "readers.md", "readers.csv", "depth.csv",
							   "depth.svg", NULL };
	     *n; n++) {
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", dir, *n);
		unlink(path);
	}
	rmdir(dir);
}

int main(void)
{
	test_write();
	return unit_exit();
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The pieces asyncbpf-bench is built from: summaries that skip missing values, the
 * overlap of two profiles interned apart, and the plot's refusal of nothing to draw. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/benchrun.h"
#include "bench/benchstats.h"
#include "profile/profile.h"
#include "bench/svgplot.h"
#include "tests/unit/unit.h"

static void test_summary(void)
{
	double odd[] = { 3, NAN, 1, 2 }, even[] = { 4, 1, 3, 2 }, none[] = { NAN };
	struct bench_summary s = bench_summarize(odd, 4);

	CHECK(s.n == 3 && s.med == 2 && s.min == 1 && s.max == 3 && s.mean == 2,
	      "n %d med %g min %g max %g mean %g", s.n, s.med, s.min, s.max, s.mean);
	s = bench_summarize(even, 4);
	CHECK(s.n == 4 && s.med == 2.5, "n %d med %g", s.n, s.med);
	s = bench_summarize(none, 1);
	CHECK(s.n == 0 && isnan(s.med) && isnan(s.mean), "n %d med %g", s.n, s.med);
}

/* a stack main;name with count samples, its frames interned in p's own order */
static void add(struct profile *p, const char *name, uint64_t count)
{
	uint32_t ids[2];

	ids[1] = profile_frame(p, FRAME_PYTHON, name, "/a.py", 1);
	ids[0] = profile_frame(p, FRAME_PYTHON, "main", "/a.py", 9);
	profile_add(p, ids, 2, count);
}

static void test_overlap(void)
{
	struct profile *a = profile_new(), *b = profile_new(), *c = profile_new();
	struct profile *empty = profile_new();
	size_t n;
	double ov;

	add(a, "f", 3);
	add(a, "g", 1);
	add(b, "g", 2); /* other ids for the same frames */
	add(b, "f", 6);
	add(c, "f", 1);
	add(c, "h", 1);
	ov = profile_overlap(a, b);
	CHECK(fabs(ov - 1) < 1e-12, "same shares: %g", ov);
	ov = profile_overlap(a, c);
	CHECK(fabs(ov - 0.5) < 1e-12, "half in common: %g", ov);
	profile_stacks(b, &n); /* sorting must not lose the stacks to lookups */
	ov = profile_overlap(c, b);
	CHECK(fabs(ov - 0.5) < 1e-12, "after sorting: %g", ov);
	CHECK(isnan(profile_overlap(a, empty)), "an empty profile");
	profile_free(a);
	profile_free(b);
	profile_free(c);
	profile_free(empty);
}

static void test_plot(void)
{
	char path[] = "/tmp/test_bench.XXXXXX";
	const int x[] = { 1, 2 };
	double none[] = { 0, NAN }, some[] = { 1500, 30000 };
	struct svgplot_series s = { "a<b", "#000", none };
	struct svgplot p = { "t", "x", "µs", 1e3, x, 2, &s, 1 };
	size_t len;
	char *text;
	int fd = mkstemp(path);

	close(fd);
	unlink(path);
	CHECK(svgplot_write(path, &p) == 1 && access(path, F_OK), "nothing to draw");
	s.y = some;
	CHECK(svgplot_write(path, &p) == 0, "written");
	text = bench_read_file(path, &len);
	CHECK(text && strstr(text, "a&lt;b") && strstr(text, ">100 µs<") &&
		      strstr(text, "<polyline"),
	      "%s", text ? text : "(unread)");
	free(text);
	unlink(path);
}

int main(void)
{
	test_summary();
	test_overlap();
	test_plot();
	return unit_exit();
}

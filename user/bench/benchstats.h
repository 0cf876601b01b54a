/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A measurement repeated over runs, summarized: what a benchmark's table reports. */
#ifndef ASYNCBPF_BENCHSTATS_H
#define ASYNCBPF_BENCHSTATS_H

#include <stddef.h>

struct bench_summary {
	double med, min, max, mean; /* NAN when there is no value */
	int n;			    /* values summarized */
};

/* The median, extremes and mean of the n values at v that are not NAN. */
struct bench_summary bench_summarize(const double *v, size_t n);

#endif

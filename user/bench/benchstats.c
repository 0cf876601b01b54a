// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <math.h>
#include <stdlib.h>

#include "bench/benchstats.h"

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct bench_summary bench_summarize(const double *v, size_t n)
{
	struct bench_summary s = { NAN, NAN, NAN, NAN, 0 };
	double *sorted = malloc((n ? n : 1) * sizeof(*sorted)), sum = 0;

	if (!sorted)
		return s;
	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i])) {
			sorted[s.n++] = v[i];
			sum += v[i];
		}
	if (s.n) {
		qsort(sorted, s.n, sizeof(*sorted), cmp_d);
		s.min = sorted[0];
		s.max = sorted[s.n - 1];
		s.med = s.n % 2 ? sorted[s.n / 2] : (sorted[s.n / 2 - 1] + sorted[s.n / 2]) / 2;
		s.mean = sum / s.n;
	}
	free(sorted);
	return s;
}

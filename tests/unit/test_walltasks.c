// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* user/readers/walltasks.c's sample: k distinct tasks of the list, each task as likely as
 * any other to be in it (a wall tick's re-weighting assumes it), and the whole list when
 * k reaches n. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "readers/walltasks.h"
#include "tests/unit/unit.h"

#define N     1000
#define DRAWS 200000

static uint64_t rnd(void *ctx)
{
	uint64_t *x = ctx;

	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1DULL;
}

/* DRAWS samples of k of N: no task twice in one, every task in about DRAWS * k / N of
 * them (within 5 standard deviations of the binomial count). */
static void check_uniform(size_t k)
{
	static struct wall_task list[N], out[N];
	static uint32_t set[WALLTASKS_PICK_SLOTS(N)];
	static unsigned count[N];
	uint64_t seed = 0x9E3779B97F4A7C15ULL;
	double want = (double)DRAWS * k / N, sd = sqrt(want * (1 - (double)k / N));
	size_t dup = 0, worst = 0;

	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < N; i++)
		list[i].task = 0x1000 + 0x40 * i;
	for (int d = 0; d < DRAWS; d++) {
		unsigned char seen[N] = { 0 };

		walltasks_sample(list, N, k, out, set, rnd, &seed);
		for (size_t i = 0; i < k; i++) {
			size_t at = (size_t)((out[i].task - 0x1000) / 0x40);

			dup += seen[at]++ > 0;
			count[at]++;
		}
	}
	for (size_t i = 0; i < N; i++)
		if (fabs(count[i] - want) > fabs(count[worst] - want))
			worst = i;
	CHECK(!dup, "k=%zu: %zu tasks drawn twice in one sample", k, dup);
	CHECK(fabs(count[worst] - want) <= 5 * sd,
	      "k=%zu: task %zu in %u samples of %d, expected %.0f +- %.0f", k, worst, count[worst],
	      DRAWS, want, sd);
}

int main(void)
{
	struct wall_task list[5], out[5];
	uint32_t set[WALLTASKS_PICK_SLOTS(5)];
	uint64_t seed = 1;

	for (size_t i = 0; i < 5; i++)
		list[i].task = i + 1;
	walltasks_sample(list, 5, 5, out, set, rnd, &seed);
	CHECK(!memcmp(list, out, sizeof(list)), "k = n: not the whole list in order");
	check_uniform(1);
	check_uniform(32);
	check_uniform(999);
	return unit_exit();
}

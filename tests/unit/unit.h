/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Minimal unit-test support: CHECK records a failure and goes on, SKIP says why a case
 * could not run. main() returns unit_exit(): 0 all passed, 1 a failure, 77 all skipped. */
#ifndef ASYNCBPF_UNIT_H
#define ASYNCBPF_UNIT_H

#include <stdio.h>

static int unit_failed, unit_passed, unit_skipped;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (cond) {                                                                        \
			unit_passed++;                                                             \
		} else {                                                                           \
			unit_failed++;                                                             \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
		}                                                                                  \
	} while (0)

#define SKIP(...)                                                                                  \
	do {                                                                                       \
		unit_skipped++;                                                                    \
		fprintf(stderr, "SKIP %s:%d: ", __FILE__, __LINE__);                               \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
	} while (0)

static inline int unit_exit(void)
{
	fprintf(stderr, "%d passed, %d failed, %d skipped\n", unit_passed, unit_failed,
		unit_skipped);
	if (unit_failed)
		return 1;
	return unit_passed ? 0 : 77;
}

#endif

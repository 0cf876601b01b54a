// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer target: asyncbpf-report's readers of recordings (collapsed text, pprof with
 * or without gzip), then every writer over what was read. A reader either refuses the
 * input with a reason or gives a profile the writers can write. */
#include <stdio.h>
#include <stdlib.h>

#include "profile/profile.h"
#include "profile/readers.h"
#include "profile/writers.h"

static void write_all(struct profile *p)
{
	FILE *f = fopen("/dev/null", "w");

	if (!f)
		return;
	write_collapsed(f, p);
	write_pprof(f, p, NULL);
	write_speedscope(f, p, NULL);
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int (*const readers[])(const void *, size_t, struct profile *, char *, size_t) = {
		profile_read,
		pprof_read,
	};
	char why[256];

	for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++) {
		struct profile *p = profile_new();

		if (!p)
			return 0;
		why[0] = 0;
		if (readers[i](data, size, p, why, sizeof(why))) {
			if (!why[0])
				abort(); /* a refusal always says why */
		} else {
			write_all(p);
		}
		profile_free(p);
	}
	{
		struct profile *p = profile_new();

		if (p && !collapsed_read((const char *)data, size, p, why, sizeof(why)))
			write_all(p);
		profile_free(p);
	}
	return 0;
}

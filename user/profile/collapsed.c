// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "profile/writers.h"

static void put_frame(FILE *f, const struct frame_sym *s)
{
	char buf[4096];

	frame_text(s, buf, sizeof(buf));
	fputs(buf, f);
}

int write_collapsed(FILE *f, struct profile *prof)
{
	size_t n;
	const struct stack_ent *st = profile_stacks(prof, &n);

	for (size_t i = 0; i < n; i++) {
		for (uint32_t k = 0; k < st[i].n; k++) {
			if (k)
				fputc(';', f);
			put_frame(f, profile_frame_sym(prof, st[i].ids[k]));
		}
		/* a weighted (wall-clock) profile counts microseconds of wall time */
		if (profile_weighted(prof))
			fprintf(f, " %llu\n", (unsigned long long)((st[i].wall_ns + 500) / 1000));
		else
			fprintf(f, " %llu\n", (unsigned long long)st[i].count);
	}
	/* a stack of its own, so that totals and flame graphs account for them */
	if (profile_lost(prof))
		fprintf(f, "%s %llu\n", COLLAPSED_LOST, (unsigned long long)profile_lost(prof));
	return ferror(f) ? -1 : 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>

#include "writers.h"

/* ';' separates frames and a newline ends a stack: neither may appear inside a frame. */
static void put_frame(FILE *f, const struct frame_sym *s)
{
	char buf[4096];
	FILE *m = fmemopen(buf, sizeof(buf), "w");
	size_t n;

	if (!m)
		return;
	profile_print_frame(m, s);
	n = ftell(m);
	fclose(m);
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	buf[n] = 0;
	/* control characters too: a name read from a process as it changes may hold any */
	for (char *p = buf; *p; p++)
		if (*p == ';' || (unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '_';
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
		fprintf(f, " %llu\n", (unsigned long long)st[i].count);
	}
	return ferror(f) ? -1 : 0;
}

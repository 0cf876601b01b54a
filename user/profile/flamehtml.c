// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The HTML flame graph: user/profile/flame/flame.html, built into the library, with the profile
 * as JSON in place of its data marker. */
#include <errno.h>
#include <string.h>

#include "profile/json.h"
#include "profile/writers.h"

#define DATA_MARKER "@ASYNCBPF_PROFILE_DATA@"

/* the template, embedded at build time (the path is relative to the top directory) */
__asm__(".section .rodata\n"
	".global flame_template\n"
	"flame_template:\n"
	".incbin \"user/profile/flame/flame.html\"\n"
	".byte 0\n"
	".previous\n");
extern const char flame_template[];

static char kind(enum frame_kind k)
{
	switch (k) {
	case FRAME_PROCESS:
		return 'p';
	case FRAME_THREAD:
	case FRAME_WORKER:
		return 't';
	case FRAME_PYTHON:
		return 'y';
	case FRAME_TASK:
		return 'k';
	case FRAME_NATIVE:
		return 'n';
	default:
		return 's';
	}
}

static void data(FILE *f, struct profile *prof, const struct writer_meta *meta)
{
	size_t n, nframes = profile_nframes(prof);
	const struct stack_ent *st = profile_stacks(prof, &n);
	char text[4096];

	fprintf(f, "{\"period\":%llu,", (unsigned long long)profile_period(prof));
	if (meta && meta->has_lost)
		fprintf(f, "\"lost\":%llu,", (unsigned long long)meta->lost);
	fputs("\"frames\":[", f);
	for (size_t i = 0; i < nframes; i++) {
		const struct frame_sym *s = profile_frame_sym(prof, i);

		frame_text(s, text, sizeof(text));
		fprintf(f, "%s[\"%c\",", i ? ",\n" : "", kind(s->kind));
		json_string(f, text);
		fputc(']', f);
	}
	fputs("],\n\"stacks\":[", f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s[%llu", i ? ",\n" : "", (unsigned long long)st[i].count);
		for (uint32_t k = 0; k < st[i].n; k++)
			fprintf(f, ",%u", st[i].ids[k]);
		fputc(']', f);
	}
	fputs("]}", f);
}

int write_flamehtml(FILE *f, struct profile *prof, const struct writer_meta *meta)
{
	const char *mark = strstr(flame_template, DATA_MARKER);

	if (!mark) {
		errno = EINVAL;
		return -1;
	}
	fwrite(flame_template, 1, mark - flame_template, f);
	data(f, prof, meta);
	fputs(mark + strlen(DATA_MARKER), f);
	return ferror(f) ? -1 : 0;
}

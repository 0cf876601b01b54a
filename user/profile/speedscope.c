// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* speedscope's file format (https://www.speedscope.app/file-format-schema.json): the
 * frames shared, one sampled profile per thread named by its process and thread, stacks
 * below the thread frame, weights in nanoseconds when the period is known. */
#include <errno.h>
#include <stdlib.h>

#include "profile/json.h"
#include "profile/writers.h"

struct thread_key {
	const struct frame_sym *process, *thread;
};

static size_t find_thread(struct thread_key *keys, size_t *n, const struct stack_labels *l)
{
	for (size_t i = 0; i < *n; i++)
		if (keys[i].process == l->process && keys[i].thread == l->thread)
			return i;
	keys[*n] = (struct thread_key){ l->process, l->thread };
	return (*n)++;
}

static void frame(FILE *f, const struct frame_sym *s)
{
	char text[4096];

	if (s->kind == FRAME_PYTHON) {
		fputs("{\"name\":", f);
		json_string(f, s->name);
		fputs(",\"file\":", f);
		json_string(f, s->file ? s->file : "?");
		fprintf(f, ",\"line\":%d}", s->line);
		return;
	}
	frame_text(s, text, sizeof(text));
	fputs("{\"name\":", f);
	json_string(f, text);
	fputc('}', f);
}

static void profile_name(FILE *f, const struct thread_key *k)
{
	char a[4096] = "", b[4096] = "", name[8200];

	if (k->process)
		frame_text(k->process, a, sizeof(a));
	if (k->thread)
		frame_text(k->thread, b, sizeof(b));
	snprintf(name, sizeof(name), "%s%s%s", a, *a && *b ? " " : "", b);
	json_string(f, *name ? name : "all");
}

int write_speedscope(FILE *f, struct profile *prof, const struct writer_meta *meta)
{
	size_t n, nthreads = 0, nframes = profile_nframes(prof);
	const struct stack_ent *st = profile_stacks(prof, &n);
	struct thread_key *keys = calloc(n + 1, sizeof(*keys));
	size_t *thread_of = calloc(n + 1, sizeof(*thread_of));
	uint64_t period = profile_period(prof);
	char exporter[128];

	if (!keys || !thread_of) {
		free(keys);
		free(thread_of);
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct stack_labels l;

		stack_labels(prof, &st[i], &l);
		thread_of[i] = find_thread(keys, &nthreads, &l);
	}
	if (meta && meta->has_lost)
		snprintf(exporter, sizeof(exporter), "asyncbpf (lost records: %llu)",
			 (unsigned long long)meta->lost);
	else
		snprintf(exporter, sizeof(exporter), "asyncbpf");

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n", f);
	fputs("\"exporter\":", f);
	json_string(f, exporter);
	fputs(",\"name\":\"asyncbpf\",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[", f);
	for (size_t i = 0; i < nframes; i++) {
		if (i)
			fputs(",\n", f);
		frame(f, profile_frame_sym(prof, i));
	}
	fputs("]},\n\"profiles\":[", f);
	for (size_t t = 0; t < nthreads; t++) {
		uint64_t total = 0;
		bool first = true;

		for (size_t i = 0; i < n; i++)
			if (thread_of[i] == t)
				total += st[i].count * (period ? period : 1);
		fputs(t ? ",\n{" : "\n{", f);
		fputs("\"type\":\"sampled\",\"name\":", f);
		profile_name(f, &keys[t]);
		fprintf(f, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\"samples\":[",
			period ? "nanoseconds" : "none", (unsigned long long)total);
		for (size_t i = 0; i < n; i++) {
			bool any = false;

			if (thread_of[i] != t)
				continue;
			fputs(first ? "[" : ",\n[", f);
			first = false;
			for (uint32_t k = 0; k < st[i].n; k++) {
				const struct frame_sym *s = profile_frame_sym(prof, st[i].ids[k]);

				/* the profile's name says which process and thread */
				if (s == keys[t].process || s == keys[t].thread)
					continue;
				fprintf(f, any ? ",%u" : "%u", st[i].ids[k]);
				any = true;
			}
			fputc(']', f);
		}
		fputs("],\"weights\":[", f);
		first = true;
		for (size_t i = 0; i < n; i++) {
			if (thread_of[i] != t)
				continue;
			fprintf(f, first ? "%llu" : ",%llu",
				(unsigned long long)(st[i].count * (period ? period : 1)));
			first = false;
		}
		fputs("]}", f);
	}
	fputs("]}\n", f);
	free(keys);
	free(thread_of);
	return ferror(f) ? -1 : 0;
}

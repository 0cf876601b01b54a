// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A profile split into Pyroscope series and parts within its limits; see series.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ship/series.h"

static bool service_char(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("_.-/", c));
}

bool series_service_ok(const char *s)
{
	const char *p = s;

	while (*p && service_char(*p))
		p++;
	return p != s && !*p;
}

void series_service_name(char *out, size_t len, const char *s)
{
	size_t i = 0;

	for (; s && *s && i + 1 < len; s++)
		out[i++] = service_char(*s) ? *s : '_';
	if (!i && len > 1)
		out[i++] = '_';
	out[i] = 0;
}

static bool value_char(char c)
{
	return (unsigned char)c >= 0x20 && c != 0x7f && !strchr(",{}", c);
}

void series_label_value(char *out, size_t len, const char *s)
{
	size_t i = 0;

	while (s && *s == ' ')
		s++;
	for (; s && *s && i + 1 < len; s++)
		out[i++] = value_char(*s) ? *s : '_';
	while (i && out[i - 1] == ' ')
		i--;
	out[i] = 0;
}

const char *series_check_label(const char *key, const char *value)
{
	size_t n = strlen(value);

	if (!*key ||
	    strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
		    strlen(key))
		return "a label name is letters, digits, '_' and '.'";
	if (!strncmp(key, "__", 2))
		return "label names starting with '__' are reserved";
	if (!strcmp(key, "service_name"))
		return "service_name is set by --service-name";
	if (!strcmp(key, "container_id"))
		return "container_id is set from each process's container";
	if (!n || value[0] == ' ' || value[n - 1] == ' ')
		return "a label value is not empty and has no spaces at its ends";
	for (const char *p = value; *p; p++)
		if (!value_char(*p))
			return "a label value holds no ',', '{', '}' or control characters";
	return NULL;
}

/* One stack's series: its service and container (NULL on the host). */
struct key {
	const char *service, *container;
	size_t idx; /* in profile_stacks' order: heaviest first */
};

static int series_cmp(const struct key *x, const struct key *y)
{
	int c = strcmp(x->service, y->service);

	return c ? c : strcmp(x->container ? x->container : "", y->container ? y->container : "");
}

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	int c = series_cmp(x, y);

	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

struct splitter {
	struct profile *prof;
	const struct stack_ent *st;
	const struct series_opts *o;
	struct writer_meta meta;
	uint32_t *remap; /* frame id in prof -> id in the part, UINT32_MAX: none yet */
	uint32_t *ids;	 /* one stack's ids in the part */
	size_t maxn;
	int (*emit)(void *ctx, const struct series_part *p);
	void *ctx;
	struct series_result *res;
	const char *name;
};

static uint32_t copy_frame(struct splitter *sp, struct profile *part, uint32_t id)
{
	const struct frame_sym *f = profile_frame_sym(sp->prof, id);
	uint32_t nid;

	if (sp->remap[id] != UINT32_MAX)
		return sp->remap[id];
	if (f->kind == FRAME_PROCESS)
		nid = profile_process_frame(part, f->name, f->line, f->ns_pid, f->file);
	else
		nid = profile_frame(part, f->kind, f->name, f->file, f->line);
	if (nid != UINT32_MAX && f->start_line)
		profile_set_start_line(part, nid, f->start_line);
	sp->remap[id] = nid;
	return nid;
}

/* The part of keys[0..n) as a profile of its own. */
static struct profile *build(struct splitter *sp, const struct key *keys, size_t n)
{
	struct profile *part = profile_new();
	int err = !part;

	if (part)
		profile_set_period(part, profile_period(sp->prof));
	for (size_t k = 0; k < n && !err; k++) {
		const struct stack_ent *s = &sp->st[keys[k].idx];

		for (uint32_t i = 0; i < s->n && !err; i++) {
			sp->ids[i] = copy_frame(sp, part, s->ids[i]);
			err = sp->ids[i] == UINT32_MAX;
		}
		if (!err && profile_weighted(sp->prof))
			err = profile_add_ns(part, sp->ids, s->n, s->count, s->wall_ns, s->cpu_ns);
		else if (!err)
			err = profile_add(part, sp->ids, s->n, s->count);
	}
	for (size_t k = 0; k < n; k++) {
		const struct stack_ent *s = &sp->st[keys[k].idx];

		for (uint32_t i = 0; i < s->n; i++)
			sp->remap[s->ids[i]] = UINT32_MAX;
	}
	if (err) {
		profile_free(part);
		return NULL;
	}
	return part;
}

/* Emits keys[0..n) (at most max_samples stacks) as one part, or as halves when its
 * message is over max_bytes. */
static int emit_range(struct splitter *sp, const struct key *keys, size_t n)
{
	struct profile *part = build(sp, keys, n);
	struct series_part p = { .name = sp->name, .stacks = n };
	uint8_t *raw;
	int ret;

	if (!part)
		return -ENOMEM;
	ret = pprof_encode(part, &sp->meta, &raw, &p.len);
	p.samples = profile_total(part);
	profile_free(part);
	if (ret)
		return ret;
	if (p.len > sp->o->max_bytes) {
		free(raw);
		if (n == 1) {
			sp->res->dropped += p.samples;
			return 0;
		}
		ret = emit_range(sp, keys, n / 2);
		return ret ? ret : emit_range(sp, keys + n / 2, n - n / 2);
	}
	p.raw = raw;
	ret = sp->emit(sp->ctx, &p);
	free(raw);
	sp->res->parts++;
	return ret;
}

static char *series_name(const struct series_opts *o, const char *service, const char *container)
{
	char svc[256], val[256];
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	bool host_set = false;

	if (!m)
		return NULL;
	series_service_name(svc, sizeof(svc), service);
	fprintf(m, "%s{service_name=%s", svc, svc);
	for (int i = 0; i < o->nlabels; i++)
		host_set |= !strcmp(o->labels[i].key, "host");
	if (!host_set && o->host) {
		series_label_value(val, sizeof(val), o->host);
		if (*val)
			fprintf(m, ",host=%s", val);
	}
	if (container) {
		series_label_value(val, sizeof(val), container);
		if (*val)
			fprintf(m, ",container_id=%s", val);
	}
	for (int i = 0; i < o->nlabels; i++)
		fprintf(m, ",%s=%s", o->labels[i].key, o->labels[i].value);
	fputc('}', m);
	if (fclose(m)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static const char *process_name(const struct profile *prof, const struct stack_ent *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		const struct frame_sym *f = profile_frame_sym(prof, s->ids[i]);

		if (f->kind == FRAME_PROCESS)
			return f->name;
	}
	return "unknown";
}

int series_split(struct profile *prof, const struct series_opts *o, const struct writer_meta *meta,
		 int (*emit)(void *ctx, const struct series_part *p), void *ctx,
		 struct series_result *res)
{
	struct splitter sp = { .prof = prof, .o = o, .emit = emit, .ctx = ctx, .res = res };
	struct key *keys;
	size_t n, a, b;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	sp.st = profile_stacks(prof, &n);
	if (!n)
		return 0;
	if (meta)
		sp.meta = *meta;
	sp.meta.no_sample_labels = true;
	keys = calloc(n, sizeof(*keys));
	sp.remap = malloc(profile_nframes(prof) * sizeof(*sp.remap));
	for (size_t i = 0; i < n; i++)
		sp.maxn = sp.st[i].n > sp.maxn ? sp.st[i].n : sp.maxn;
	sp.ids = malloc((sp.maxn + 1) * sizeof(*sp.ids));
	if (!keys || !sp.remap || !sp.ids) {
		ret = -ENOMEM;
		goto out;
	}
	memset(sp.remap, 0xff, profile_nframes(prof) * sizeof(*sp.remap));
	for (size_t i = 0; i < n; i++) {
		const char *c = profile_stack_container(prof, &sp.st[i]);

		keys[i].idx = i;
		keys[i].container = c && *c ? c : NULL;
		keys[i].service = o->service	      ? o->service
				  : keys[i].container ? keys[i].container
						      : process_name(prof, &sp.st[i]);
	}
	qsort(keys, n, sizeof(*keys), key_cmp);
	for (a = 0; a < n && !ret; a = b) {
		char *name;

		for (b = a + 1; b < n && !series_cmp(&keys[b], &keys[a]); b++)
			;
		name = series_name(o, keys[a].service, keys[a].container);
		if (!name) {
			ret = -ENOMEM;
			break;
		}
		sp.name = name;
		res->series++;
		for (size_t k = a; k < b && !ret; k += o->max_samples)
			ret = emit_range(&sp, keys + k,
					 b - k < o->max_samples ? b - k : o->max_samples);
		free(name);
	}
out:
	free(keys);
	free(sp.remap);
	free(sp.ids);
	return ret;
}

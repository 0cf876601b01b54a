// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Filters, merges and tables of profiles; see tables.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view/tables.h"
#include "profile/writers.h"

static const struct path_style default_style = { " -> ", false };

uint64_t stack_weight(const struct profile *p, const struct stack_ent *st)
{
	return profile_weighted(p) ? st->wall_ns : st->count;
}

static char *stack_task_path(const struct profile *p, const struct stack_ent *st,
			     const struct path_style *ps)
{
	char *buf = NULL, text[4096];
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	bool any = false;

	if (!m)
		return NULL;
	for (uint32_t k = 0; k < st->n; k++) {
		const struct frame_sym *s = profile_frame_sym(p, st->ids[k]);

		if (s->kind != FRAME_TASK)
			continue;
		if (ps->bare)
			snprintf(text, sizeof(text), "%s", s->name);
		else
			frame_text(s, text, sizeof(text));
		fprintf(m, "%s%s", any ? ps->arrow : "", text);
		any = true;
	}
	if (any) {
		const struct frame_sym *leaf = profile_frame_sym(p, st->ids[st->n - 1]);

		if (leaf->kind == FRAME_PYTHON)
			fprintf(m, ": %s", leaf->name);
		else {
			frame_text(leaf, text, sizeof(text));
			fprintf(m, ": %s", text);
		}
	}
	if (fclose(m)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Per frame of p, whether its text matches f->re; NULL (and *err) when out of memory,
 * NULL without a regex. */
static bool *frame_matches(const struct stack_filter *f, const struct profile *p, int *err)
{
	size_t n = profile_nframes(p);
	char text[4096];
	bool *m;

	*err = 0;
	if (!f || !f->re)
		return NULL;
	m = calloc(n + 1, sizeof(*m));
	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		frame_text(profile_frame_sym(p, i), text, sizeof(text));
		m[i] = !regexec(f->re, text, 0, NULL, 0);
	}
	return m;
}

/* 1 kept, 0 not, -ENOMEM. */
static int keep(const struct stack_filter *f, const struct profile *p, const struct stack_ent *st,
		const struct path_style *ps, const bool *match)
{
	bool pid_ok, task_ok, re_ok;

	if (!f)
		return 1;
	pid_ok = !f->pid, task_ok = !f->task, re_ok = !f->re;
	for (uint32_t i = 0; i < st->n; i++) {
		const struct frame_sym *s = profile_frame_sym(p, st->ids[i]);

		if (s->kind == FRAME_PROCESS && s->line == f->pid)
			pid_ok = true;
		if (f->task && s->kind == FRAME_TASK && !strcmp(s->name, f->task))
			task_ok = true;
		if (match && match[st->ids[i]])
			re_ok = true;
	}
	if (pid_ok && task_ok && re_ok && f->task_path) {
		char *path = stack_task_path(p, st, ps ? ps : &default_style);

		if (!path)
			return -ENOMEM;
		task_ok = !strcmp(path, f->task_path);
		free(path);
	}
	return pid_ok && task_ok && re_ok;
}

int profile_merge(struct profile *out, const struct profile *in, const struct stack_filter *f,
		  const struct path_style *ps)
{
	size_t n, nframes = profile_nframes(in);
	const struct stack_ent *st = profile_stacks_unsorted(in, &n);
	uint32_t *map = malloc((nframes + 1) * sizeof(*map)), *ids = NULL, maxn = 0;
	bool *match;
	int ret = -ENOMEM, k;

	match = frame_matches(f, in, &ret);
	if (!map || ret)
		goto out;
	ret = -ENOMEM;
	for (size_t i = 0; i < nframes; i++)
		map[i] = UINT32_MAX;
	for (size_t i = 0; i < n; i++)
		if (st[i].n > maxn)
			maxn = st[i].n;
	ids = malloc((maxn + 1) * sizeof(*ids));
	if (!ids)
		goto out;
	if (!profile_period(out))
		profile_set_period(out, profile_period(in));
	for (size_t i = 0; i < n; i++) {
		k = keep(f, in, &st[i], ps, match);
		if (k < 0)
			goto out;
		if (!k)
			continue;
		for (uint32_t j = 0; j < st[i].n; j++) {
			uint32_t id = st[i].ids[j];

			if (map[id] == UINT32_MAX) {
				const struct frame_sym *s = profile_frame_sym(in, id);

				map[id] = s->kind == FRAME_PROCESS
						  ? profile_process_frame(out, s->name, s->line,
									  s->ns_pid ? s->ns_pid
										    : s->line,
									  s->file)
						  : profile_frame(out, s->kind, s->name, s->file,
								  s->line);
				if (map[id] == UINT32_MAX)
					goto out;
				profile_set_start_line(out, map[id], s->start_line);
			}
			ids[j] = map[id];
		}
		if (profile_weighted(in) ? profile_add_ns(out, ids, st[i].n, st[i].count,
							  st[i].wall_ns, st[i].cpu_ns)
					 : profile_add(out, ids, st[i].n, st[i].count))
			goto out;
	}
	ret = 0;
out:
	free(match);
	free(map);
	free(ids);
	return ret;
}

struct keyed {
	char *key;
	size_t idx;
};

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct keyed *)a)->key, ((const struct keyed *)b)->key);
}

static char *func_key(const struct frame_sym *s)
{
	char text[4096], *k;

	if (s->kind != FRAME_PYTHON) {
		frame_text(s, text, sizeof(text));
		return strdup(text);
	}
	if (asprintf(&k, "%s (%s)", s->name, s->file ? s->file : "?") < 0)
		return NULL;
	return k;
}

/* Rows of functions: frames grouped by key (sorted (key, frame id) pairs), then each
 * stack adds its weight to its leaf's self and once to each function's total. */
static int build_funcs(struct tables *t, const struct profile *p, const struct stack_ent *st,
		       size_t n, const bool *kept)
{
	size_t nframes = profile_nframes(p);
	struct keyed *keys = calloc(nframes + 1, sizeof(*keys));
	size_t *func_of = calloc(nframes + 1, sizeof(*func_of));
	size_t *last = NULL;
	int ret = -ENOMEM;

	t->funcs = calloc(nframes + 1, sizeof(*t->funcs));
	if (!keys || !func_of || !t->funcs)
		goto out;
	for (size_t i = 0; i < nframes; i++) {
		keys[i] = (struct keyed){ func_key(profile_frame_sym(p, i)), i };
		if (!keys[i].key)
			goto out;
	}
	qsort(keys, nframes, sizeof(*keys), by_key);
	for (size_t i = 0; i < nframes; i++) {
		if (!t->nfuncs || strcmp(keys[i].key, t->funcs[t->nfuncs - 1].key)) {
			t->funcs[t->nfuncs++] =
				(struct func_row){ .key = keys[i].key,
						   .sym = profile_frame_sym(p, keys[i].idx) };
			keys[i].key = NULL;
		}
		func_of[keys[i].idx] = t->nfuncs - 1;
	}
	last = calloc(t->nfuncs + 1, sizeof(*last));
	if (!last)
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint64_t w = stack_weight(p, &st[i]);

		if (!kept[i] || !st[i].n)
			continue;
		t->funcs[func_of[st[i].ids[st[i].n - 1]]].self += w;
		for (uint32_t k = 0; k < st[i].n; k++) {
			size_t fi = func_of[st[i].ids[k]];

			if (last[fi] != i + 1) {
				last[fi] = i + 1;
				t->funcs[fi].total += w;
			}
		}
	}
	/* functions of no kept stack are no rows */
	{
		size_t w = 0;

		for (size_t i = 0; i < t->nfuncs; i++) {
			if (last[i])
				t->funcs[w++] = t->funcs[i];
			else
				free(t->funcs[i].key);
		}
		t->nfuncs = w;
	}
	ret = 0;
out:
	if (keys)
		for (size_t i = 0; i < nframes; i++)
			free(keys[i].key);
	free(keys);
	free(func_of);
	free(last);
	return ret;
}

static int by_path_key(const void *a, const void *b)
{
	return strcmp(((const struct path_row *)a)->key, ((const struct path_row *)b)->key);
}

static int build_paths(struct tables *t, const struct profile *p, const struct stack_ent *st,
		       size_t n, const bool *kept, const struct path_style *ps)
{
	size_t w = 0;

	t->paths = calloc(n + 1, sizeof(*t->paths));
	if (!t->paths)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char *k;

		if (!kept[i])
			continue;
		k = stack_task_path(p, &st[i], ps);
		if (!k)
			return -ENOMEM;
		if (!*k) {
			free(k);
			continue;
		}
		t->paths[t->npaths++] = (struct path_row){ k, stack_weight(p, &st[i]) };
		t->in_tasks += stack_weight(p, &st[i]);
	}
	/* merge equal paths */
	qsort(t->paths, t->npaths, sizeof(*t->paths), by_path_key);
	for (size_t i = 0; i < t->npaths; i++) {
		if (w && !strcmp(t->paths[w - 1].key, t->paths[i].key)) {
			t->paths[w - 1].weight += t->paths[i].weight;
			free(t->paths[i].key);
		} else {
			t->paths[w++] = t->paths[i];
		}
	}
	t->npaths = w;
	return 0;
}

static const struct frame_sym *stack_process(const struct profile *p, const struct stack_ent *st)
{
	for (uint32_t k = 0; k < st->n; k++) {
		const struct frame_sym *s = profile_frame_sym(p, st->ids[k]);

		if (s->kind == FRAME_PROCESS)
			return s;
	}
	return NULL;
}

static int by_pid(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static int build_procs(struct tables *t, const struct profile *p, const struct stack_ent *st,
		       size_t n, const bool *kept)
{
	size_t w = 0;

	t->procs = calloc(n + 1, sizeof(*t->procs));
	if (!t->procs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct frame_sym *s = kept[i] ? stack_process(p, &st[i]) : NULL;

		if (s)
			t->procs[t->nprocs++] =
				(struct proc_row){ s->line, s, stack_weight(p, &st[i]),
						   st[i].count };
	}
	/* one row per pid: the process frames of one pid differ when it exec'd */
	qsort(t->procs, t->nprocs, sizeof(*t->procs), by_pid);
	for (size_t i = 0; i < t->nprocs; i++) {
		if (w && t->procs[w - 1].pid == t->procs[i].pid) {
			t->procs[w - 1].weight += t->procs[i].weight;
			t->procs[w - 1].samples += t->procs[i].samples;
		} else {
			t->procs[w++] = t->procs[i];
		}
	}
	t->nprocs = w;
	return 0;
}

int tables_build(struct tables *t, const struct profile *p, const struct stack_filter *f,
		 const struct path_style *ps)
{
	size_t n;
	const struct stack_ent *st = profile_stacks_unsorted(p, &n);
	bool *kept = calloc(n + 1, sizeof(*kept)), *match;
	int ret = -ENOMEM, k;

	memset(t, 0, sizeof(*t));
	if (!ps)
		ps = &default_style;
	match = frame_matches(f, p, &ret);
	if (!kept || ret)
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint64_t w = stack_weight(p, &st[i]);

		k = keep(f, p, &st[i], ps, match);
		if (k < 0)
			goto out;
		kept[i] = k;
		if (!k)
			continue;
		t->total += w;
		t->samples += st[i].count;
		for (uint32_t j = 0; j < st[i].n; j++)
			if (profile_frame_sym(p, st[i].ids[j])->kind == FRAME_SPECIAL &&
			    !strcmp(profile_frame_sym(p, st[i].ids[j])->name, "[unknown]")) {
				t->unknown += w;
				break;
			}
	}
	ret = build_funcs(t, p, st, n, kept);
	if (!ret)
		ret = build_paths(t, p, st, n, kept, ps);
	if (!ret)
		ret = build_procs(t, p, st, n, kept);
out:
	free(kept);
	free(match);
	if (ret)
		tables_free(t);
	return ret;
}

void tables_free(struct tables *t)
{
	for (size_t i = 0; i < t->nfuncs; i++)
		free(t->funcs[i].key);
	for (size_t i = 0; i < t->npaths; i++)
		free(t->paths[i].key);
	free(t->funcs);
	free(t->paths);
	free(t->procs);
	memset(t, 0, sizeof(*t));
}

static int cmp_weight(uint64_t x, uint64_t y)
{
	return (x < y) - (x > y);
}

static int by_func(const void *a, const void *b, void *order)
{
	const struct func_row *x = a, *y = b;
	enum func_order o = *(const enum func_order *)order;
	int c = 0;

	if (o == BY_SELF)
		c = cmp_weight(x->self, y->self);
	else if (o == BY_TOTAL)
		c = cmp_weight(x->total, y->total);
	return c ? c : strcmp(x->key, y->key);
}

void tables_sort_funcs(struct tables *t, enum func_order o)
{
	qsort_r(t->funcs, t->nfuncs, sizeof(*t->funcs), by_func, &o);
}

static int by_path_weight(const void *a, const void *b)
{
	const struct path_row *x = a, *y = b;
	int c = cmp_weight(x->weight, y->weight);

	return c ? c : by_path_key(a, b);
}

void tables_sort_paths(struct tables *t, bool by_name)
{
	qsort(t->paths, t->npaths, sizeof(*t->paths), by_name ? by_path_key : by_path_weight);
}

static int by_proc_weight(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;
	int c = cmp_weight(x->weight, y->weight);

	return c ? c : by_pid(a, b);
}

static int by_proc_name(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;
	int c = strcmp(x->sym->name, y->sym->name);

	return c ? c : by_pid(a, b);
}

void tables_sort_procs(struct tables *t, enum proc_order o)
{
	qsort(t->procs, t->nprocs, sizeof(*t->procs),
	      o == PROC_BY_PID	  ? by_pid
	      : o == PROC_BY_NAME ? by_proc_name
				  : by_proc_weight);
}

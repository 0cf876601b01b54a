// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "asyncio/pstree.h"
#include "hash.h"

enum { NODE_TASK, NODE_CORO, NODE_THREAD };

struct node {
	int kind;
	char *label;
	size_t parent; /* NODE_CORO: the node it is under */
	size_t *kids, nkids, cap;
	int is_kid;
};

struct tree {
	struct node *v;
	size_t n, cap;
	/* coroutine nodes by (parent, label): a task with many awaiters' chains under one
	 * coroutine would make a scan of the kids quadratic */
	size_t *coro, coro_cap; /* node + 1; 0: empty */
	int nomem;
};

/* Who awaits whom as edges from a task to the tasks awaiting it (its kids in the tree),
 * each once: kid[start[i]..start[i + 1]) are task i's. */
struct edges {
	size_t *start, *kid;
};

static size_t add_node(struct tree *t, int kind, const char *label)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct node *v = realloc(t->v, cap * sizeof(*v));

		if (!v) {
			t->nomem = 1;
			return SIZE_MAX;
		}
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n] = (struct node){ .kind = kind, .label = strdup(label), .parent = SIZE_MAX };
	if (!t->v[t->n].label)
		t->nomem = 1;
	return t->n++;
}

static void add_kid(struct tree *t, size_t parent, size_t kid)
{
	struct node *p = &t->v[parent];

	if (p->nkids == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 4;
		size_t *k = realloc(p->kids, cap * sizeof(*k));

		if (!k) {
			t->nomem = 1;
			return;
		}
		p->kids = k;
		p->cap = cap;
	}
	p->kids[p->nkids++] = kid;
	t->v[kid].is_kid = 1;
}

static size_t coro_slot(const struct tree *t, size_t parent, const char *label)
{
	return hash_bytes(label, strlen(label), hash_u64(parent)) & (t->coro_cap - 1);
}

static int coro_grow(struct tree *t)
{
	size_t cap = t->coro_cap ? t->coro_cap * 2 : 256, old = t->coro_cap;
	size_t *v = calloc(cap, sizeof(*v)), *was = t->coro;

	if (!v)
		return -1;
	t->coro = v;
	t->coro_cap = cap;
	for (size_t i = 0; i < old; i++) {
		size_t j;

		if (!was[i])
			continue;
		j = coro_slot(t, t->v[was[i] - 1].parent, t->v[was[i] - 1].label);
		while (v[j])
			j = (j + 1) & (cap - 1);
		v[j] = was[i];
	}
	free(was);
	return 0;
}

/* The coroutine node labelled label under parent, made on first use. */
static size_t cor_node(struct tree *t, size_t parent, const char *label)
{
	size_t j, k;

	if (t->n * 2 >= t->coro_cap && coro_grow(t)) {
		t->nomem = 1;
		return SIZE_MAX;
	}
	for (j = coro_slot(t, parent, label); t->coro[j]; j = (j + 1) & (t->coro_cap - 1)) {
		k = t->coro[j] - 1;
		if (t->v[k].parent == parent && !strcmp(t->v[k].label, label))
			return k;
	}
	k = add_node(t, NODE_CORO, label);
	if (k == SIZE_MAX)
		return k;
	t->v[k].parent = parent;
	t->coro[j] = k + 1;
	add_kid(t, parent, k);
	return k;
}

static void edges_free(struct edges *e)
{
	free(e->start);
	free(e->kid);
}

/* Each task's awaiters, by position: a parent listed twice counts once. */
static int edges_make(struct atasks *a, struct edges *e)
{
	size_t n = 0;

	e->start = calloc(a->n + 2, sizeof(*e->start));
	for (size_t i = 0; i < a->n; i++)
		n += a->v[i].nparents;
	e->kid = malloc((n + 1) * sizeof(*e->kid));
	if (!e->start || !e->kid) {
		edges_free(e);
		return -1;
	}
	/* counts at start[p + 2], then offsets at start[p + 1], filled up to start[p + 1] */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < a->n; i++)
			for (uint32_t j = 0; j < a->v[i].nparents; j++) {
				struct atask *p = atasks_find(a, a->v[i].parents[j]);
				uint32_t d = 0;

				while (d < j && a->v[i].parents[d] != a->v[i].parents[j])
					d++;
				if (!p || d < j)
					continue;
				if (pass)
					e->kid[e->start[p - a->v + 1]++] = i;
				else
					e->start[p - a->v + 2]++;
			}
		if (!pass)
			for (size_t i = 2; i < a->n + 2; i++)
				e->start[i] += e->start[i - 1];
	}
	return 0;
}

static char *frame_label(const struct frame_rec *f, const struct py_target *pt, struct symtab *st)
{
	const struct py_code *c = symtab_code(st, pt, FRAME_CODE(f), f->fp);
	char *s = NULL;

	if (!c->valid)
		return strdup("[unknown]");
	if (asprintf(&s, "%s %s:%d", c->qualname, c->filename,
		     py_code_line(c, pt->version, f->instr)) < 0)
		return NULL;
	return s;
}

/* Walks a task's stack outermost first, making coroutine nodes under node. */
static size_t chain(struct tree *t, size_t node, const struct atask *k, const struct py_target *pt,
		    struct symtab *st)
{
	for (uint32_t i = 0; i < k->nframes && node != SIZE_MAX; i++) {
		char *label = frame_label(&k->frames[i], pt, st);

		if (!label) {
			t->nomem = 1;
			return SIZE_MAX;
		}
		node = cor_node(t, node, label);
		free(label);
	}
	if (node != SIZE_MAX && (k->frames_cut || (k->flags & SAMPLE_TRUNCATED))) {
		char cut[64];

		snprintf(cut, sizeof(cut), "[%s%u more frames not shown]",
			 k->flags & SAMPLE_TRUNCATED ? "at least " : "", k->frames_cut);
		node = cor_node(t, node, cut);
	}
	if (node != SIZE_MAX && k->flags & SAMPLE_READ_ERR)
		node = cor_node(t, node,
				"[incomplete: a read failed or the chain changed while read]");
	return node;
}

static void render(FILE *out, struct tree *t, size_t node, char *prefix, size_t plen, int last)
{
	struct node *n = &t->v[node];
	char *child;

	fprintf(out, "%s%s%s%s\n", prefix, last ? "└── " : "├── ",
		n->kind == NODE_TASK	 ? "(T) "
		: n->kind == NODE_THREAD ? "thread "
					 : " ",
		n->label);
	child = malloc(plen + 8);
	if (!child)
		return;
	memcpy(child, prefix, plen);
	memcpy(child + plen, last ? "    " : "│   ", last ? 5 : 7);
	for (size_t i = 0; i < n->nkids; i++)
		render(out, t, n->kids[i], child, plen + (last ? 4 : 6), i + 1 == n->nkids);
	free(child);
}

/* Depth-first search for tasks awaiting each other (parent -> child edges). */
static int find_cycles(FILE *err, struct atasks *a, const struct edges *e)
{
	enum { WHITE, GREY, BLACK };
	int *color = calloc(a->n, sizeof(*color));
	size_t *path = calloc(a->n + 1, sizeof(*path)), *it = calloc(a->n, sizeof(*it));
	int found = 0;

	if (!color || !path || !it) {
		free(color);
		free(path);
		free(it);
		return -1;
	}
	for (size_t root = 0; root < a->n; root++) {
		size_t depth = 0;

		if (color[root] != WHITE)
			continue;
		path[depth++] = root;
		color[root] = GREY;
		it[root] = e->start[root];
		while (depth) {
			size_t v = path[depth - 1], w;
			int advanced = 0;

			/* children of v: the tasks that list v among their awaiters */
			while (it[v] < e->start[v + 1]) {
				w = e->kid[it[v]++];
				if (color[w] == WHITE) {
					color[w] = GREY;
					it[w] = e->start[w];
					path[depth++] = w;
					advanced = 1;
					break;
				}
				if (color[w] == GREY) {
					size_t i = 0;

					if (!found++)
						fprintf(err, "ERROR: await-graph contains cycles - "
							     "cannot print a tree!\n\n");
					while (path[i] != w)
						i++;
					fputs("cycle: ", err);
					for (; i < depth; i++)
						fprintf(err, "%s → ", a->v[path[i]].name);
					fprintf(err, "%s\n", a->v[w].name);
				}
			}
			if (!advanced) {
				color[v] = BLACK;
				depth--;
			}
		}
	}
	free(color);
	free(path);
	free(it);
	return found ? 1 : 0;
}

/* Under the end of the awaiting task's chain, the thread, then its frames outermost
 * first, as a task's coroutines are drawn. */
static void add_thread(struct tree *t, struct atasks *a, const struct task_thread *th,
		       const struct py_target *pt, struct symtab *st)
{
	size_t node = chain(t, th->task, &a->v[th->task], pt, st), kid;
	char *label = NULL;

	if (node == SIZE_MAX)
		return;
	if ((th->tid ? asprintf(&label, "%s%s(tid %d)", th->name ? th->name : "",
				th->name ? " " : "", th->tid)
		     : asprintf(&label, "%s", th->name ? th->name : "(unnamed)")) < 0) {
		t->nomem = 1;
		return;
	}
	kid = add_node(t, NODE_THREAD, label);
	free(label);
	if (kid == SIZE_MAX)
		return;
	add_kid(t, node, kid);
	for (uint32_t i = 0; i < th->nframes && kid != SIZE_MAX; i++) {
		if (!(label = frame_label(&th->frames[i], pt, st))) {
			t->nomem = 1;
			return;
		}
		kid = cor_node(t, kid, label);
		free(label);
	}
}

int pstree_print(FILE *out, FILE *err, struct atasks *a, const struct task_threads *tt,
		 const struct py_target *pt, struct symtab *st)
{
	struct tree t = {};
	struct edges e;
	int ret;

	if (edges_make(a, &e))
		return -1;
	ret = find_cycles(err, a, &e);
	if (ret) {
		edges_free(&e);
		return ret;
	}
	for (size_t i = 0; i < a->n; i++)
		add_node(&t, NODE_TASK, a->v[i].name);
	/* the tasks awaiting a task hang under the end of its coroutine chain; a task that
	 * no task awaits shows its own chain */
	for (size_t i = 0; i < a->n && !t.nomem; i++) {
		size_t node = chain(&t, i, &a->v[i], pt, st);

		for (size_t k = e.start[i]; node != SIZE_MAX && k < e.start[i + 1]; k++)
			add_kid(&t, node, e.kid[k]);
	}
	edges_free(&e);
	for (size_t i = 0; tt && i < tt->n && !t.nomem; i++)
		add_thread(&t, a, &tt->v[i], pt, st);
	for (size_t i = 0; i < t.n && !t.nomem; i++)
		if (!t.v[i].is_kid)
			render(out, &t, i, "", 0, 1);
	ret = t.nomem ? -1 : 0;
	for (size_t i = 0; i < t.n; i++) {
		free(t.v[i].label);
		free(t.v[i].kids);
	}
	free(t.v);
	free(t.coro);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "asyncio/pstree.h"

enum { NODE_TASK, NODE_CORO, NODE_THREAD };

struct node {
	int kind;
	char *label;
	size_t *kids, nkids, cap;
	int is_kid;
};

struct tree {
	struct node *v;
	size_t n, cap;
	int nomem;
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
	t->v[t->n] = (struct node){ .kind = kind, .label = strdup(label) };
	if (!t->v[t->n].label)
		t->nomem = 1;
	return t->n++;
}

static void add_kid(struct tree *t, size_t parent, size_t kid)
{
	struct node *p = &t->v[parent];

	for (size_t i = 0; i < p->nkids; i++)
		if (p->kids[i] == kid)
			return;
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

/* The coroutine node labelled label under parent, made on first use. */
static size_t cor_node(struct tree *t, size_t parent, const char *label)
{
	size_t k;

	for (size_t i = 0; i < t->v[parent].nkids; i++) {
		k = t->v[parent].kids[i];
		if (t->v[k].kind == NODE_CORO && !strcmp(t->v[k].label, label))
			return k;
	}
	k = add_node(t, NODE_CORO, label);
	if (k != SIZE_MAX)
		add_kid(t, parent, k);
	return k;
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
static int find_cycles(FILE *err, struct atasks *a)
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
		it[root] = 0;
		while (depth) {
			size_t v = path[depth - 1], w;
			int advanced = 0;

			/* children of v: the tasks that list v among their awaiters */
			for (w = it[v]; w < a->n; w++) {
				int edge = 0;

				for (uint32_t j = 0; j < a->v[w].nparents; j++)
					edge |= a->v[w].parents[j] == a->v[v].addr;
				if (!edge)
					continue;
				if (color[w] == WHITE) {
					it[v] = w + 1;
					color[w] = GREY;
					it[w] = 0;
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
	int ret = find_cycles(err, a);

	if (ret)
		return ret;
	for (size_t i = 0; i < a->n; i++)
		add_node(&t, NODE_TASK, a->v[i].name);
	/* each awaiter's coroutine chain leads to the awaited task */
	for (size_t i = 0; i < a->n && !t.nomem; i++) {
		for (uint32_t j = 0; j < a->v[i].nparents; j++) {
			struct atask *p = atasks_find(a, a->v[i].parents[j]);
			size_t node = chain(&t, (size_t)(p - a->v), p, pt, st);

			if (node != SIZE_MAX)
				add_kid(&t, node, i);
		}
	}
	/* tasks that await no task show their own stack */
	for (size_t i = 0; i < a->n && !t.nomem; i++) {
		int awaits = 0;

		for (size_t k = 0; k < a->n; k++)
			for (uint32_t j = 0; j < a->v[k].nparents; j++)
				awaits |= a->v[k].parents[j] == a->v[i].addr;
		if (!awaits)
			chain(&t, i, &a->v[i], pt, st);
	}
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
	return ret;
}

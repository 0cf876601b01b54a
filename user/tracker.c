// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atasks.h"
#include "memread.h"
#include "tracker.h"

struct known {
	uint64_t task, coro;
};

struct proc_tasks {
	pid_t pid;
	struct known *v;
	size_t n;
	int64_t modules; /* len(sys.modules) when asyncio was last found missing, or -1 */
};

struct tracker {
	struct sampler *s;
	struct proc_tasks *procs;
	size_t nprocs;
};

static int by_identity(const void *a, const void *b)
{
	const struct known *x = a, *y = b;

	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	return (x->coro > y->coro) - (x->coro < y->coro);
}

/* Still pending and still running the same coroutine? */
static int task_alive(const struct py_target *t, const struct known *k)
{
	const struct py_async_layout *a = &t->proc.async;
	uint64_t coro;
	int32_t state;

	return !mem_read(t->pid, k->task + a->task_coro, &coro, sizeof(coro)) && coro == k->coro &&
	       !mem_read(t->pid, k->task + a->fut_state, &state, sizeof(state)) && state == 0;
}

struct tracker *tracker_new(struct sampler *s)
{
	struct tracker *tr = calloc(1, sizeof(*tr));

	if (tr) {
		tr->s = s;
	}
	return tr;
}

void tracker_free(struct tracker *tr)
{
	if (!tr)
		return;
	for (size_t i = 0; i < tr->nprocs; i++)
		free(tr->procs[i].v);
	free(tr->procs);
	free(tr);
}

static struct proc_tasks *proc(struct tracker *tr, pid_t pid)
{
	struct proc_tasks *p;

	for (size_t i = 0; i < tr->nprocs; i++)
		if (tr->procs[i].pid == pid)
			return &tr->procs[i];
	p = realloc(tr->procs, (tr->nprocs + 1) * sizeof(*p));
	if (!p)
		return NULL;
	tr->procs = p;
	p = &tr->procs[tr->nprocs++];
	*p = (struct proc_tasks){.pid = pid, .modules = -1};
	return p;
}

int tracker_refresh(struct tracker *tr, const struct py_target *t, char *why, size_t len)
{
	struct proc_tasks *pt = proc(tr, t->pid);
	struct known *now;
	struct objread r;
	struct atasks a;
	int64_t modules;
	size_t nnow, kept = 0;
	int ret;

	if (!pt) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	/* until asyncio is imported, look for it only when something new was imported */
	if (pt->modules >= 0 && !objread_init(&r, t) && !obj_modules_count(&r, &modules) &&
	    modules == pt->modules)
		return 0;
	if (atasks_snapshot(t, ATASKS_LINKS, &a, why, len))
		return -1;
	pt->modules = -1;
	if (!a.asyncio && !objread_init(&r, t) && obj_modules_count(&r, &pt->modules))
		pt->modules = -1;
	now = calloc(a.n ? a.n : 1, sizeof(*now));
	if (!now) {
		atasks_free(&a);
		snprintf(why, len, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < a.n; i++) {
		struct atask *k = &a.v[i];

		now[i] = (struct known){.task = k->addr, .coro = k->coro};
		sampler_set_coro_task(tr->s, t->pid, k->coro, k->addr);
		if (k->nparents) {
			struct atask *p = atasks_find(&a, k->parents[0]);
			struct task_link l = {.child_coro = k->coro,
					      .parent = p->addr,
					      .parent_coro = p->coro,
					      .kind = LINK_AWAITER};

			sampler_set_link(tr->s, t->pid, k->addr, &l);
		}
	}
	/* tasks missing from this snapshot: their entries go once the task is really done
	 * (a snapshot can miss a task that changes while it is read); links to them stay */
	qsort(now, a.n, sizeof(*now), by_identity);
	nnow = a.n;
	for (size_t j = 0; j < pt->n; j++) {
		if (bsearch(&pt->v[j], now, a.n, sizeof(*now), by_identity))
			continue;
		if (task_alive(t, &pt->v[j])) {
			pt->v[kept++] = pt->v[j];
			continue;
		}
		sampler_del_coro_task(tr->s, t->pid, pt->v[j].coro);
		sampler_del_link(tr->s, t->pid, pt->v[j].task);
	}
	if (kept) {
		struct known *all = realloc(now, (nnow + kept) * sizeof(*now));

		if (all) {
			memcpy(all + nnow, pt->v, kept * sizeof(*all));
			now = all;
			nnow += kept;
		}
	}
	free(pt->v);
	pt->v = now;
	pt->n = nnow;
	ret = a.asyncio;
	atasks_free(&a);
	return ret;
}

void tracker_forget(struct tracker *tr, pid_t pid)
{
	for (size_t i = 0; i < tr->nprocs; i++) {
		struct proc_tasks *pt = &tr->procs[i];

		if (pt->pid != pid)
			continue;
		for (size_t j = 0; j < pt->n; j++) {
			sampler_del_coro_task(tr->s, pid, pt->v[j].coro);
			sampler_del_link(tr->s, pid, pt->v[j].task);
		}
		free(pt->v);
		*pt = tr->procs[--tr->nprocs];
		return;
	}
}

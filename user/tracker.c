// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atasks.h"
#include "memread.h"
#include "tracker.h"

struct known {
	uint64_t task, coro, serial;
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
	uint64_t next_serial; /* for tasks the creation probe did not see */
};

static int by_identity(const void *a, const void *b)
{
	const struct known *x = a, *y = b;

	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	return (x->coro > y->coro) - (x->coro < y->coro);
}

struct tracker *tracker_new(struct sampler *s)
{
	struct tracker *tr = calloc(1, sizeof(*tr));

	if (tr) {
		tr->s = s;
		tr->next_serial = SERIAL_USER;
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
	*p = (struct proc_tasks){ .pid = pid, .modules = -1 };
	return p;
}

/* The serial of the task at addr running coro: the one the creation probe (or an earlier
 * snapshot) gave it when both maps agree on it, else a new one. */
static uint64_t serial(struct tracker *tr, pid_t pid, uint64_t addr, uint64_t coro)
{
	struct task_id id = { .task = addr };
	uint64_t sn;

	if (!sampler_get_serial(tr->s, pid, addr, &sn) &&
	    !sampler_get_coro_task(tr->s, pid, coro, &id) && id.task == addr && id.serial == sn)
		return sn;
	id.task = addr;
	id.serial = tr->next_serial++;
	sampler_set_serial(tr->s, pid, addr, id.serial);
	sampler_set_coro_task(tr->s, pid, coro, &id);
	return id.serial;
}

/* Still pending, still running the same coroutine, still the same task? */
static int task_alive(struct tracker *tr, const struct py_target *t, const struct known *k)
{
	const struct py_async_layout *a = &t->proc.async;
	uint64_t coro, sn;
	int32_t state;

	return !mem_read(t->pid, k->task + a->task_coro, &coro, sizeof(coro)) &&
	       coro == k->coro && !mem_read(t->pid, k->task + a->fut_state, &state, sizeof(state)) &&
	       state == 0 && !sampler_get_serial(tr->s, t->pid, k->task, &sn) && sn == k->serial;
}

/* Removes a task's entries, each only if it still names that task. */
static void forget_task(struct tracker *tr, pid_t pid, const struct known *k)
{
	struct task_link l;
	struct task_id id;
	uint64_t sn;

	if (!sampler_get_serial(tr->s, pid, k->task, &sn) && sn == k->serial)
		sampler_del_serial(tr->s, pid, k->task);
	if (!sampler_get_coro_task(tr->s, pid, k->coro, &id) && id.serial == k->serial)
		sampler_del_coro_task(tr->s, pid, k->coro);
	if (!sampler_get_link(tr->s, pid, k->task, &l) && l.child_serial == k->serial)
		sampler_del_link(tr->s, pid, k->task);
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
	for (size_t i = 0; i < a.n; i++)
		now[i] = (struct known){ .task = a.v[i].addr,
					 .coro = a.v[i].coro,
					 .serial = serial(tr, t->pid, a.v[i].addr, a.v[i].coro) };
	for (size_t i = 0; i < a.n; i++) {
		struct atask *k = &a.v[i];
		struct task_link l = { .child_serial = now[i].serial,
				       .child_coro = k->coro,
				       .kind = LINK_AWAITER };
		size_t j;

		if (!k->nparents)
			continue; /* keep a creation link, or the last awaiter's */
		for (j = 0; j < a.n && a.v[j].addr != k->parents[0]; j++)
			;
		l.parent = a.v[j].addr;
		l.parent_coro = a.v[j].coro;
		l.parent_serial = now[j].serial;
		sampler_set_link(tr->s, t->pid, k->addr, &l);
	}
	/* tasks missing from this snapshot: their entries go once the task is really done
	 * (a snapshot can miss a task that changes while it is read); links to them stay */
	qsort(now, a.n, sizeof(*now), by_identity);
	nnow = a.n;
	for (size_t j = 0; j < pt->n; j++) {
		if (bsearch(&pt->v[j], now, a.n, sizeof(*now), by_identity))
			continue;
		if (task_alive(tr, t, &pt->v[j]))
			pt->v[kept++] = pt->v[j];
		else
			forget_task(tr, t->pid, &pt->v[j]);
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
		for (size_t j = 0; j < pt->n; j++)
			forget_task(tr, pid, &pt->v[j]);
		free(pt->v);
		*pt = tr->procs[--tr->nprocs];
		return;
	}
}

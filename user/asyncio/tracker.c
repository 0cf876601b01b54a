// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asyncio/atasks.h"
#include "process/memread.h"
#include "asyncio/tasknames.h"
#include "asyncio/threadwork.h"
#include "asyncio/tracker.h"
#include "clock.h"

struct known {
	uint64_t task, coro, serial;
	int awaits; /* it awaits another task of the snapshot */
	int fresh;  /* its coroutine is to be mapped to it, after its link is written */
	int stale;  /* read before it was freed and its address taken: nothing of it written */
};

struct proc_tasks {
	pid_t pid;
	struct known *v;
	size_t n;
	int64_t modules; /* len(sys.modules) when asyncio was last found missing, or -1 */
	struct atasks_cache cache;
	struct py_work work; /* the pools found in its modules (threadwork.h) */
	/* len(sys.modules) when a pool was last found missing (-1: look), and whether the
	 * executor waited for its first item then */
	int64_t work_modules;
	int work_waits;
	uint64_t read_ns; /* when the last snapshot began (CLOCK_MONOTONIC) */
};

struct tracker {
	const struct taskmaps_ops *ops;
	void *ctx;
	struct proc_tasks *procs;
	size_t nprocs;
	uint64_t next_serial; /* for tasks the creation probe did not see */
	uint32_t name_stamps; /* link names copied (their NAME_STAMP generations) */
};

static int by_identity(const void *a, const void *b)
{
	const struct known *x = a, *y = b;

	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	return (x->coro > y->coro) - (x->coro < y->coro);
}

struct tracker *tracker_new_ops(const struct taskmaps_ops *ops, void *ctx)
{
	struct tracker *tr = calloc(1, sizeof(*tr));

	if (tr) {
		tr->ops = ops;
		tr->ctx = ctx;
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
	*p = (struct proc_tasks){ .pid = pid, .modules = -1, .work_modules = -1 };
	return p;
}

/* The serial of the task at addr running coro: the one the creation probe (or an earlier
 * snapshot) gave it when both maps agree on it, else a new one (*fresh: its coroutine is
 * still to be mapped to it). A snapshot takes milliseconds: a task it read may have ended
 * since and a new one, which the creation probe gave a serial, taken its address. Then the
 * address runs another coroutine now, and the maps are the new task's: a serial of its own
 * (*stale), written nowhere. Overwriting the new task's serial hid it from every sample
 * until it ended (no running task found, its waits skipped as another task's). */
static uint64_t serial(struct tracker *tr, const struct py_target *t, uint64_t addr, uint64_t coro,
		       int *fresh, int *stale)
{
	struct task_id id = { .task = addr };
	uint64_t sn, now = 0;
	pid_t pid = t->pid;
	/* serial 0: the mark of a task renamed before it had one (task_set_name) */
	int known = !tr->ops->get_serial(tr->ctx, pid, addr, &sn) && sn;

	if (known && !tr->ops->get_coro_task(tr->ctx, pid, coro, &id) && id.task == addr &&
	    id.serial == sn)
		return sn;
	if (known &&
	    (mem_read(pid, addr + t->proc.async.task_coro, &now, sizeof(now)) || now != coro)) {
		*stale = 1;
		return tr->next_serial++;
	}
	sn = tr->next_serial++;
	tr->ops->set_serial(tr->ctx, pid, addr, sn);
	*fresh = 1;
	return sn;
}

/* Still pending, still running the same coroutine, still the same task? */
static int task_alive(struct tracker *tr, const struct py_target *t, const struct known *k)
{
	const struct py_async_layout *a = &t->proc.async;
	uint64_t coro, sn;
	int32_t state;

	return !mem_read(t->pid, k->task + a->task_coro, &coro, sizeof(coro)) && coro == k->coro &&
	       !mem_read(t->pid, k->task + a->fut_state, &state, sizeof(state)) && state == 0 &&
	       !tr->ops->get_serial(tr->ctx, t->pid, k->task, &sn) && sn == k->serial;
}

/* Removes a task's entries, each only if it still names that task. */
static void forget_task(struct tracker *tr, pid_t pid, const struct known *k)
{
	struct task_link l;
	struct task_id id;
	uint64_t sn;

	if (!tr->ops->get_serial(tr->ctx, pid, k->task, &sn) && sn == k->serial)
		tr->ops->del_serial(tr->ctx, pid, k->task);
	if (!tr->ops->get_coro_task(tr->ctx, pid, k->coro, &id) && id.serial == k->serial)
		tr->ops->del_coro_task(tr->ctx, pid, k->coro);
	if (!tr->ops->get_link(tr->ctx, pid, k->task, &l) && l.child_serial == k->serial)
		tr->ops->del_link(tr->ctx, pid, k->task);
}

/* An awaiter link names the awaiter, as a creation link its creator: once the awaiter is
 * gone (it stopped waiting: a timeout around a shield) the walk names it from the link.
 * A link already there for the same pair is kept as it is. */
static void set_awaiter_link(struct tracker *tr, const struct py_target *t, uint64_t child,
			     struct task_link *l)
{
	struct task_link old;

	if (!tr->ops->get_link(tr->ctx, t->pid, child, &old) && old.kind == LINK_AWAITER &&
	    old.child_serial == l->child_serial && old.child_coro == l->child_coro &&
	    old.parent == l->parent && old.parent_coro == l->parent_coro &&
	    old.parent_serial == l->parent_serial && old.name_kind != NAME_NONE)
		return;
	l->name_obj = atasks_copy_name(t, l->parent, &l->name_kind, l->name);
	if (l->name_kind == NAME_NONE && l->name_obj && tr->ops->set_name) {
		struct name_ent e;

		/* too long for the link: where the walk keeps such names, for this awaiter */
		if (!name_ent_read(t, l->name_obj, &e)) {
			/* stamped (NAME_STAMP): read with no watch of the task's renames, it is
			 * this link's alone; slot 3, the walk's programs use 0 to 2 */
			e.serial = l->parent_serial;
			e.gen = NAME_STAMP_OF(3, 0, tr->name_stamps++);
			if (!tr->ops->set_name(tr->ctx, t->pid, l->parent, &e)) {
				l->name_kind = NAME_CACHED;
				memcpy(l->name, &e.gen, sizeof(e.gen));
			}
		}
	}
	tr->ops->set_link(tr->ctx, t->pid, child, l);
}

/* Looks for the pools pt lacks, when something was imported since it last looked or the
 * executor waited for its first item (which imports nothing): a search reads a few
 * modules' dicts and code objects, too much for every snapshot of every process. */
static void find_work(struct tracker *tr, struct proc_tasks *pt, const struct py_target *t)
{
	struct py_work w = pt->work;
	struct objread r;
	int64_t modules = -1;
	int ret;

	if (!objread_init(&r, t) && obj_modules_count(&r, &modules))
		modules = -1;
	if (modules >= 0 && modules == pt->work_modules && !pt->work_waits)
		return;
	ret = threadwork_find(t, &w);
	if (ret < 0)
		return;
	pt->work_modules = modules;
	pt->work_waits = ret > 0;
	if (memcmp(&w, &pt->work, sizeof(w)) && !tr->ops->set_work(tr->ctx, t->pid, &w))
		pt->work = w;
	else if (memcmp(&w, &pt->work, sizeof(w)))
		pt->work_modules = -1; /* not written: again at the next snapshot */
}

int tracker_refresh(struct tracker *tr, const struct py_target *t, char *why, size_t len)
{
	struct proc_tasks *pt = proc(tr, t->pid);
	struct known *now;
	struct objread r;
	struct atasks a;
	int64_t modules;
	size_t nnow, kept = 0;
	uint64_t read_ns;
	int ret;

	if (!pt) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	/* until asyncio is imported, look for it only when something new was imported */
	if (pt->modules >= 0 && !objread_init(&r, t) && !obj_modules_count(&r, &modules) &&
	    modules == pt->modules)
		return 0;
	read_ns = mono_ns();
	if (atasks_snapshot(t, ATASKS_LINKS, &a, &pt->cache, why, len))
		return -1;
	pt->read_ns = read_ns;
	pt->modules = -1;
	if (!a.asyncio && !objread_init(&r, t) && obj_modules_count(&r, &pt->modules))
		pt->modules = -1;
	/* pools are imported, and make their first item, any time */
	if (a.asyncio && tr->ops->set_work &&
	    (!pt->work.code[WORK_ANYIO] || !pt->work.code[WORK_POOL]))
		find_work(tr, pt, t);
	now = calloc(a.n ? a.n : 1, sizeof(*now));
	if (!now) {
		atasks_free(&a);
		snprintf(why, len, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < a.n; i++) {
		now[i] = (struct known){ .task = a.v[i].addr, .coro = a.v[i].coro };
		now[i].serial =
			serial(tr, t, a.v[i].addr, a.v[i].coro, &now[i].fresh, &now[i].stale);
	}
	for (size_t i = 0; i < a.n; i++) {
		struct atask *k = &a.v[i];
		struct task_link l = { .child_serial = now[i].serial,
				       .child_coro = k->coro,
				       .kind = LINK_AWAITER };
		struct atask *p;
		size_t j;

		if (!k->nparents || now[i].stale)
			continue; /* keep a creation link, or the last awaiter's */
		/* awaiters are tasks of the snapshot (finish() keeps no other) */
		for (uint32_t q = 1; q < k->nparents; q++)
			if ((p = atasks_find(&a, k->parents[q])))
				now[p - a.v].awaits = 1;
		if (!(p = atasks_find(&a, k->parents[0])))
			continue;
		j = (size_t)(p - a.v);
		now[j].awaits = 1;
		if (now[j].stale)
			continue;
		l.parent = a.v[j].addr;
		l.parent_coro = a.v[j].coro;
		l.parent_serial = now[j].serial;
		set_awaiter_link(tr, t, k->addr, &l);
	}
	/* a sample finds a task by its coroutine: mapped only now, a new task is never seen
	 * without the awaiter this snapshot links it to */
	for (size_t i = 0; i < a.n; i++) {
		struct task_id id = { .task = now[i].task, .serial = now[i].serial };

		if (now[i].fresh)
			tr->ops->set_coro_task(tr->ctx, t->pid, now[i].coro, &id);
		now[i].fresh = 0;
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

size_t tracker_tasks(struct tracker *tr, pid_t pid,
		     void (*fn)(void *ctx, uint64_t task, uint64_t coro, uint64_t serial, int leaf),
		     void *ctx, uint64_t *read_ns)
{
	size_t n = 0;

	*read_ns = 0;
	for (size_t i = 0; i < tr->nprocs; i++) {
		struct proc_tasks *pt = &tr->procs[i];

		if (pt->pid != pid)
			continue;
		*read_ns = pt->read_ns;
		for (size_t j = 0; j < pt->n; j++) {
			fn(ctx, pt->v[j].task, pt->v[j].coro, pt->v[j].serial, !pt->v[j].awaits);
			n++;
		}
	}
	return n;
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

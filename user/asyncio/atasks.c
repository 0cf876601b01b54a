// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asyncio/atasks.h"
#include "process/procmaps.h"
#include "cpython/aiodebug.h"
#include "cpython/py_layouts.h"
#include "asyncio/tasknames.h"
#include "cpython/vmwalk.h"

/* tasks a snapshot takes at most; more fail it with -E2BIG, never a silent cut */
#define MAX_SNAPSHOT_TASKS (1u << 21)
#define MAX_AWAITER_SLOTS  (1u << 18) /* slots of a 3.14+ task's set of awaiters */
#define MAX_CALLBACKS	   64
#define MAX_REACH	   64 /* objects examined per task while looking for its awaiters */
#define MAX_DEPTH	   6
#define FUT_PENDING	   0

struct reach {
	const struct objread *r;
	struct atasks *a;
	struct atask *child;
	uint64_t seen[MAX_REACH];
	size_t nseen;
};

/* -ENOMEM also marks the snapshot, whose reader then fails rather than drop an awaiter */
static int add_parent(struct atasks *a, struct atask *child, uint64_t parent)
{
	if (parent == child->addr)
		return 0;
	for (uint32_t i = 0; i < child->nparents; i++)
		if (child->parents[i] == parent)
			return 0;
	if (child->nparents == child->parents_cap) {
		uint32_t cap = child->parents_cap ? child->parents_cap * 2 : 2;
		uint64_t *v = realloc(child->parents, cap * sizeof(*v));

		if (!v) {
			a->nomem = 1;
			return -ENOMEM;
		}
		child->parents = v;
		child->parents_cap = cap;
	}
	child->parents[child->nparents++] = parent;
	return 0;
}

static int seen(struct reach *x, uint64_t obj)
{
	for (size_t i = 0; i < x->nseen; i++)
		if (x->seen[i] == obj)
			return 1;
	if (x->nseen == MAX_REACH)
		return 1;
	x->seen[x->nseen++] = obj;
	return 0;
}

static void reach_callbacks(struct reach *x, uint64_t fut, int depth);

/* A future that is not a task: whoever its completion wakes awaits the child. */
static void reach_future(struct reach *x, uint64_t obj, int depth)
{
	if (obj_isinstance(x->r, obj, "_asyncio.Task") == 1) {
		/* a task in a callback's reach is a sibling or the child, never an awaiter */
		return;
	}
	if (obj_isinstance(x->r, obj, "_asyncio.Future") == 1) {
		reach_callbacks(x, obj, depth + 1);
		return;
	}
	/* as_completed: completions go through a Queue whose getter futures the iterating
	 * task awaits */
	if (obj_isinstance(x->r, obj, "Queue") == 1) {
		uint64_t getters, items[16];
		size_t n = 0;

		if (!obj_getattr(x->r, obj, "_getters", &getters) &&
		    !obj_deque_items(x->r, getters, items, 16, &n))
			for (size_t i = 0; i < n; i++)
				reach_future(x, items[i], depth + 1);
	}
}

/* One done-callback of a future: which tasks does calling it wake, directly or not? */
static void reach_callback(struct reach *x, uint64_t cb, int depth)
{
	const struct objread *r = x->r;
	const struct py_objmodel *m = r->m;
	uint64_t type, v, vals[16];
	char tname[64];
	size_t n = 0;

	if (!cb || depth > MAX_DEPTH || seen(x, cb) || obj_type(r, cb, &type) ||
	    obj_type_name(r, type, tname, sizeof(tname)))
		return;
	if (!strcmp(tname, "TaskWakeupMethWrapper")) { /* 3.8-3.9 */
		if (!obj_ptr(r, cb + m->async.wakeup_task, &v))
			add_parent(x->a, x->child, v);
	} else if (!strcmp(tname, "builtin_function_or_method")) {
		uint64_t ml, name;
		char buf[16] = {};

		/* 3.10+: a PyCFunction of task_wakeup bound to the awaiting task */
		if (!obj_ptr(r, cb + m->cfunc_ml, &ml) && ml &&
		    !obj_ptr(r, ml + m->methoddef_name, &name) && name &&
		    !mem_read(r->pid, name, buf, 12) && !memcmp(buf, "task_wakeup", 12) &&
		    !obj_ptr(r, cb + m->cfunc_self, &v))
			add_parent(x->a, x->child, v);
	} else if (!strcmp(tname, "function")) {
		/* gather's _done_callback, shield's _inner_done_callback, wait's and
		 * as_completed's _on_completion: the future they complete is in a cell */
		if (!obj_closure(r, cb, vals, 16, &n))
			for (size_t i = 0; i < n; i++)
				if (vals[i])
					reach_future(x, vals[i], depth);
	} else if (!strcmp(tname, "method")) {
		uint64_t self;

		if (obj_ptr(r, cb + m->method_self, &self) || !self)
			return;
		/* TaskGroup._on_task_done: the group knows its parent task */
		if (obj_isinstance(r, self, "TaskGroup") == 1 &&
		    !obj_getattr(r, self, "_parent_task", &v) && v)
			add_parent(x->a, x->child, v);
		/* 3.13 as_completed: _AsCompletedIterator._handle_completion */
		else if (!obj_getattr(r, self, "_done", &v) && v)
			reach_future(x, v, depth);
	} else if (!strcmp(tname, "functools.partial")) {
		/* wait_for before 3.12: partial(_release_waiter, waiter) */
		if (!obj_ptr(r, cb + m->partial_args, &v) && v && !obj_items(r, v, vals, 16, &n))
			for (size_t i = 0; i < n; i++)
				reach_future(x, vals[i], depth);
	}
}

static void reach_callbacks(struct reach *x, uint64_t fut, int depth)
{
	const struct py_async_layout *a = &x->r->m->async;
	uint64_t cb0, list, items[MAX_CALLBACKS], pair[2];
	size_t n = 0;

	if (depth > MAX_DEPTH)
		return;
	if (!obj_ptr(x->r, fut + a->fut_callback0, &cb0) && cb0)
		reach_callback(x, cb0, depth);
	if (obj_ptr(x->r, fut + a->fut_callbacks, &list) || !list ||
	    obj_items(x->r, list, items, MAX_CALLBACKS, &n))
		return;
	/* entries are (callback, context) tuples */
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		if (!obj_items(x->r, items[i], pair, 2, &k) && k >= 1)
			reach_callback(x, pair[0], depth);
	}
}

/* The index: open addressing over a power-of-two table of positions in a->v plus one
 * (0: empty), at most half full. */
static size_t index_slot(uint64_t addr, size_t cap)
{
	/* task addresses differ in their middle bits: a multiplicative hash spreads them */
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static void index_put(struct atasks *a, size_t pos)
{
	size_t i = index_slot(a->v[pos].addr, a->index_cap);

	while (a->index[i])
		i = (i + 1) & (a->index_cap - 1);
	a->index[i] = (uint32_t)pos + 1;
}

/* Indexes a->v afresh, after it was added to, compacted or sorted; without memory the
 * index is dropped and lookups search a->v. */
static void index_rebuild(struct atasks *a)
{
	size_t cap = 1024;

	while (cap < a->n * 2)
		cap *= 2;
	if (cap != a->index_cap) {
		free(a->index);
		a->index_cap = 0;
		if (!(a->index = malloc(cap * sizeof(*a->index))))
			return;
		a->index_cap = cap;
	}
	memset(a->index, 0, cap * sizeof(*a->index));
	for (size_t i = 0; i < a->n; i++)
		index_put(a, i);
}

static int add_task(struct atasks *a, uint64_t addr)
{
	if (!addr || atasks_find(a, addr))
		return 0;
	if (a->n == MAX_SNAPSHOT_TASKS)
		return -E2BIG;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct atask *v = realloc(a->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	memset(&a->v[a->n], 0, sizeof(a->v[0]));
	a->v[a->n++].addr = addr;
	if (a->index && a->n * 2 <= a->index_cap)
		index_put(a, a->n - 1);
	else
		index_rebuild(a);
	return 0;
}

struct atask *atasks_find(struct atasks *a, uint64_t addr)
{
	if (!a->index) {
		for (size_t i = 0; i < a->n; i++)
			if (a->v[i].addr == addr)
				return &a->v[i];
		return NULL;
	}
	for (size_t i = index_slot(addr, a->index_cap); a->index[i];
	     i = (i + 1) & (a->index_cap - 1)) {
		struct atask *k = &a->v[a->index[i] - 1];

		if (k->addr == addr)
			return k;
	}
	return NULL;
}

/* Tasks a WeakSet (or set) of the _asyncio module refers to. */
static int collect(const struct objread *r, uint64_t mod, const char *name, struct atasks *a)
{
	uint64_t obj, set, *items;
	size_t n = 0;
	int weak, ret;

	if (obj_module_attr(r, mod, name, &obj))
		return 0;
	weak = obj_isinstance(r, obj, "WeakSet") == 1;
	if (weak && obj_getattr(r, obj, "data", &set))
		return -EINVAL;
	/* a set of MAX_SNAPSHOT_TASKS keys may have up to four times as many slots */
	ret = obj_set_keys(r, weak ? set : obj, (size_t)MAX_SNAPSHOT_TASKS * 4, &items, &n);
	for (size_t i = 0; !ret && i < n; i++) {
		uint64_t task = items[i];

		if (weak && obj_weakref_target(r, items[i], &task))
			continue;
		if (obj_isinstance(r, task, "_asyncio.Task") == 1)
			ret = add_task(a, task);
	}
	free(items);
	return ret;
}

/* Why a listing failed, for the user: a cap hit is said as such. */
static void list_failed(const struct py_target *t, int ret, char *why, size_t len)
{
	if (ret == -E2BIG)
		snprintf(why, len,
			 "pid %d: cannot list asyncio tasks: more than %u of them (the most a "
			 "snapshot takes)",
			 t->pid, MAX_SNAPSHOT_TASKS);
	else
		snprintf(why, len, "pid %d: cannot list asyncio tasks: %s", t->pid, strerror(-ret));
}

static int collect_current(const struct objread *r, uint64_t mod, struct atasks *a)
{
	uint64_t dict, tasks[64];
	size_t n = 0;
	int ret = 0;

	if (obj_module_attr(r, mod, "_current_tasks", &dict) ||
	    obj_dict_items(r, dict, NULL, tasks, 64, &n))
		return 0;
	for (size_t i = 0; !ret && i < n; i++)
		if (obj_isinstance(r, tasks[i], "_asyncio.Task") == 1)
			ret = add_task(a, tasks[i]);
	return ret;
}

/* The task's whole suspended coroutine chain, one walker step at a time: the walker
 * itself stops at a sample's bound, and a chain may be thousands of coroutines deep. */
static int walk_chain(const struct py_target *t, struct atask *k)
{
	struct frame_rec one[1];
	struct pw_scratch s;
	struct pw_coro w = { .p = &t->proc, .out = one, .s = &s, .gen = k->coro, .max = 1 };
	uint32_t cap = 0, steps = 0;

	pw_scratch_reset(&s);
	while (w.gen && steps++ < ATASK_WALK_MAX) {
		w.n = 0;
		pw_coro_step(0, &w);
		if (!w.n)
			break;
		if (k->nframes == ATASK_MAX_FRAMES) {
			k->frames_cut++;
			continue;
		}
		if (k->nframes == cap) {
			struct frame_rec *v;

			cap = cap ? cap * 2 : 16;
			if (!(v = realloc(k->frames, cap * sizeof(*v))))
				return -ENOMEM;
			k->frames = v;
		}
		k->frames[k->nframes++] = one[0];
	}
	if (w.gen)
		w.flags |= SAMPLE_TRUNCATED;
	k->awaited = w.awaited;
	k->flags = w.flags;
	return 1;
}

/* Two walks in a row that agree (the frames' code objects, what the chain awaits, its
 * flags), at most ATASK_WALK_TRIES: the target runs while it is read, and a chain read
 * as a task's thread moves on can be torn (a frame freed and reused under the walk
 * leads into another coroutine's). Never two alike: the last, marked SAMPLE_READ_ERR. */
static int walk_stable(const struct py_target *t, struct atask *k)
{
	struct atask prev = { 0 };
	int ret = walk_chain(t, k);

	for (int i = 1; ret > 0 && i < ATASK_WALK_TRIES; i++) {
		bool same;

		free(prev.frames);
		prev = *k;
		k->frames = NULL;
		k->nframes = k->frames_cut = 0;
		if ((ret = walk_chain(t, k)) <= 0)
			break;
		same = prev.nframes == k->nframes && prev.frames_cut == k->frames_cut &&
		       prev.flags == k->flags && prev.awaited == k->awaited;
		for (uint32_t j = 0; same && j < k->nframes; j++)
			same = prev.frames[j].code == k->frames[j].code &&
			       prev.frames[j].fp == k->frames[j].fp;
		if (same) {
			free(prev.frames);
			return ret;
		}
	}
	free(prev.frames);
	if (ret > 0)
		k->flags |= SAMPLE_READ_ERR;
	return ret;
}

/* Reads a task; 1 if it is pending and kept, 0 if done, <0 if unreadable. */
static int read_task(const struct py_target *t, unsigned int what, struct atask *k)
{
	const struct py_async_layout *a = &t->proc.async;
	struct task_rec rec = {};
	uint64_t name_obj;
	char name[TASK_NAME_TEXT];
	int32_t state;

	if (mem_read(t->pid, k->addr + a->fut_state, &state, sizeof(state)) ||
	    mem_read(t->pid, k->addr + a->task_coro, &k->coro, sizeof(k->coro)))
		return -EFAULT;
	if (state != FUT_PENDING)
		return 0;
	if (!(what & ATASKS_DETAILS))
		return 1;
	if (mem_read(t->pid, k->addr + a->task_name, &name_obj, sizeof(name_obj)))
		name_obj = 0;
	rec.name_obj = name_obj;
	task_name(t, &rec, name, sizeof(name));
	k->name = strdup(name);
	if (!k->name)
		return -ENOMEM;
	vmwalk_target(t->pid);
	return walk_stable(t, k);
}

uint64_t atasks_copy_name(const struct py_target *t, uint64_t task, __u32 *kind, char *name)
{
	struct pw_scratch s = { 0 };

	vmwalk_target(t->pid);
	return pw_copy_name(NULL, &t->proc, &s, t->pid, task, 0, kind, name);
}

static int by_name(const void *x, const void *y)
{
	const struct atask *a = x, *b = y;

	return strverscmp(a->name ? a->name : "", b->name ? b->name : "");
}

static void read_tasks(const struct py_target *t, unsigned int what, struct atasks *a);
static void finish(struct atasks *a, unsigned int what);
static int snapshot314(const struct py_target *t, unsigned int what, struct atasks *a,
		       struct atasks_cache *c, char *why, size_t len);

static int snapshot(const struct py_target *t, unsigned int what, struct atasks *a,
		    struct atasks_cache *c, char *why, size_t len, struct obj_pages *pages)
{
	struct obj_types types = { 0 };
	struct objread r;
	uint64_t mod, fut_type, task_type;
	int ret;

	memset(a, 0, sizeof(*a));
	if (objread_init(&r, t)) {
		if (t->om_why[0])
			snprintf(why, len, "pid %d: %s", t->pid, t->om_why);
		else
			snprintf(why, len, "pid %d: no object model for Python %s", t->pid,
				 t->version_str);
		return -1;
	}
	r.types = &types;
	r.pages = pages;
	ret = obj_module(&r, "_asyncio", &mod);
	/* asyncio not imported, or sys.modules not made yet (a process caught starting) */
	if (ret == -ENOENT || ret == -EAGAIN)
		return 0;
	a->asyncio = 1;
	if (ret) {
		snprintf(why, len, "pid %d: cannot read sys.modules: %s", t->pid, strerror(-ret));
		return -1;
	}
	if (obj_module_attr(&r, mod, "Future", &fut_type) ||
	    obj_module_attr(&r, mod, "Task", &task_type) ||
	    py_objmodel_check_asyncio(t->om, t->pid, fut_type, task_type, why, len))
		return -1;
	if (t->task_lists)
		return snapshot314(t, what, a, c, why, len);
	if ((ret = collect(&r, mod, "_all_tasks", a)) ||
	    (ret = collect(&r, mod, "_scheduled_tasks", a)) ||
	    (ret = collect(&r, mod, "_eager_tasks", a)) || (ret = collect_current(&r, mod, a))) {
		list_failed(t, ret, why, len);
		atasks_free(a);
		return -1;
	}
	read_tasks(t, what, a);
	for (size_t i = 0; i < a->n; i++) {
		struct reach x = { .r = &r, .a = a, .child = &a->v[i] };

		reach_callbacks(&x, a->v[i].addr, 0);
	}
	finish(a, what);
	return 0;
}

int atasks_snapshot(const struct py_target *t, unsigned int what, struct atasks *a,
		    struct atasks_cache *c, char *why, size_t len)
{
	/* without memory for them, the reads go to the target one by one */
	struct obj_pages *pages = obj_pages_new();
	int ret = snapshot(t, what, a, c, why, len, pages);

	obj_pages_free(pages);
	if (!ret && a->nomem) {
		snprintf(why, len, "pid %d: out of memory reading its tasks", t->pid);
		atasks_free(a);
		return -1;
	}
	return ret;
}

/* Keeps the tasks that are pending, reading what is asked of each. */
static void read_tasks(const struct py_target *t, unsigned int what, struct atasks *a)
{
	size_t kept = 0;

	for (size_t i = 0; i < a->n; i++) {
		int st = read_task(t, what, &a->v[i]);

		if (st == -ENOMEM)
			a->nomem = 1;
		else if (st < 0)
			a->unreadable++;
		if (st == 1) {
			a->v[kept++] = a->v[i];
		} else {
			free(a->v[i].name);
			free(a->v[i].frames);
			free(a->v[i].parents);
		}
	}
	a->n = kept;
	index_rebuild(a);
}

static void finish(struct atasks *a, unsigned int what)
{
	/* the lists are hash-ordered: name order makes the output stable */
	if (what & ATASKS_DETAILS)
		qsort(a->v, a->n, sizeof(*a->v), by_name);
	index_rebuild(a);
	/* keep only awaiters that are tasks of this snapshot */
	for (size_t i = 0; i < a->n; i++) {
		struct atask *k = &a->v[i];
		uint32_t np = 0;

		for (uint32_t j = 0; j < k->nparents; j++)
			if (atasks_find(a, k->parents[j]))
				k->parents[np++] = k->parents[j];
		k->nparents = np;
	}
}

void atasks_free(struct atasks *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->v[i].name);
		free(a->v[i].frames);
		free(a->v[i].parents);
	}
	free(a->v);
	free(a->index);
	memset(a, 0, sizeof(*a));
}

enum task_fn { TASK_INIT, TASK_DEALLOC, TASK_SET_NAME };

#define METH_O	       0x0008 /* PyMethodDef.ml_flags: f(self, arg) */
#define METHODDEF_SIZE 32     /* PyMethodDef: ml_name, ml_meth, ml_flags, ml_doc */
#define TASK_METHODS   64     /* more than _asyncio.Task has in any version */

/* The function of the _asyncio.Task method called name, a METH_O one (self, arg). */
static int task_method(const struct objread *r, uint64_t type, const char *name, uint64_t *fn)
{
	uint64_t defs, def[METHODDEF_SIZE / 8];
	char buf[32];

	if (obj_ptr(r, type + r->m->type_methods, &defs) || !defs)
		return -ENOENT;
	for (int i = 0; i < TASK_METHODS; i++, defs += METHODDEF_SIZE) {
		if (mem_read(r->pid, defs, def, sizeof(def)))
			return -EFAULT;
		if (!def[0])
			return -ENOENT;
		if (mem_read(r->pid, def[0], buf, sizeof(buf)) ||
		    memcmp(buf, name, strlen(name) + 1))
			continue;
		if ((uint32_t)def[2] != METH_O)
			return -ENOTSUP;
		*fn = def[1];
		return 0;
	}
	return -ENOENT;
}

/* Where the _asyncio.Task type's tp_init, tp_dealloc or set_name is, for a uprobe. */
static int task_fn(const struct py_target *t, enum task_fn which, char *path, size_t len,
		   uint64_t *offset)
{
	const struct procmap *pm;
	struct procmaps maps;
	struct objread r;
	uint64_t mod, type, fn;
	int ret;

	if (objread_init(&r, t))
		return -ENOTSUP;
	if ((ret = obj_module(&r, "_asyncio", &mod)) ||
	    (ret = obj_module_attr(&r, mod, "Task", &type)))
		return ret;
	if (which == TASK_SET_NAME)
		ret = task_method(&r, type, "set_name", &fn);
	else
		ret = obj_ptr(&r,
			      type + (which == TASK_DEALLOC ? r.m->type_dealloc : r.m->type_init),
			      &fn);
	if (ret || (ret = procmaps_read(t->pid, &maps)))
		return ret;
	pm = procmaps_find(&maps, fn);
	if (!pm || !strchr(pm->perms, 'x'))
		ret = -ENOENT;
	else if (!(ret = procmap_file(t->pid, pm, path, len)))
		*offset = fn - pm->start + pm->offset;
	procmaps_free(&maps);
	return ret;
}

int atasks_task_init(const struct py_target *t, char *path, size_t len, uint64_t *offset)
{
	return task_fn(t, TASK_INIT, path, len, offset);
}

int atasks_task_dealloc(const struct py_target *t, char *path, size_t len, uint64_t *offset)
{
	return task_fn(t, TASK_DEALLOC, path, len, offset);
}

int atasks_task_set_name(const struct py_target *t, char *path, size_t len, uint64_t *offset)
{
	return task_fn(t, TASK_SET_NAME, path, len, offset);
}

int atasks_add_origins(struct atasks *a, const struct py_target *t,
		       int (*get_link)(void *ctx, uint64_t child, uint64_t *serial,
				       struct task_link *out),
		       void *ctx)
{
	size_t n = a->n;

	for (size_t i = 0; i < n; i++) {
		struct task_rec rec = {};
		struct task_link l;
		struct atask *p;
		uint64_t serial;
		char name[TASK_NAME_TEXT];
		int ret;

		if (a->v[i].nparents || get_link(ctx, a->v[i].addr, &serial, &l) ||
		    l.kind != LINK_ORIGIN || l.child_serial != serial ||
		    l.child_coro != a->v[i].coro)
			continue;
		/* the parent's address may hold a newer task by now */
		p = atasks_find(a, l.parent);
		if (p && (p->coro != l.parent_coro || get_link(ctx, l.parent, &serial, NULL) ||
			  serial != l.parent_serial))
			p = NULL;
		if (!p) {
			/* an ended creator is named by its serial: its address may be taken
			 * (bit 63 is never set in a user address) */
			uint64_t key = (l.parent_serial ? l.parent_serial : l.parent) | 1ULL << 63;

			p = atasks_find(a, key);
			if (p)
				goto link;
			if ((ret = add_task(a, key)))
				return ret;
			p = &a->v[a->n - 1];
			p->coro = l.parent_coro;
			p->ended = 1;
			rec.name_kind = l.name_kind;
			rec.name_obj = l.name_obj;
			memcpy(rec.name, l.name, sizeof(rec.name));
			task_name(t, &rec, name, sizeof(name));
			p->name = strdup(name);
			if (!p->name)
				return -ENOMEM;
		}
	link:
		if ((ret = add_parent(a, &a->v[i], p->addr)))
			return ret;
	}
	return 0;
}

/* 3.14+: a pending task sits on its thread's list (its interpreter's once the thread is
 * gone), and names its awaiters itself in fut_awaited_by: one object, or a set of them. */
static int list_tasks(pid_t pid, uint64_t head, const struct aiodebug *o, struct atasks *a)
{
	uint64_t node = 0;
	int ret;

	if (mem_read(pid, head + o->llist_next, &node, sizeof(node)))
		return -EFAULT;
	for (size_t n = 0; node && node != head; n++) {
		/* more nodes than tasks a snapshot takes: add_task said -E2BIG first unless
		 * the list loops on nodes already added */
		if (n == MAX_SNAPSHOT_TASKS)
			return -ELOOP;
		if ((ret = add_task(a, node - o->task_node)))
			return ret;
		if (mem_read(pid, node + o->llist_next, &node, sizeof(node)))
			return -EFAULT;
	}
	return 0;
}

static void awaiters314(pid_t pid, const struct aiodebug *o, struct atasks *a, struct atask *k)
{
	uint64_t by = 0, table = 0, mask = 0, key;
	char is_set = 0;

	if (mem_read(pid, k->addr + o->task_awaited_by, &by, sizeof(by)) || !by ||
	    mem_read(pid, k->addr + o->task_awaited_by_is_set, &is_set, 1))
		return;
	if (!is_set) {
		add_parent(a, k, by);
		return;
	}
	/* set entries are (key, hash); the caller keeps only keys that are tasks */
	if (mem_read(pid, by + o->set_table, &table, sizeof(table)) ||
	    mem_read(pid, by + o->set_mask, &mask, sizeof(mask)) || mask >= MAX_AWAITER_SLOTS)
		return;
	for (uint64_t i = 0; i <= mask && !a->nomem; i++)
		if (!mem_read(pid, table + i * 16, &key, sizeof(key)) && key)
			add_parent(a, k, key);
}

static int snapshot314(const struct py_target *t, unsigned int what, struct atasks *a,
		       struct atasks_cache *c, char *why, size_t len)
{
	const struct py_layout *l = &t->proc.layout;
	struct aiodebug o;
	uint64_t interp = 0, ts;
	int ret;

	if (c && c->has314) {
		o = c->aio;
	} else if (aiodebug_read(t, &o, why, len)) {
		a->asyncio = 0;
		return -1;
	} else if (c) {
		c->aio = o;
		c->has314 = true;
	}
	ret = mem_read(t->pid, t->proc.runtime + l->runtime_interp_head, &interp, sizeof(interp));
	for (int ni = 0; !ret && interp && ni < MAX_THREADS; ni++) {
		ret = list_tasks(t->pid, interp + o.interp_tasks_head, &o, a);
		ts = 0;
		if (!ret && mem_read(t->pid, interp + l->interp_tstate_head, &ts, sizeof(ts)))
			ret = -EFAULT;
		for (int nt = 0; !ret && ts && nt < MAX_THREADS; nt++) {
			ret = list_tasks(t->pid, ts + o.tstate_tasks_head, &o, a);
			if (!ret && mem_read(t->pid, ts + l->tstate_next, &ts, sizeof(ts)))
				ret = -EFAULT;
		}
		if (ret || mem_read(t->pid, interp + l->interp_next, &interp, sizeof(interp)))
			break;
	}
	if (ret) {
		list_failed(t, ret, why, len);
		atasks_free(a);
		return -1;
	}
	read_tasks(t, what, a);
	for (size_t i = 0; i < a->n; i++)
		awaiters314(t->pid, &o, a, &a->v[i]);
	finish(a, what);
	return 0;
}

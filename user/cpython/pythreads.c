// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Python's names of the threads: threading._active maps each thread's ident
 * (pthread_self(), PyThreadState.thread_id) to its Thread, which holds _native_id (the
 * kernel tid, 3.8+) and _name. A process's _active is read whole at most once a second,
 * or sooner when a thread not in the last read shows up (a new thread), and each sampled
 * thread is resolved against the last read by its tid, checked by the ident of its
 * sample's thread state: a tid or a thread state reused by a new thread is not taken for
 * the old one.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hash.h"
#include "process/memread.h"
#include "cpython/objread.h"
#include "cpython/pythreads.h"
#include "clock.h"

#define MAX_ACTIVE  4096 /* threads of one _active read */
#define NEW_THREAD  0.05 /* a thread unknown to a read this old reads _active again */
#define RETRY	    0.1	 /* after a failed read, the next is tried this much later */
#define THREAD_IDLE 10.0 /* a thread not sampled for this long is forgotten */

struct pt_entry { /* one Thread of a read of _active */
	uint64_t ident;
	int64_t native_id;
	char *name; /* NULL: a _DummyThread (no name of Python's), or err */
	bool err;   /* its name could not be read */
};

struct pt_thread {	 /* one sampled thread */
	pid_t tid;	 /* 0: empty slot */
	uint64_t tstate; /* its thread state: another one is another thread */
	uint64_t ident;	 /* the thread state's thread_id, 0 if it could not be read */
	uint32_t gen;	 /* the read of _active it was resolved against, 0 none */
	bool failed;	 /* no name for a failed read */
	double first;	 /* when it was first sampled */
	double seen;
	char *name; /* Python's, NULL if none */
};

struct pt_proc {
	pid_t pid;
	uint64_t runtime; /* of the image read: another one (exec) starts over */
	uint32_t gen;	  /* reads of _active that succeeded, the last one's entries in e */
	bool no_model;	  /* no object model to read it with: never read */
	double read_at, failed_at; /* the last read that succeeded, that failed */
	struct pt_entry *e;
	size_t n;
	struct pt_thread *th; /* open addressing by tid */
	size_t cap, used;
};

struct pythreads {
	struct pt_proc *procs;
	size_t nprocs, cap;
	struct obj_types *types; /* for one read */
	struct pythreads_stats st;
};

struct pythreads *pythreads_new(void)
{
	struct pythreads *pt = calloc(1, sizeof(*pt));

	if (pt && !(pt->types = malloc(sizeof(*pt->types)))) {
		free(pt);
		return NULL;
	}
	return pt;
}

static void free_entries(struct pt_proc *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->e[i].name);
	free(p->e);
	p->e = NULL;
	p->n = 0;
}

static void free_proc(struct pt_proc *p)
{
	free_entries(p);
	for (size_t i = 0; i < p->cap; i++)
		free(p->th[i].name);
	free(p->th);
	memset(p, 0, sizeof(*p));
}

void pythreads_free(struct pythreads *pt)
{
	if (!pt)
		return;
	for (size_t i = 0; i < pt->nprocs; i++)
		free_proc(&pt->procs[i]);
	free(pt->procs);
	free(pt->types);
	free(pt);
}

void pythreads_forget(struct pythreads *pt, pid_t pid)
{
	for (size_t i = 0; i < pt->nprocs; i++)
		if (pt->procs[i].pid == pid) {
			free_proc(&pt->procs[i]);
			pt->procs[i] = pt->procs[--pt->nprocs];
			return;
		}
}

void pythreads_stats(const struct pythreads *pt, struct pythreads_stats *st)
{
	*st = pt->st;
}

static struct pt_proc *proc_of(struct pythreads *pt, const struct py_target *t)
{
	struct pt_proc *p = NULL;

	for (size_t i = 0; i < pt->nprocs && !p; i++)
		if (pt->procs[i].pid == t->pid)
			p = &pt->procs[i];
	if (p && p->runtime == t->proc.runtime)
		return p;
	if (p) {
		free_proc(p);
	} else {
		if (pt->nprocs == pt->cap) {
			size_t cap = pt->cap ? pt->cap * 2 : 16;
			struct pt_proc *n = realloc(pt->procs, cap * sizeof(*n));

			if (!n)
				return NULL;
			pt->procs = n;
			pt->cap = cap;
		}
		p = &pt->procs[pt->nprocs++];
		memset(p, 0, sizeof(*p));
	}
	p->pid = t->pid;
	p->runtime = t->proc.runtime;
	return p;
}

static void fail(struct pythreads *pt, pid_t pid, const char *what, int err)
{
	if (!pt->st.first_why[0])
		snprintf(pt->st.first_why, sizeof(pt->st.first_why), "pid %d: %s%s%s", (int)pid,
			 what, err ? ": " : "", err ? strerror(err < 0 ? -err : err) : "");
}

/* s cut to PYTHREAD_NAME_CHARS characters (UTF-8), the last one "…"; s is freed. */
static char *cap_name(char *s)
{
	size_t chars = 0, i, keep = 0;
	char *out;

	for (i = 0; s[i]; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && ++chars == PYTHREAD_NAME_CHARS)
			keep = i;
	if (chars <= PYTHREAD_NAME_CHARS)
		return s;
	out = malloc(keep + sizeof("…"));
	if (out) {
		memcpy(out, s, keep);
		memcpy(out + keep, "…", sizeof("…"));
	}
	free(s);
	return out;
}

/* A Thread's _name. The pointer, read through the read's pages, is read again from memory
 * after the text (read from memory): a thread renamed meanwhile may have freed the str,
 * and its memory may hold another object's text by then. */
static int thread_name(const struct objread *r, uint64_t thread, char **out)
{
	uint64_t name, at, again;
	int ret = obj_getattr_at(r, thread, "_name", &name, &at);

	*out = NULL;
	if (!ret)
		ret = obj_str(r, name, out);
	if (!ret && (ret = mem_read(r->pid, at, &again, sizeof(again))) == 0 && again != name)
		ret = -EAGAIN;
	if (ret) {
		free(*out);
		*out = NULL;
		return ret;
	}
	*out = cap_name(*out);
	return *out ? 0 : -ENOMEM;
}

/* One item of _active: ident -> Thread. 1 when it has no native id (not kept). */
static int read_entry(const struct objread *r, uint64_t key, uint64_t value, struct pt_entry *e)
{
	uint64_t nid;
	int64_t ident;
	int ret;

	memset(e, 0, sizeof(*e));
	if ((ret = obj_long(r, key, &ident)))
		return ret;
	ret = obj_isinstance(r, value, "Thread");
	if (ret != 1)
		return ret < 0 ? ret : -EINVAL;
	ret = obj_getattr(r, value, "_native_id", &nid);
	if (!ret)
		ret = obj_long(r, nid, &e->native_id);
	if (ret)
		return ret == -EINVAL || ret == -ENOENT ? 1 : ret; /* None, or not yet set */
	e->ident = (uint64_t)ident;
	/* not started by threading: a stand-in named Dummy-N, which Python made up */
	ret = obj_isinstance(r, value, "_DummyThread");
	if (ret)
		return ret < 0 ? ret : 0;
	e->err = thread_name(r, value, &e->name) != 0; /* the thread's samples count it */
	return 0;
}

/* Reads threading._active of t into p; on failure p keeps its last read. */
static void refresh(struct pythreads *pt, struct pt_proc *p, const struct py_target *t, double now)
{
	uint64_t module, active, limbo, *keys = NULL, *values = NULL;
	struct obj_pages *pages = NULL;
	struct pt_entry *e = NULL;
	struct objread r;
	size_t n = 0, nl = 0, kept = 0;
	int ret;

	if (objread_init(&r, t)) {
		p->no_model = true;
		fail(pt, t->pid, t->om_why[0] ? t->om_why : "no object model", 0);
		return;
	}
	pt->st.reads++;
	/* most of what a read needs lies on a few pages: a Thread, its dict, its ints. The
	 * pages are the read's own: kept, the slots that reads of many processes fill (by
	 * address) would grow the heap by up to their 4 MiB */
	if (!(pages = obj_pages_new())) {
		ret = -ENOMEM;
		goto out;
	}
	memset(pt->types, 0, sizeof(*pt->types));
	r.types = pt->types;
	r.pages = pages;
	ret = obj_module(&r, "threading", &module);
	if (ret == -ENOENT || ret == -EAGAIN) {
		ret = 0; /* threading not imported (yet): no thread has a name of Python's */
		goto out;
	}
	if (!ret)
		ret = obj_module_attr(&r, module, "_active", &active);
	keys = malloc(MAX_ACTIVE * sizeof(*keys));
	values = malloc(MAX_ACTIVE * sizeof(*values));
	if (!ret && (!keys || !values))
		ret = -ENOMEM;
	if (!ret)
		ret = obj_dict_items(&r, active, keys, values, MAX_ACTIVE, &n);
	/* and _limbo (Thread -> Thread): a thread runs a while, its ident and native id set,
	 * before it moves itself to _active; a new pool worker under load is sampled then */
	if (!ret && !obj_module_attr(&r, module, "_limbo", &limbo) &&
	    !obj_dict_items(&r, limbo, keys + n, values + n, MAX_ACTIVE - n, &nl)) {
		for (size_t i = n; i < n + nl; i++)
			if (obj_getattr(&r, values[i], "_ident", &keys[i]))
				keys[i] = 0;
		n += nl;
	}
	if (!ret && n && !(e = calloc(n, sizeof(*e))))
		ret = -ENOMEM;
	for (size_t i = 0; !ret && i < n; i++) {
		ret = keys[i] ? read_entry(&r, keys[i], values[i], &e[kept]) : 1;
		if (ret == 1 || (ret && i >= n - nl))
			ret = 0; /* not set yet; a limbo thread may be gone meanwhile */
		else if (!ret)
			kept++;
	}
out:
	obj_pages_free(pages);
	free(keys);
	free(values);
	if (ret) {
		p->failed_at = now;
		pt->st.read_fails++;
		fail(pt, t->pid, "reading threading._active", ret);
		for (size_t i = 0; i < kept; i++)
			free(e[i].name);
		free(e);
		return;
	}
	free_entries(p);
	p->e = e;
	p->n = kept;
	p->gen++;
	p->read_at = now;
}

static size_t slot(const struct pt_proc *p, pid_t tid)
{
	return hash_u64((uint64_t)tid) & (p->cap - 1);
}

/* Rehashes the threads sampled in the last THREAD_IDLE seconds into cap slots. */
static int rehash(struct pt_proc *p, size_t cap, double now)
{
	struct pt_thread *th = calloc(cap, sizeof(*th)), *old = p->th;
	size_t oldcap = p->cap;

	if (!th)
		return -ENOMEM;
	p->th = th;
	p->cap = cap;
	p->used = 0;
	for (size_t i = 0; i < oldcap; i++) {
		size_t j;

		if (!old[i].tid)
			continue;
		if (now - old[i].seen > THREAD_IDLE) {
			free(old[i].name);
			continue;
		}
		for (j = slot(p, old[i].tid); th[j].tid; j = (j + 1) & (cap - 1))
			;
		th[j] = old[i];
		p->used++;
	}
	free(old);
	return 0;
}

static struct pt_thread *thread_of(struct pt_proc *p, pid_t tid, double now)
{
	size_t j;

	if ((p->used + 1) * 2 > p->cap) {
		size_t live = 0;

		for (size_t i = 0; i < p->cap; i++)
			live += p->th[i].tid && now - p->th[i].seen <= THREAD_IDLE;
		/* threads that ended are most of the table: rehash in place, not double */
		if (rehash(p, !p->cap ? 16 : live * 4 < p->cap ? p->cap : p->cap * 2, now))
			return NULL;
	}
	for (j = slot(p, tid); p->th[j].tid; j = (j + 1) & (p->cap - 1))
		if (p->th[j].tid == tid)
			return &p->th[j];
	p->used++;
	p->th[j] = (struct pt_thread){ .tid = tid };
	return &p->th[j];
}

static const struct pt_entry *lookup(const struct pt_proc *p, pid_t tid)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->e[i].native_id == tid)
			return &p->e[i];
	return NULL;
}

/* th against p's last read of _active. */
static void resolve(struct pt_thread *th, const struct pt_proc *p)
{
	const struct pt_entry *e = lookup(p, th->tid);

	th->gen = p->gen;
	th->failed = false;
	if (!e || (th->ident && e->ident != th->ident)) {
		/* not a thread of threading's, or the Thread of another thread with its tid
		 * (it ended and the tid was reused; or ours has not been entered yet); or ours,
		 * ending: it leaves _active before its last bytecodes, and the same thread state
		 * and ident under the same tid say it is the thread named before */
		th->failed = e && !th->name;
		if (e || (th->ident && th->name))
			return;
		free(th->name);
		th->name = NULL;
		return;
	}
	if (!th->ident || e->err) {
		/* unverified or unreadable: an earlier name of this very thread stays */
		th->failed = !th->name;
		return;
	}
	if (!e->name || !th->name || strcmp(e->name, th->name)) {
		free(th->name);
		th->name = e->name ? strdup(e->name) : NULL;
		th->failed = e->name && !th->name;
	}
}

/* A thread without a thread state: one that has let its own go, at its very end, keeps
 * the name it had (a tid is not handed out again that soon); one that has not made its
 * own yet has no name of Python's: nothing in memory ties it to its Thread. */
static const char *ending_name(struct pythreads *pt, pid_t pid, pid_t tid, double now)
{
	for (size_t i = 0; i < pt->nprocs; i++) {
		struct pt_proc *p = &pt->procs[i];

		if (p->pid != pid || !p->cap)
			continue;
		for (size_t j = slot(p, tid); p->th[j].tid; j = (j + 1) & (p->cap - 1))
			if (p->th[j].tid == tid)
				return now - p->th[j].seen <= THREAD_IDLE ? p->th[j].name : NULL;
	}
	return NULL;
}

const char *pythreads_name(struct pythreads *pt, const struct py_target *t, pid_t tid,
			   uint64_t tstate)
{
	struct pt_proc *p;
	struct pt_thread *th;
	double now;

	now = mono_s();
	if (!tstate)
		return ending_name(pt, t->pid, tid, now);
	p = proc_of(pt, t);
	if (!p)
		return NULL;
	if (p->no_model) {
		pt->st.unread++;
		return NULL;
	}
	if (now - p->read_at >= PYTHREADS_REFRESH && now - p->failed_at >= RETRY)
		refresh(pt, p, t, now);
	th = p->no_model ? NULL : thread_of(p, tid, now);
	if (!th) {
		pt->st.unread += p->no_model;
		return NULL;
	}
	th->seen = now;
	if (th->tstate != tstate) {
		free(th->name);
		*th = (struct pt_thread){ .tid = tid, .tstate = tstate, .first = now, .seen = now };
		if (mem_read(t->pid, tstate + t->proc.layout.tstate_thread_id, &th->ident,
			     sizeof(th->ident)))
			th->ident = 0;
	}
	if (th->gen != p->gen || !p->gen || (!th->name && now - th->first < PYTHREADS_REFRESH)) {
		/* a thread started after the last read is in the next one: read again at once
		 * for a new thread, then every NEW_THREAD while it is young and unnamed (it
		 * enters _active a moment after it starts running) */
		bool young = !lookup(p, tid) &&
			     (p->read_at < th->first || now - p->read_at >= NEW_THREAD);

		if ((!p->gen || young) && now - p->failed_at >= RETRY)
			refresh(pt, p, t, now);
		if (p->gen)
			resolve(th, p);
		else
			th->failed = true;
	}
	if (th->failed)
		pt->st.unread++;
	else if (th->name)
		pt->st.named++;
	return th->name;
}

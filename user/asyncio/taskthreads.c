// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asyncio/taskthreads.h"
#include "asyncio/threadwork.h"
#include "cpython/pythreads.h"
#include "process/memread.h"
#include "asyncio/taskwalk.h"

struct walk {
	struct py_target t; /* with its pools found */
	struct pw_reader rd;
	struct pw_scratch s;
	struct py_sample smp;
	/* each task of the snapshot, its index + 1 for a serial: the walker links work only
	 * to a task the maps know */
	struct taskmaps maps;
};

/* The thread's tid: Python's own native_id (3.11+), else glibc's, trusted only when the
 * process has that thread (a wrong offset reads anything). */
static pid_t tid_of(const struct py_target *t, uint64_t ts)
{
	const struct py_layout *l = &t->proc.layout;
	uint64_t id = 0;
	int32_t tid = 0;
	char path[64];

	if (l->tstate_native_id)
		return mem_read(t->pid, ts + l->tstate_native_id, &id, sizeof(id)) ? 0 : (pid_t)id;
	if (mem_read(t->pid, ts + l->tstate_thread_id, &id, sizeof(id)) || !id ||
	    mem_read(t->pid, id + PTHREAD_TID_OFF, &tid, sizeof(tid)) || tid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d", t->pid, tid);
	return access(path, F_OK) ? 0 : tid;
}

/* The snapshot's task the walk of thread state ts links its work to, or SIZE_MAX. */
static size_t walk_one(struct walk *w, const struct atasks *a, uint64_t ts)
{
	const struct sample_hdr *h = &w->smp.hdr;
	const struct task_rec *k = &w->smp.tasks[0];
	size_t i;

	pw_pages_reset(&w->rd.pages);
	pw_walk_thread(&w->rd, &w->t.proc, ts, &w->smp, &w->s);
	if (h->flags & SAMPLE_READ_ERR ||
	    !pw_walk_tasks(&w->rd, &w->t.proc, (__u32)w->t.pid, &w->smp, &w->s) ||
	    !(h->flags & SAMPLE_WORK) || !h->ntasks || h->running_idx > h->nframes || !k->serial)
		return SIZE_MAX;
	i = k->serial - 1;
	/* the task read now is the snapshot's: a task made since at its address differs */
	return i < a->n && a->v[i].addr == k->addr && a->v[i].coro == k->coro ? i : SIZE_MAX;
}

static int keep(struct task_threads *out, const struct walk *w, size_t task, pid_t tid,
		struct pythreads *names, uint64_t ts)
{
	const struct sample_hdr *h = &w->smp.hdr;
	struct task_thread *v = realloc(out->v, (out->n + 1) * sizeof(*v)), *e;
	const char *name;

	if (!v)
		return -ENOMEM;
	out->v = v;
	e = &v[out->n];
	*e = (struct task_thread){ .task = task, .tid = tid, .nframes = h->running_idx };
	name = names && tid ? pythreads_name(names, &w->t, tid, ts) : NULL;
	if ((name && !(e->name = strdup(name))) ||
	    (e->nframes && !(e->frames = malloc(e->nframes * sizeof(*e->frames))))) {
		free(e->name);
		return -ENOMEM;
	}
	/* the sample's frames are innermost first */
	for (uint32_t j = 0; j < e->nframes; j++)
		e->frames[j] = w->smp.frames[e->nframes - 1 - j];
	out->n++;
	return 0;
}

static int walk_threads(struct walk *w, const struct atasks *a, struct task_threads *out)
{
	const struct py_layout *l = &w->t.proc.layout;
	pid_t pid = w->t.pid;
	struct pythreads *names = pythreads_new();
	uint64_t interp = 0, ts = 0;
	int ret = mem_read(pid, w->t.proc.runtime + l->runtime_interp_head, &interp, 8);

	for (int steps = 0; !ret && interp && steps < MAX_THREADS; steps++) {
		size_t task;

		if (!ts) {
			if ((ret = mem_read(pid, interp + l->interp_tstate_head, &ts, 8)))
				break;
			if (!ts)
				ret = mem_read(pid, interp + l->interp_next, &interp, 8);
			continue;
		}
		task = walk_one(w, a, ts);
		if (task != SIZE_MAX && (ret = keep(out, w, task, tid_of(&w->t, ts), names, ts)))
			break;
		if ((ret = mem_read(pid, ts + l->tstate_next, &ts, 8)))
			break;
		if (!ts)
			ret = mem_read(pid, interp + l->interp_next, &interp, 8);
	}
	pythreads_free(names);
	return ret;
}

int taskthreads_read(const struct py_target *t, const struct atasks *a, struct task_threads *out)
{
	struct walk *w;
	int ret;

	*out = (struct task_threads){};
	if (!a->n)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->t = *t;
	ret = threadwork_find(&w->t, &w->t.proc.work);
	if (ret > 0)
		ret = 0; /* the executor has made no item: none runs */
	/* no pool found: none in use, so no thread runs a task's work */
	if (!ret && (w->t.proc.work.code[WORK_ANYIO] || w->t.proc.work.code[WORK_POOL])) {
		for (size_t i = 0; i < a->n; i++)
			if (!a->v[i].ended)
				tm_set_serial(&w->maps, t->pid, a->v[i].addr, i + 1);
		vmwalk_target(t->pid);
		vmwalk_taskmaps(&w->maps);
		ret = walk_threads(w, a, out);
		vmwalk_taskmaps(NULL);
	}
	free(w);
	if (ret)
		taskthreads_free(out);
	return ret;
}

void taskthreads_free(struct task_threads *tt)
{
	for (size_t i = 0; i < tt->n; i++) {
		free(tt->v[i].name);
		free(tt->v[i].frames);
	}
	free(tt->v);
	*tt = (struct task_threads){};
}

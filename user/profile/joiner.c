// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "profile/joiner.h"

/* a container, process, thread, a marker, the thread's frames, per task a boundary, markers
 * around its coroutine frames or creation site, a leaf marker */
#define MAX_IDS                                                                                    \
	(MAX_FRAMES + MAX_CORO_FRAMES + (SITE_FRAMES + 5) * MAX_TASKS + 7 + NATIVE_MAX_FRAMES + 1)
/* the group of a Task-N that no frame has shown */
#define UNKNOWN_GROUP "[unknown]"
/* slots of the frame memo, a power of two */
#define FRAME_MEMO 4096
/* the thread's frames, Python and native */
#define MAX_THREAD (MAX_FRAMES + NATIVE_MAX_FRAMES + 1)

/* Symbolizing a frame (its code object's entry, its line from the line table, the
 * profile's interning by text) costs more than the rest of a sample's handling; the same
 * frames come back sample after sample. */
struct frame_memo {
	uint64_t code;
	uint32_t pid, fp, gen, id;
	int32_t instr;
};

int joiner_init(struct joiner *jn)
{
	memset(jn, 0, sizeof(*jn));
	jn->prof = profile_new();
	jn->syms = symtab_new();
	jn->names = tasknames_new();
	jn->sites = tasksites_new();
	jn->threads = pythreads_new();
	/* a Task-N per request of a busy server would push out the few names of functions */
	jn->groups = autogroups_new(1024);
	jn->numbered = autogroups_new(4096);
	jn->frames = calloc(FRAME_MEMO, sizeof(*jn->frames));
	jn->frames_gen = 1;
	if (!jn->frames || !jn->prof || !jn->syms || !jn->names || !jn->sites || !jn->threads ||
	    !jn->groups || !jn->numbered) {
		joiner_fini(jn);
		return -ENOMEM;
	}
	return 0;
}

void joiner_fini(struct joiner *jn)
{
	profile_free(jn->prof);
	symtab_free(jn->syms);
	tasknames_free(jn->names);
	tasksites_free(jn->sites);
	pythreads_free(jn->threads);
	autogroups_free(jn->groups);
	autogroups_free(jn->numbered);
	unwinder_free(jn->unw);
	free(jn->targets);
	free(jn->frames);
	memset(jn, 0, sizeof(*jn));
}

struct target *joiner_target(struct joiner *jn, pid_t pid)
{
	for (size_t i = 0; i < jn->ntargets; i++)
		if (jn->targets[i].t.pid == pid)
			return &jn->targets[i];
	return NULL;
}

struct target *joiner_add_target(struct joiner *jn, const struct py_target *t)
{
	struct target *tg = joiner_target(jn, t->pid);

	if (!tg) {
		if (jn->ntargets == jn->cap) {
			size_t cap = jn->cap ? jn->cap * 2 : 16;
			struct target *n = realloc(jn->targets, cap * sizeof(*n));

			if (!n)
				return NULL;
			jn->targets = n;
			jn->cap = cap;
		}
		tg = &jn->targets[jn->ntargets++];
	}
	memset(tg, 0, sizeof(*tg));
	tg->t = *t;
	tg->root_frame = UINT32_MAX;
	tg->stack_budget = jn->stack_limit;
	tg->proc_frame = profile_frame(jn->prof, FRAME_PROCESS, t->comm, NULL, t->pid);
	if (tg->proc_frame == UINT32_MAX) {
		jn->ntargets--;
		return NULL;
	}
	return tg;
}

void joiner_del_target(struct joiner *jn, pid_t pid)
{
	struct target *tg = joiner_target(jn, pid);

	if (!tg)
		return;
	/* its Task-Ns' groups, unless a frame of the profile waits for one */
	if (!tg->pending) {
		char prefix[48];

		snprintf(prefix, sizeof(prefix), "%d %llu ", (int)pid, tg->t.start_time);
		autogroups_forget_prefix(jn->numbered, prefix);
	}
	symtab_forget(jn->syms, pid);
	jn->frames_gen++;
	tasknames_forget(jn->names, pid);
	pythreads_forget(jn->threads, pid);
	if (jn->unw)
		unwinder_forget(jn->unw, pid);
	*tg = jn->targets[--jn->ntargets];
}

int joiner_place_target(struct joiner *jn, struct target *tg, const struct proc_place *pl,
			bool root_frame)
{
	char name[CGROUP_PATH_LEN + 16];
	uint32_t id;

	id = profile_process_frame(jn->prof, tg->t.comm, tg->t.pid, pl->ns_pid, pl->label);
	if (id == UINT32_MAX)
		return -ENOMEM;
	tg->proc_frame = id;
	tg->place = *pl;
	tg->container_frame = root_frame;
	tg->root_frame = UINT32_MAX;
	if (root_frame && pl->label[0]) {
		snprintf(name, sizeof(name), "[container %s]", pl->label);
		tg->root_frame = profile_frame(jn->prof, FRAME_SPECIAL, name, NULL, 0);
		if (tg->root_frame == UINT32_MAX)
			return -ENOMEM;
	}
	return 0;
}

/* Whether a task frame waits for the cut: a Task-N pending by its key (file), or an
 * automatic name shown whole whose group was learned since. */
static bool late(struct joiner *jn, const struct frame_sym *f)
{
	const char *g;

	if (f->kind != FRAME_TASK)
		return false;
	if (f->file)
		return true;
	g = autogroups_find(jn->groups, f->name);
	return g && strcmp(g, f->name);
}

/* Such a frame by its group, a pending Task-N by [unknown] if none was learned. */
static const char *late_group(void *ctx, const struct frame_sym *f, const char **file)
{
	struct joiner *jn = ctx;
	const char *g;

	if (!late(jn, f))
		return NULL;
	*file = NULL;
	g = autogroups_find(f->file ? jn->numbered : jn->groups, f->file ? f->file : f->name);
	if (g)
		jn->groups_late++;
	return g ? g : UNKNOWN_GROUP;
}

/* Samples with a task frame of no known group. */
static uint64_t unknown_groups(const struct profile *p)
{
	size_t n;
	const struct stack_ent *st = profile_stacks_unsorted(p, &n);
	uint64_t count = 0;

	for (size_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < st[i].n; k++) {
			const struct frame_sym *f = profile_frame_sym(p, st[i].ids[k]);

			if (f->kind == FRAME_TASK && !strcmp(f->name, UNKNOWN_GROUP)) {
				count += st[i].count;
				break;
			}
		}
	return count;
}

/* Names shown before their group was learned, grouped at the cut: anyio 4 runs its
 * wrapper before and after the function a task's module.qualname name is of, so a sample
 * then shows the name whole unless an earlier one showed the function; a Task-N with no
 * readable frame (an ended awaiter, an unknown code object) waits for any sample that
 * shows its coroutine. Out of memory, the profile stays (pending Task-Ns then show as
 * [unknown] all the same: the writers print a task frame's name only). */
static struct profile *regroup(struct joiner *jn, struct profile *p)
{
	size_t i, n = profile_nframes(p);
	struct profile *q;
	uint64_t grouped = jn->groups_late;

	for (i = 0; i < n && !late(jn, profile_frame_sym(p, (uint32_t)i)); i++)
		;
	if (i == n)
		return p;
	q = profile_renamed(p, late_group, jn);
	if (!q) {
		jn->groups_late = grouped;
		jn->groups_unknown += unknown_groups(p);
		return p;
	}
	jn->groups_unknown += unknown_groups(q);
	profile_free(p);
	return q;
}

struct profile *joiner_cut(struct joiner *jn)
{
	struct profile *old = jn->prof, *p = profile_new();
	size_t i;

	if (!p)
		return NULL;
	profile_set_period(p, profile_period(old));
	jn->prof = p;
	jn->frames_gen++;
	/* a target's process and container frames are ids in the profile: intern them
	 * again in the new one, and give it a new stack budget there */
	for (i = 0; i < jn->ntargets; i++) {
		struct target *tg = &jn->targets[i];

		if (joiner_place_target(jn, tg, &tg->place, tg->container_frame))
			break;
		tg->stack_budget = jn->stack_limit;
		tg->pending = false;
	}
	if (i < jn->ntargets) {
		jn->prof = old;
		for (size_t k = 0; k < jn->ntargets; k++)
			joiner_place_target(jn, &jn->targets[k], &jn->targets[k].place,
					    jn->targets[k].container_frame);
		profile_free(p);
		return NULL;
	}
	return jn->task_ids ? old : regroup(jn, old);
}

static uint32_t special(struct joiner *jn, const char *name)
{
	return profile_frame(jn->prof, FRAME_SPECIAL, name, NULL, 0);
}

static uint32_t python_frame(struct joiner *jn, struct target *tg, const struct frame_rec *f)
{
	uint64_t code = FRAME_CODE(f);
	uint32_t pid = (uint32_t)tg->t.pid, id;
	struct frame_memo *m = &jn->frames[hash_u64(code ^ (uint64_t)pid << 32 ^
						    (uint64_t)(uint32_t)f->instr * 0x9E3779B9u) &
					   (FRAME_MEMO - 1)];
	const struct py_code *c;

	if (m->gen == jn->frames_gen && m->code == code && m->pid == pid && m->fp == f->fp &&
	    m->instr == f->instr)
		return m->id;
	c = symtab_code(jn->syms, &tg->t, code, f->fp);
	if (!c->valid) {
		jn->unknown_frames++;
		return special(jn, "[unknown]");
	}
	id = profile_frame(jn->prof, FRAME_PYTHON, c->qualname, c->filename,
			   py_code_line(c, tg->t.version, f->instr));
	profile_set_start_line(jn->prof, id, c->firstlineno);
	if (id != UINT32_MAX)
		*m = (struct frame_memo){ .code = code,
					  .pid = pid,
					  .fp = f->fp,
					  .gen = jn->frames_gen,
					  .id = id,
					  .instr = f->instr };
	return id;
}

/* "Task-N": asyncio's name for a task given none */
static bool numbered(const char *name)
{
	const char *p = name + 5;

	if (strncmp(name, "Task-", 5) || !*p)
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	return !*p;
}

#define GROUP_FRAMES 4 /* a task's outermost frames its automatic name may be from */

/* A Task-N's group: the qualname of its coroutine, its outermost frame; learned per
 * process (numbers are a process's own; its start time tells a reused pid apart) for
 * when the task shows no readable frame: an ended awaiter, recorded by name only, or a
 * coroutine frame whose code is unknown. Not seen yet: NULL, and its key in key. */
static const char *numbered_group(struct joiner *jn, struct target *tg, const char *name,
				  const struct frame_rec *const *fr, uint32_t n, char *key,
				  size_t len)
{
	const struct py_code *c =
		n ? symtab_code(jn->syms, &tg->t, FRAME_CODE(fr[0]), fr[0]->fp) : NULL;

	snprintf(key, len, "%d %llu %s", (int)tg->t.pid, tg->t.start_time, name);
	if (c && c->valid && c->qualname) {
		autogroups_learn(jn->numbered, key, c->qualname);
		return c->qualname;
	}
	return autogroups_find(jn->numbered, key);
}

/* The name a task is shown by: an automatic one (asyncio's Task-N; anyio's and
 * Starlette's module.qualname of the function the task runs, 3-4 frames down under anyio
 * 4's wrapper) becomes the qualname of what it runs, so that one route's requests are one
 * stack; any other name stays. fr: its outermost frames, root first. */
static const char *shown_name(struct joiner *jn, struct target *tg, const char *name,
			      const struct frame_rec *const *fr, uint32_t n, char *key, size_t klen)
{
	size_t len = strlen(name);
	const char *learned;

	if (jn->task_ids)
		return name;
	if (numbered(name))
		return numbered_group(jn, tg, name, fr, n, key, klen);
	for (uint32_t i = 0; i < n; i++) {
		const struct py_code *c =
			symtab_code(jn->syms, &tg->t, FRAME_CODE(fr[i]), fr[i]->fp);
		size_t q;

		if (!c->valid || !c->qualname)
			continue;
		q = strlen(c->qualname);
		if (len > q + 1 && name[len - q - 1] == '.' &&
		    !strcmp(name + len - q, c->qualname)) {
			autogroups_learn(jn->groups, name, c->qualname);
			return c->qualname;
		}
	}
	/* anyio 4's wrapper before or after the function: the group it was seen with */
	learned = autogroups_find(jn->groups, name);
	return learned ? learned : name;
}

/* A task's frame; name is its own ("?" when not known: shown as it is). A Task-N whose
 * group is not known yet is a frame "[unknown]" with its key for file, until the cut. */
static uint32_t task_frame(struct joiner *jn, struct target *tg, const char *name,
			   const struct frame_rec *const *fr, uint32_t n)
{
	char key[TASK_NAME_TEXT + 48];
	const char *shown;

	if (!strcmp(name, "?"))
		return profile_frame(jn->prof, FRAME_TASK, name, NULL, 0);
	shown = shown_name(jn, tg, name, fr, n, key, sizeof(key));
	if (shown)
		return profile_frame(jn->prof, FRAME_TASK, shown, NULL, 0);
	tg->pending = true;
	return profile_frame(jn->prof, FRAME_TASK, UNKNOWN_GROUP, key, 0);
}

/* The thread's frames leaf first into out, its native ones (if any) in place: each C call
 * of the eval loop stands for the Python frames it runs. 3.12+ tell the call by the shim
 * frame on its stack (any build, stripped or not); older versions by its name and
 * FRAME_ENTRY (before 3.11 each frame is one call). The interpreter's other C functions
 * are left out unless jn->native_all. at[i] is where Python frame i went. Python frames
 * beyond the native stack's last eval call (the copy ended short of the root) come last. */
static uint32_t thread_frames(struct joiner *jn, struct target *tg, const struct py_sample *s,
			      const struct native_hdr *h, const struct native_stack *ns,
			      uint32_t *out, uint32_t *at)
{
	uint32_t n = 0, py = 0, nf = s->hdr.nframes;
	bool each = tg->t.version < 0x030b0000, by_shim = ns && ns->nshims;

	for (uint32_t j = 0; ns && j < ns->n; j++) {
		const struct native_frame *f = &ns->f[j];
		uint32_t end = py;

		if (by_shim && f->shim >= 0)
			end = h->shim_at[f->shim] < nf ? h->shim_at[f->shim] : nf;
		else if (!by_shim && f->kind == NATIVE_EVAL && py < nf)
			for (end = py + 1;
			     end < nf && !each && !(s->frames[end - 1].code & FRAME_ENTRY);)
				end++;
		else if (f->kind == NATIVE_OTHER || jn->native_all)
			out[n++] = profile_frame(jn->prof, FRAME_NATIVE, f->name, NULL, 0);
		for (; py < end; py++) {
			at[py] = n;
			out[n++] = python_frame(jn, tg, &s->frames[py]);
		}
	}
	if (ns && ns->end != NATIVE_END_ROOT && py < nf)
		out[n++] = special(jn, "[native stack ends]");
	for (; py < nf; py++) {
		at[py] = n;
		out[n++] = python_frame(jn, tg, &s->frames[py]);
	}
	return n;
}

/* "[N more frames]": frames of a creation site that were not kept */
static uint32_t more_frames(struct joiner *jn, uint32_t more)
{
	char text[48];

	snprintf(text, sizeof(text), "[%u more frames]", more);
	return special(jn, text);
}

/* The coroutine frame of task k (its outermost), NULL if not in the sample. */
static const struct frame_rec *coro_frame(const struct py_sample *s, uint32_t k, uint32_t last,
					  uint32_t total)
{
	const struct task_rec *t = &s->tasks[k];

	if (k == 0 && last)
		return s->hdr.running_idx < s->hdr.nframes ? &s->frames[s->hdr.running_idx] : NULL;
	return t->nframes && t->first < total ? &s->frames[t->first] : NULL;
}

/* The code object task k runs: its coroutine's, from its frames or, for a creator, from
 * where it created task k - 1 (its frames are not walked); 0 if not known. */
static uint64_t task_code(const struct py_sample *s, uint32_t k, uint32_t last, uint32_t total,
			  const struct task_site *const *sites)
{
	const struct frame_rec *f =
		sites[k] ? &sites[k]->frames[sites[k]->nframes - 1] : coro_frame(s, k, last, total);

	return f ? FRAME_CODE(f) : 0;
}

/* Tasks of one kind: the same coroutine function and, as a wrapper such as anyio 4's
 * TaskHandle._run_coro runs every task of a framework, the same name, or both named
 * automatically. */
static bool same_kind(uint64_t code_a, const char *name_a, uint64_t code_b, const char *name_b)
{
	return code_a && code_a == code_b &&
	       ((numbered(name_a) && numbered(name_b)) || !strcmp(name_a, name_b));
}

/* How many of the sample's tasks are shown, from tasks[0] out; sites[k] gets where task
 * k, a creator, created task k - 1. A chain stops at a creator whose site is not known,
 * and at a task created by a task that runs,
 * or is under a task that runs, the same coroutine function: a server's next request,
 * made in the previous request's send path (uvicorn under keep-alive), is not that
 * request's work. */
static uint32_t shown_tasks(struct joiner *jn, struct target *tg, const struct py_sample *s,
			    uint32_t last, uint32_t total, const struct task_site **sites,
			    struct task_site *copies, char (*names)[TASK_NAME_TEXT])
{
	uint32_t nt = s->hdr.ntasks;

	for (uint32_t k = 1; k < nt; k++)
		if (s->tasks[k].flags & TASK_ORIGIN &&
		    tasksites_get(jn->sites, tg->t.pid, s->tasks[k - 1].addr,
				  s->tasks[k - 1].serial, &copies[k]))
			sites[k] = &copies[k];
	for (uint32_t k = 1; k < nt; k++) {
		uint64_t child;

		if (!(s->tasks[k].flags & TASK_ORIGIN))
			continue;
		/* a creator whose creation site is not known is not drawn: neither where it
		 * made the task nor whether it is the task's own kind can be shown */
		if (!sites[k]) {
			jn->sites_unknown++;
			return k;
		}
		child = task_code(s, k - 1, last, total, sites);
		for (uint32_t j = k; j < nt; j++)
			if (same_kind(child, names[k - 1], task_code(s, j, last, total, sites),
				      names[j])) {
				jn->creation_cuts++;
				return k;
			}
	}
	return nt;
}

/* Python's name of the sample's thread; where there is none, MainThread for the main
 * thread (Python's name for it, threading imported or not), the OS name for others. */
static const char *thread_name(struct joiner *jn, struct target *tg, const struct sample_hdr *h,
			       const char *comm)
{
	const char *name = pythreads_name(jn->threads, &tg->t, h->tid, h->tstate);

	return name ? name : h->tid == h->pid ? "MainThread" : comm;
}

/* Root first: the thread's frames down to the running task's coroutine (the event loop's
 * part), each awaiting task from the outermost with its suspended coroutine frames, then
 * the running task and its frames down to the leaf. A pool worker's sample (SAMPLE_WORK):
 * the tasks down to the one awaiting the item, suspended, then the worker thread and its
 * frames inside the pool's. */
static uint32_t join(struct joiner *jn, struct target *tg, const struct py_sample *s,
		     const struct native_hdr *nh, const struct native_stack *ns, uint32_t *ids,
		     uint32_t n)
{
	const struct sample_hdr *h = &s->hdr;
	uint32_t split = 0, total = h->nframes + h->ncoro, th[MAX_THREAD], at[MAX_FRAMES], nth, top;
	const struct task_site *sites[MAX_TASKS] = { 0 };
	struct task_site copies[MAX_TASKS];
	char names[MAX_TASKS][TASK_NAME_TEXT];
	/* a suspended task shows its own coroutine frames like its awaiters' */
	uint32_t last = h->flags & (SAMPLE_SUSPENDED | SAMPLE_WORK) ? 0 : 1;

	if (h->ntasks && h->flags & SAMPLE_SUSPENDED)
		goto tasks;
	nth = thread_frames(jn, tg, s, nh, ns, th, at);
	if (h->ntasks && h->flags & SAMPLE_WORK && h->running_idx < h->nframes) {
		/* the worker's frames inside its pool frame, after the task awaiting them */
		split = at[h->running_idx];
		goto tasks;
	}
	if (!h->ntasks || h->running_idx >= h->nframes) {
		for (uint32_t i = nth; i-- > 0;)
			ids[n++] = th[i];
		return n;
	}
	/* native frames between the loop and the running coroutine are the loop's */
	split = at[h->running_idx] + 1;
	for (uint32_t i = nth; i-- > split;)
		ids[n++] = th[i];
tasks:
	for (uint32_t k = 0; k < h->ntasks; k++)
		tasknames_sample(jn->names, &tg->t, &s->tasks[k], names[k], sizeof(names[k]));
	top = shown_tasks(jn, tg, s, last, total, sites, copies, names);
	if (top == h->ntasks && s->tasks[top - 1].flags & TASK_MORE)
		ids[n++] = special(jn, "[more tasks]");
	for (uint32_t k = top; k-- > last;) {
		const struct task_rec *t = &s->tasks[k];
		const struct task_site *site = sites[k];
		const struct frame_rec *fr[GROUP_FRAMES];
		uint32_t nfr = 0;

		if (site)
			for (uint32_t i = site->nframes; i-- > 0 && nfr < GROUP_FRAMES;)
				fr[nfr++] = &site->frames[i];
		for (uint32_t i = t->first; !site && i < (uint32_t)t->first + t->nframes &&
					    i < total && nfr < GROUP_FRAMES;
		     i++)
			fr[nfr++] = &s->frames[i];
		ids[n++] = task_frame(jn, tg, names[k], fr, nfr);
		if (t->flags & TASK_CYCLE)
			ids[n++] = special(jn, "[cycle]");
		if (t->flags & TASK_ORIGIN) {
			/* where it created the task below it, whatever it runs now */
			for (uint32_t i = site ? site->nframes : 0; i-- > 0;) {
				ids[n++] = python_frame(jn, tg, &site->frames[i]);
				if (i + SITE_OUTER == site->nframes && site->more)
					ids[n++] = more_frames(jn, site->more);
			}
			ids[n++] = special(jn, "[created by]");
			continue;
		}
		for (uint32_t i = t->first; i < (uint32_t)t->first + t->nframes && i < total; i++)
			ids[n++] = python_frame(jn, tg, &s->frames[i]);
		if (t->flags & TASK_TRUNCATED)
			ids[n++] = special(jn, "[truncated]");
	}
	if (top == h->ntasks && !(s->tasks[top - 1].flags & (TASK_ENDED | TASK_CYCLE | TASK_MORE)))
		jn->root_tasks += tasknames_root(jn->names, &tg->t, &s->tasks[top - 1]);
	if (!last && h->flags & SAMPLE_WORK) {
		char comm[TASK_COMM_LEN + 1];

		memcpy(comm, h->comm, TASK_COMM_LEN);
		comm[TASK_COMM_LEN] = 0;
		ids[n++] = profile_frame(jn->prof, FRAME_WORKER, thread_name(jn, tg, h, comm), NULL,
					 0);
		for (uint32_t i = split; i-- > 0;)
			ids[n++] = th[i];
		return n;
	}
	if (!last)
		return n;
	{
		const struct frame_rec *fr[GROUP_FRAMES];
		uint32_t nfr = 0;

		for (uint32_t i = h->running_idx + 1; i-- > 0 && nfr < GROUP_FRAMES;)
			fr[nfr++] = &s->frames[i];
		ids[n++] = task_frame(jn, tg, names[0], fr, nfr);
	}
	for (uint32_t i = split; i-- > 0;)
		ids[n++] = th[i];
	return n;
}

/* A sample of tg that cannot be counted. */
static void lost(struct joiner *jn, struct target *tg)
{
	jn->nomem++;
	tg->lost++;
}

/* Counts a pool worker's sample by what its link to the awaiting task came to: each in
 * exactly one of the counts, so that they add up to work_frames. */
static void count_work(struct joiner *jn, const struct sample_hdr *h)
{
	jn->work_frames++;
	if (h->flags & SAMPLE_WORK && h->ntasks)
		jn->work_linked++;
	else if (h->flags & SAMPLE_WORK_STALE)
		jn->work_stale++;
	else if (h->flags & SAMPLE_WORK_NO_FUTURE)
		jn->work_no_future++;
	else if (h->flags & SAMPLE_WORK_UNSEEN)
		jn->work_unseen++;
	else
		jn->work_unreadable++;
}

/* A sample of tg (NULL: its pid is not tracked). */
static void add_sample(struct joiner *jn, struct target *tg, const struct py_sample *s,
		       const struct native_hdr *nh, const struct native_stack *ns, uint64_t wall_ns,
		       uint64_t cpu_ns)
{
	const struct sample_hdr *h = &s->hdr;
	uint32_t ids[MAX_IDS], n = 0;
	char comm[TASK_COMM_LEN + 1];
	int ret;

	if (!tg) {
		jn->unknown_pid++;
		return;
	}
	tg->samples++;
	if (h->flags & SAMPLE_WORK_FRAME)
		count_work(jn, h);
	memcpy(comm, h->comm, TASK_COMM_LEN);
	comm[TASK_COMM_LEN] = 0;
	if (tg->root_frame != UINT32_MAX)
		ids[n++] = tg->root_frame;
	ids[n++] = tg->proc_frame;
	if (h->flags & SAMPLE_SUSPENDED)
		ids[n++] = special(jn, "[suspended tasks]");
	else if (h->flags & SAMPLE_WORK && h->ntasks)
		ids[n++] = special(jn, "[thread work]");
	else
		ids[n++] = profile_frame(jn->prof, FRAME_THREAD, thread_name(jn, tg, h, comm), NULL,
					 h->tid);
	if (h->flags & SAMPLE_TRUNCATED)
		ids[n++] = special(jn, "[truncated]");
	else if (h->flags & SAMPLE_READ_ERR)
		ids[n++] = special(jn, "[incomplete]");
	/* a thread without a thread state may still show its native frames, below */
	if (h->flags & SAMPLE_NO_TSTATE && ns && ns->n)
		ids[n++] = special(jn, "[no Python thread state]");
	n = join(jn, tg, s, nh, ns, ids, n);
	/* wall mode: what the task awaits is a pool's job no worker has taken yet */
	if (h->flags & SAMPLE_SUSPENDED && h->flags & SAMPLE_QUEUED)
		ids[n++] = special(jn, "[queued in thread pool]");
	if (h->flags & SAMPLE_NO_TSTATE && !(ns && ns->n))
		ids[n++] = special(jn, "[no Python thread state]");
	else if (!h->nframes && !(h->flags & (SAMPLE_READ_ERR | SAMPLE_SUSPENDED)))
		ids[n++] = special(jn, "[no Python frames]");
	for (uint32_t i = 0; i < n; i++)
		if (ids[i] == UINT32_MAX) {
			lost(jn, tg);
			return;
		}
	if (!jn->stack_limit || wall_ns || cpu_ns) {
		if (profile_add_ns(jn->prof, ids, n, 1, wall_ns, cpu_ns))
			lost(jn, tg);
		return;
	}
	ret = profile_add_capped(jn->prof, ids, n, 1, &tg->stack_budget);
	if (ret == -ENOSPC) {
		/* the process's table is full: count the sample under its thread */
		jn->over_limit++;
		n = tg->root_frame != UINT32_MAX ? 3 : 2;
		ids[n++] = special(jn, "[stack limit]");
		if (ids[n - 1] == UINT32_MAX || profile_add(jn->prof, ids, n, 1))
			lost(jn, tg);
	} else if (ret) {
		lost(jn, tg);
	}
}

void joiner_sample_ns(struct joiner *jn, const struct py_sample *s, uint64_t wall_ns,
		      uint64_t cpu_ns)
{
	add_sample(jn, joiner_target(jn, s->hdr.pid), s, NULL, NULL, wall_ns, cpu_ns);
}

void joiner_sample(struct joiner *jn, const struct py_sample *s, size_t size)
{
	const struct native_hdr *h = jn->unw ? native_of(s, size) : NULL;
	struct target *tg = joiner_target(jn, s->hdr.pid);

	if (!tg || !h) {
		add_sample(jn, tg, s, NULL, NULL, 0, 0);
		return;
	}
	if (unwinder_unwind(jn->unw, s->hdr.pid, s->hdr.tid, tg->t.binary, s->hdr.time_ns, h,
			    (const uint8_t *)(h + 1), &jn->ns)) {
		tg->samples++;
		lost(jn, tg);
		return;
	}
	add_sample(jn, tg, s, h, &jn->ns, 0, 0);
}

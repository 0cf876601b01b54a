/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The joiner: each sample of the processes being profiled symbolized and joined into a
 * stacked stack (the running task under its awaiters, root first), counted in the profile. */
#ifndef ASYNCBPF_JOINER_H
#define ASYNCBPF_JOINER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/container.h"
#include "profile/autogroups.h"
#include "profile/profile.h"
#include "cpython/pyproc.h"
#include "cpython/pythreads.h"
#include "cpython/symbolize.h"
#include "asyncio/snappace.h"
#include "asyncio/tasknames.h"
#include "asyncio/tasksites.h"
#include "native/unwind.h"

struct target {
	struct py_target t;
	uint32_t proc_frame; /* interned process frame */
	uint64_t samples;
	uint64_t lost;		 /* of those, not in the profile (out of memory) */
	struct snapplan snap;	 /* when to read its asyncio tasks again */
	int async_off;		 /* its asyncio could not be read: flat stacks only */
	int async_fails;	 /* task reads failed in a row */
	int origins;		 /* task creation is watched (or that failed for good) */
	int origin_tries;	 /* failed attempts at watching task creation */
	struct proc_place place; /* namespace pid, cgroup, container */
	uint32_t root_frame;	 /* [container ID] above the process frame, UINT32_MAX: none */
	bool container_frame;	 /* asked for that frame (joiner_place_target) */
	size_t stack_budget;	 /* bytes its new stacks may still take (limit set) */
	bool pending;		 /* a task frame in the profile waits for its group (the cut) */
};

struct joiner {
	struct profile *prof;
	struct symtab *syms;
	struct tasknames *names;
	struct tasksites *sites;
	struct pythreads *threads;   /* Python's names of the threads */
	struct autogroups *groups;   /* automatic names' groups, as seen in frames */
	struct autogroups *numbered; /* Task-Ns' groups, by pid, start time and name */
	struct target *targets;
	size_t ntargets, cap;
	uint64_t unknown_pid;	 /* samples of a pid no longer (or not yet) tracked */
	uint64_t nomem;		 /* samples dropped for lack of memory */
	uint64_t unknown_frames; /* frames shown as [unknown] */
	uint64_t root_tasks;	 /* distinct tasks seen at the root of a chain (unlinked) */
	uint64_t sites_unknown;	 /* creators drawn without the frames that created the task */
	uint64_t creation_cuts;	 /* chains stopped at a task made by its own kind (a request's) */
	uint64_t groups_unknown; /* samples with a <task [unknown]>: a Task-N that no frame had
				    shown by the cut */
	uint64_t groups_late;	 /* task frames grouped at a cut, learned after their first
				    samples */
	uint64_t work_linked;	 /* pool workers' samples drawn under the task awaiting the item */
	uint64_t work_stale;	 /* pool workers' samples running an item no task awaits now */
	/* pool workers' samples in a pool frame outside any task (all of the link's outcomes),
	 * and of those, the link stopped: no asyncio future for the item, the task not seen
	 * yet, a read failed */
	uint64_t work_frames, work_no_future, work_unseen, work_unreadable;
	size_t stack_limit;  /* bytes of stacks per process, 0: none */
	uint64_t over_limit; /* samples shown as [stack limit]: their process's table was full */
	/* --native: the unwinder (NULL: native parts are ignored), the interpreter's C
	 * functions shown too; ns: one sample's */
	struct unwinder *unw;
	bool native_all;
	struct native_stack ns;
	/* automatic task names (Task-N, anyio's module.qualname) as they are; by default
	 * such a task is shown by its coroutine's qualname */
	bool task_ids;
	/* the profile's frame of a (pid, code, fingerprint, instruction) seen lately; entries
	 * of another frames_gen are stale (a cut began a new profile, a process left) */
	struct frame_memo *frames;
	uint32_t frames_gen;
};

int joiner_init(struct joiner *jn);
void joiner_fini(struct joiner *jn);

struct target *joiner_target(struct joiner *jn, pid_t pid);
struct target *joiner_add_target(struct joiner *jn, const struct py_target *t);
void joiner_del_target(struct joiner *jn, pid_t pid);

/* Labels tg's stacks with where it runs; with root_frame, a [container ID] frame heads
 * the stacks of a process in a container. 0 or -ENOMEM. */
int joiner_place_target(struct joiner *jn, struct target *tg, const struct proc_place *pl,
			bool root_frame);

/* The profile so far, replaced by an empty one with the same period; the targets, their
 * symbols and task names are kept. NULL when out of memory (nothing changed). */
struct profile *joiner_cut(struct joiner *jn);

/* Symbolizes one BPF record of size bytes and adds it to the profile; with jn->unw, its
 * native frames too. */
void joiner_sample(struct joiner *jn, const struct py_sample *s, size_t size);
/* The same for a record that stands for wall_ns of wall-clock time and cpu_ns of CPU. */
void joiner_sample_ns(struct joiner *jn, const struct py_sample *s, uint64_t wall_ns,
		      uint64_t cpu_ns);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Structs shared by the wall-clock sampler (wall.bpf.c) and its userspace twin. */
#ifndef ASYNCBPF_WALLSAMPLE_H
#define ASYNCBPF_WALLSAMPLE_H

#include "asyncbpf.h"

#define WALL_MAX_TASKS	8192 /* suspended tasks walked per process per tick */
#define WALL_BIRTH_CPUS 8192 /* CPUs whose task_births a tick reads */

/* A suspended task to sample at this tick, chosen by userspace. */
struct wall_task {
	__u64 task, coro, serial;
	__u32 flags;
	__u32 pad;
};

/* A suspended task's chain, once emitted, is the run's walk of each of its tasks[i], i >= 1,
 * with none of WALL_MEMO_SKIP: a later chain of the run reaching that task ends there
 * (TASK_MEMO). Not when the walk met a read error or a chain with any of WALL_MEMO_BLOCK,
 * which depend on what came before it. Both sides keep to this. */
#define WALL_MEMO_SKIP	(TASK_ORIGIN | TASK_ENDED | TASK_MEMO)
#define WALL_MEMO_BLOCK (TASK_CYCLE | TASK_MORE)
#define WALL_MEMO_SLOTS 64

/* BPF's own: a task whose walk a chain emitted in run `run` holds (wall.bpf.c) */
struct memo_slot {
	__u64 task, serial;
	__u32 run, pad;
};

/* wall_task.flags */
#define WALL_TASK_NEW 1 /* created since the last snapshot: not known to await no task */

enum wall_kind {
	WALL_THREAD = 1, /* a thread, on CPU or not: its frames and its running task */
	WALL_TASK = 2,	 /* a suspended task: its stacked stack, no thread frames */
};

/* One ring-buffer record: a prefix, then a py_sample sent up to the last frame used. For
 * WALL_TASK, hdr.flags has SAMPLE_SUSPENDED, hdr.nframes is 0 and tasks[0] holds the
 * task's own coroutine frames. */
struct wall_sample {
	__u32 kind;
	__u32 idx;    /* WALL_TASK: index in the tick's task list */
	__u64 cpu_ns; /* WALL_THREAD: the thread's CPU time so far (sum_exec_runtime) */
	struct py_sample s;
};

enum wall_stat {
	WSTAT_THREADS,	   /* thread samples */
	WSTAT_TASKS,	   /* suspended-task samples */
	WSTAT_TASK_GONE,   /* listed tasks found ended or reused */
	WSTAT_TASK_ACTIVE, /* listed tasks found running: sampled as their thread */
	WSTAT_NO_TSTATE,
	WSTAT_READ_ERR,
	WSTAT_TRUNCATED,
	WSTAT_LOST,	     /* ring buffer full */
	WSTAT_READS,	     /* reads of the target's memory */
	WSTAT_NAME_HITS,     /* task names found copied already */
	WSTAT_NAME_COPIES,   /* task names copied */
	WSTAT_QUEUED,	     /* suspended-task samples awaiting a pool job not started */
	WSTAT_TASK_DONE,     /* listed tasks found done (not pending) */
	WSTAT_TASK_AWAITS,   /* listed tasks found awaiting a task: drawn in its chain */
	WSTAT_MEMO_HITS,     /* chains ended at a task walked earlier in the run */
	WSTAT_BIRTHS,	     /* tasks created after the list was made, added to the run's */
	WSTAT_BIRTHS_MISSED, /* such tasks not added: their slot being written, overwritten by
			      * BIRTH_SLOTS newer ones, or the list full */
	WSTAT_MAX,
};

#endif

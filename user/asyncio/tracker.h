/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Keeps the sampler's asyncio maps in step with the tasks of each process: which task
 * runs which coroutine, and who awaits whom (read from memory by snapshots). */
#ifndef ASYNCBPF_TRACKER_H
#define ASYNCBPF_TRACKER_H

#include <stdint.h>
#include <sys/types.h>

#include "bpf/asyncbpf.h"
#include "cpython/pyproc.h"

struct tracker;

/* The maps a tracker keeps: the sampler's (readers/samplertasks.h), or the userspace
 * readers' tables (asyncio/taskmaps.h); each call as its sampler_* twin, with ctx first. */
struct taskmaps_ops {
	int (*set_coro_task)(void *ctx, pid_t pid, uint64_t coro, const struct task_id *id);
	int (*get_coro_task)(void *ctx, pid_t pid, uint64_t coro, struct task_id *out);
	int (*del_coro_task)(void *ctx, pid_t pid, uint64_t coro);
	int (*set_serial)(void *ctx, pid_t pid, uint64_t task, uint64_t serial);
	int (*get_serial)(void *ctx, pid_t pid, uint64_t task, uint64_t *out);
	int (*del_serial)(void *ctx, pid_t pid, uint64_t task);
	int (*set_link)(void *ctx, pid_t pid, uint64_t child, const struct task_link *l);
	int (*get_link)(void *ctx, pid_t pid, uint64_t child, struct task_link *out);
	int (*del_link)(void *ctx, pid_t pid, uint64_t child);
	/* where names too long for a link are kept (NAME_CACHED); NULL: none */
	int (*set_name)(void *ctx, pid_t pid, uint64_t task, const struct name_ent *e);
	/* the pool worker whose items link to their tasks (threadwork.h); NULL: none */
	int (*set_work)(void *ctx, pid_t pid, const struct py_work *w);
};

struct tracker *tracker_new_ops(const struct taskmaps_ops *ops, void *ctx);

/* ops on a struct taskmaps (ctx) */
extern const struct taskmaps_ops taskmaps_ops;
void tracker_free(struct tracker *tr);

/* Takes a snapshot of t's tasks and updates the maps: new tasks and links are added, a
 * link is kept when its parent ends (the child keeps its last known parent), and the
 * entries of tasks that ended are removed. 1 when the process uses asyncio, 0 when it
 * has not imported it (yet); -1 with a reason when its asyncio cannot be read (the
 * caller warns once and stops asking). */
int tracker_refresh(struct tracker *tr, const struct py_target *t, char *why, size_t len);

/* Calls fn for each task of pid as of its last snapshot, leaf when it awaits no other task
 * (the innermost task of each await chain), and gives when that snapshot began reading
 * (mono_ns; 0: none yet). Returns how many. */
size_t tracker_tasks(struct tracker *tr, pid_t pid,
		     void (*fn)(void *ctx, uint64_t task, uint64_t coro, uint64_t serial, int leaf),
		     void *ctx, uint64_t *read_ns);

/* Drops every entry of pid (process exited). */
void tracker_forget(struct tracker *tr, pid_t pid);

#endif

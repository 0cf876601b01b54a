/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A snapshot of a process's asyncio tasks and who awaits whom, read from its memory. */
#ifndef ASYNCBPF_ATASKS_H
#define ASYNCBPF_ATASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpython/objread.h"
#include "cpython/aiodebug.h"
#include "cpython/pyproc.h"

/* frames of a task's coroutine chain kept; the rest are counted up to ATASK_WALK_MAX */
#define ATASK_MAX_FRAMES (1u << 16)
#define ATASK_WALK_MAX	 (1u << 20)
#define ATASK_WALK_TRIES 4 /* walks of a chain until two agree */

struct atask {
	uint64_t addr;
	char *name;
	uint64_t coro;
	uint64_t awaited;	  /* what its innermost coroutine awaits (not a coroutine), or 0 */
	struct frame_rec *frames; /* suspended coroutine chain, outermost first */
	uint32_t nframes;
	/* frames of the chain past the ones kept, counted but not kept; with SAMPLE_TRUNCATED
	 * in flags the chain went on past ATASK_WALK_MAX frames and this is a lower bound */
	uint32_t frames_cut;
	/* SAMPLE_TRUNCATED / SAMPLE_READ_ERR of the coroutine walk; SAMPLE_READ_ERR also when
	 * no two walks agreed (the chain changed while read) */
	uint32_t flags;
	uint64_t *parents; /* tasks that await it (or, alone, its creator) */
	uint32_t nparents, parents_cap;
	int ended; /* not a task of the snapshot: a creator known from a link */
};

struct atasks {
	struct atask *v;
	size_t n, cap;
	uint32_t *index; /* positions in v by task address (atasks_find); may be NULL */
	size_t index_cap;
	size_t unreadable; /* task objects that could not be read */
	int nomem;	   /* an allocation failed: the snapshot is not whole */
	int asyncio;	   /* the process has imported asyncio */
};

/* Reads every pending asyncio task of t's process and links each to the tasks awaiting it,
 * through whatever sits between them (gather, TaskGroup, shield, wait, wait_for,
 * as_completed). 0 (possibly with no tasks: asyncio not imported) or -1 with a reason. */
enum atasks_what {
	ATASKS_LINKS = 0,	 /* tasks, their coroutines and who awaits whom */
	ATASKS_DETAILS = 1 << 0, /* also names and suspended coroutine chains */
};

/* What a snapshot learns once per process and keeps, zeroed for a new one: on 3.14+ the
 * .AsyncioDebug offsets (a maps read and an ELF open each time otherwise; _asyncio is never
 * unloaded, and an exec makes a new process). */
struct atasks_cache {
	bool has314;
	struct aiodebug aio;
};

/* c: NULL for none. */
int atasks_snapshot(const struct py_target *t, unsigned int what, struct atasks *out,
		    struct atasks_cache *c, char *why, size_t len);
void atasks_free(struct atasks *a);

/* Adds to the snapshot the creators that links made at task creation name, for tasks
 * nobody awaits; a creator that has returned is added as an ended task. get_link gives
 * a task's serial and, when out is not NULL, its link. */
int atasks_add_origins(struct atasks *a, const struct py_target *t,
		       int (*get_link)(void *ctx, uint64_t child, uint64_t *serial,
				       struct task_link *out),
		       void *ctx);

/* Where the process's _asyncio.Task constructor (tp_init) is: the file as the process
 * maps it (under /proc/PID/root) and the offset in it, for a uprobe. -ENOENT while
 * asyncio is not imported. */
int atasks_task_init(const struct py_target *t, char *path, size_t len, uint64_t *offset);
/* The same for its destructor (tp_dealloc). */
int atasks_task_dealloc(const struct py_target *t, char *path, size_t len, uint64_t *offset);
/* The same for its set_name method (a METH_O function: -ENOTSUP if not). */
int atasks_task_set_name(const struct py_target *t, char *path, size_t len, uint64_t *offset);

/* The task at addr, in O(1) through the index (in a linear search without one). */
struct atask *atasks_find(struct atasks *a, uint64_t addr);

/* The task's name as BPF copies it (*kind NAME_NONE: not a short str nor a number), for
 * a link that must name its parent once the parent is gone; returns the name object. */
uint64_t atasks_copy_name(const struct py_target *t, uint64_t task, __u32 *kind, char *name);

#endif

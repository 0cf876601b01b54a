/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The threads of a process running work that a task of a snapshot awaits (anyio's and
 * concurrent.futures' pool workers, see threadwork.h), each with its current frames:
 * found by the walker's own link from the worker's frame to the awaiting task. */
#ifndef ASYNCBPF_TASKTHREADS_H
#define ASYNCBPF_TASKTHREADS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "asyncio/atasks.h"
#include "cpython/pyproc.h"

struct task_thread {
	size_t task;		  /* the awaiting task: its index in the snapshot */
	pid_t tid;		  /* as the process sees it; 0: not known */
	char *name;		  /* Python's name of the thread, NULL: none */
	struct frame_rec *frames; /* from the submitted function inward, outermost first */
	uint32_t nframes;
};

struct task_threads {
	struct task_thread *v;
	size_t n;
};

/* Walks every thread of t's process and keeps those that run an item of a pool whose
 * awaiting task is one of a's, still at the same address with the same coroutine; a
 * thread whose walk fails (it is ending, say) is left out. 0
 * (possibly none), -ENOTSUP when the version's workers cannot be found, or -errno. */
int taskthreads_read(const struct py_target *t, const struct atasks *a, struct task_threads *out);
void taskthreads_free(struct task_threads *tt);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* CPython 3.14 describes itself: _Py_DebugOffsets at the start of _PyRuntime gives the
 * layout of threads, frames, code, strings and generators, and _asyncio's .AsyncioDebug
 * section the task objects and where each thread keeps its running task and its list of
 * tasks. asyncbpf takes 3.14's layout from there instead of a generated table.
 *
 * Untested in the suite: no 3.14 interpreter is installed on the test machines. */
#ifndef ASYNCBPF_PY314_H
#define ASYNCBPF_PY314_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../bpf/asyncbpf.h"

struct py_target;

/* What 3.14's .AsyncioDebug and _Py_DebugOffsets say about tasks, as asyncbpf uses it. */
struct py314_asyncio {
	uint64_t task_name, task_coro, task_node, task_awaited_by, task_awaited_by_is_set;
	uint64_t task_is_task, task_size;
	uint64_t interp_tasks_head; /* PyInterpreterState.asyncio_tasks_head (llist_node) */
	uint64_t tstate_tasks_head; /* _PyThreadStateImpl.asyncio_tasks_head (llist_node) */
	uint64_t tstate_running_task;
	uint64_t llist_next;
	uint64_t set_used, set_table, set_mask; /* PySetObject */
};

/* Fills proc->layout and proc->async from the _Py_DebugOffsets of the 3.14 runtime at
 * proc->runtime in pid. 0, or -1 with a one-line reason (naming no pid). */
int py314_layout(pid_t pid, uint32_t version_hex, struct py_proc *proc, char *why, size_t len);

/* Reads the asyncio offsets: the .AsyncioDebug section of the _asyncio extension mapped in
 * the process (or of the runtime's binary when _asyncio is built in), checked against the
 * task layout py314_layout gave, and the runtime's _Py_DebugOffsets. 0, -ENOENT while
 * _asyncio is not loaded, or -errno; why says which. */
int py314_asyncio(const struct py_target *t, struct py314_asyncio *out, char *why, size_t len);

/* File (under /proc/PID/root) and offset of _asyncio's Task.__init__ for a uprobe: from
 * .symtab, so a stripped _asyncio gives -ENOENT. */
int py314_task_init(const struct py_target *t, char *path, size_t len, uint64_t *offset);

#endif

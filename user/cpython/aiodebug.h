/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* CPython 3.14+ describes its asyncio tasks: _asyncio's .AsyncioDebug section gives the task
 * object's offsets and where each thread and interpreter keep their list of tasks; the
 * runtime's _Py_DebugOffsets (pydebug.h) the list and set layouts. */
#ifndef ASYNCBPF_AIODEBUG_H
#define ASYNCBPF_AIODEBUG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/asyncbpf.h"

struct py_target;

/* What .AsyncioDebug and _Py_DebugOffsets say about tasks, as asyncbpf uses it. */
struct aiodebug {
	uint64_t task_name, task_coro, task_node, task_awaited_by, task_awaited_by_is_set;
	uint64_t task_is_task, task_size;
	uint64_t interp_tasks_head; /* PyInterpreterState.asyncio_tasks_head (llist_node) */
	uint64_t tstate_tasks_head; /* _PyThreadStateImpl.asyncio_tasks_head (llist_node) */
	uint64_t tstate_running_task;
	uint64_t llist_next;
	uint64_t set_used, set_table, set_mask; /* PySetObject */
};

/* Reads the asyncio offsets: the .AsyncioDebug section of the _asyncio extension mapped in
 * the process (or of the runtime's binary when _asyncio is built in), checked against the
 * object model's task layout, and the runtime's _Py_DebugOffsets. 0, or -errno with why
 * saying which file and what (-ENOENT: no section anywhere). */
int aiodebug_read(const struct py_target *t, struct aiodebug *out, char *why, size_t len);

#endif

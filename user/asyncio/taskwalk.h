/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The userspace walker (cpython/vmwalk.h) with asyncio's task tables: the task walk looks
 * up the tables set with vmwalk_taskmaps() (per thread), as the BPF walk looks up its
 * maps. */
#ifndef ASYNCBPF_TASKWALK_H
#define ASYNCBPF_TASKWALK_H

#include "asyncio/taskmaps.h"

static _Thread_local const struct taskmaps *vmwalk_maps;
static _Thread_local struct task_id vmwalk_id;
static _Thread_local struct task_link vmwalk_link;

/* The asyncio tables the task walk looks up; NULL (the default): no task is known. */
static inline __attribute__((unused)) void vmwalk_taskmaps(const struct taskmaps *m)
{
	vmwalk_maps = m;
}

static inline __attribute__((unused)) const struct task_id *pw_coro_task(__u32 pid, __u64 coro)
{
	return vmwalk_maps && !tm_get_coro_task(vmwalk_maps, pid, coro, &vmwalk_id) ? &vmwalk_id
										    : NULL;
}

static inline __attribute__((unused)) int pw_task_serial(__u32 pid, __u64 task, __u64 *serial)
{
	return vmwalk_maps ? tm_get_serial(vmwalk_maps, pid, task, serial) : -1;
}

static inline __attribute__((unused)) const struct task_link *pw_task_link(__u32 pid, __u64 task)
{
	return vmwalk_maps && !tm_get_link(vmwalk_maps, pid, task, &vmwalk_link) ? &vmwalk_link
										 : NULL;
}

#define VMWALK_TASKS
#include "cpython/vmwalk.h"

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* bpf/pywalk.h compiled for userspace over process_vm_readv: the same walk the BPF
 * sampler does, reading the process set with vmwalk_target() (per thread). */
#ifndef ASYNCBPF_VMWALK_H
#define ASYNCBPF_VMWALK_H

#include <string.h>
#include <sys/types.h>

#include "memread.h"
#include "taskmaps.h"

static _Thread_local pid_t vmwalk_pid;
static _Thread_local const struct taskmaps *vmwalk_maps;

static inline __attribute__((unused)) void vmwalk_target(pid_t pid)
{
	vmwalk_pid = pid;
}

/* The asyncio tables the task walk looks up; NULL (the default): no task is known. */
static inline __attribute__((unused)) void vmwalk_taskmaps(const struct taskmaps *m)
{
	vmwalk_maps = m;
}

static _Thread_local struct task_id vmwalk_id;
static _Thread_local struct task_link vmwalk_link;

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

struct pw_reader;

/* the process set with vmwalk_target(): no reader handle (NULL) */
static inline __attribute__((unused)) int pw_read(struct pw_reader *r, void *dst, __u32 len,
						  __u64 addr)
{
	(void)r;
	return mem_read(vmwalk_pid, addr, dst, len) ? -1 : 0;
}

#include "pywalk.h"

#endif

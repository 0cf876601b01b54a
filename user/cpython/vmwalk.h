/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* bpf/pywalk.h compiled for userspace over process_vm_readv: the same walk the BPF
 * sampler does, reading the process set with vmwalk_target() (per thread). It knows no
 * asyncio task unless the includer defines VMWALK_TASKS and pywalk.h's three task lookups
 * first, as asyncio/taskwalk.h does over asyncio's task tables. */
#ifndef ASYNCBPF_VMWALK_H
#define ASYNCBPF_VMWALK_H

#include <string.h>
#include <sys/types.h>

#include "bpf/asyncbpf.h"
#include "process/memread.h"

/* glibc x86-64: offsetof(struct pthread, tid); pthread_self(), a thread state's
 * thread_id, is the struct's address. Check it on each process before use. */
#define PTHREAD_TID_OFF 0x2d0

static _Thread_local pid_t vmwalk_pid;

static inline __attribute__((unused)) void vmwalk_target(pid_t pid)
{
	vmwalk_pid = pid;
}

#ifndef VMWALK_TASKS
static inline __attribute__((unused)) const struct task_id *pw_coro_task(__u32 pid, __u64 coro)
{
	(void)pid;
	(void)coro;
	return NULL;
}

static inline __attribute__((unused)) int pw_task_serial(__u32 pid, __u64 task, __u64 *serial)
{
	(void)pid;
	(void)task;
	(void)serial;
	return -1;
}

static inline __attribute__((unused)) const struct task_link *pw_task_link(__u32 pid, __u64 task)
{
	(void)pid;
	(void)task;
	return NULL;
}
#endif

/* Each read is a system call, whatever its size: a page is read whole at once. */
#define PW_PAGES_RAW(dst, len, addr) (mem_read(vmwalk_pid, addr, dst, len) ? -1 : 0)
#define PW_PAGES_COPY(dst, len, src) (memcpy(dst, src, len), 0)
#include "bpf/pwpages.h"

/* The process set with vmwalk_target(); a walk through a reader handle reads its pages
 * through the handle's cache (pw_pages_reset it before each walk), NULL reads directly. */
struct pw_reader {
	struct pw_pages pages;
};

static inline __attribute__((unused)) int pw_read(struct pw_reader *r, void *dst, __u32 len,
						  __u64 addr)
{
	if (r)
		return pw_pages_read(&r->pages, dst, len, addr);
	return mem_read(vmwalk_pid, addr, dst, len) ? -1 : 0;
}

static inline __attribute__((unused)) const __u8 *pw_view(struct pw_reader *r, __u8 *buf, __u32 len,
							  __u64 addr)
{
	if (r)
		return pw_pages_view(&r->pages, buf, len, addr);
	return mem_read(vmwalk_pid, addr, buf, len) ? NULL : buf;
}

#include "bpf/pywalk.h"

#endif

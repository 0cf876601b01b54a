// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Process lifecycle: exec, fork and exit of processes, so userspace examines a new
 * Python process as it starts and frees the state of one that ended. The sampler's
 * procs and tstates maps are shared (userspace reuses their fds): an exec or an exit
 * removes the process from procs at once, so no sample reads a new image with the old
 * layout, and an exiting thread's cached thread state goes with it. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "asyncbpf.h"
#include "lcevent.h"
#include "maps.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} lc_events SEC(".maps");

/* events the ring buffer had no room for: userspace rescans /proc when it grows */
__u64 lost;

static __always_inline void emit(__u32 kind, __u32 pid, __u32 ppid, __u32 tracked)
{
	struct lc_event *e = bpf_ringbuf_reserve(&lc_events, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return;
	}
	e->kind = kind;
	e->pid = pid;
	e->ppid = ppid;
	e->tracked = tracked;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

/* BTF tracepoints (raw, typed): no tracefs needed to attach them */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	__u32 tracked = !bpf_map_delete_elem(&procs, &pid);

	emit(LC_EXEC, pid, 0, tracked);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32;

	if (!bpf_map_lookup_elem(&procs, &pid))
		return 0;
	bpf_map_delete_elem(&tstates, &id);
	/* signal->live counts the threads that have not begun exiting */
	if (BPF_CORE_READ(task, signal, live.counter))
		return 0;
	bpf_map_delete_elem(&procs, &pid);
	emit(LC_EXIT, pid, 0, 1);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid);

	if (BPF_CORE_READ(child, pid) != BPF_CORE_READ(child, tgid) ||
	    !bpf_map_lookup_elem(&procs, &ppid))
		return 0;
	emit(LC_FORK, BPF_CORE_READ(child, tgid), ppid, 0);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* CPU sampler: on each perf cpu-clock tick in a known Python process, find the thread's
 * PyThreadState and walk its frames into a ring-buffer record. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#define PW_INLINE __always_inline
#define PW_LOAD(type, buf, off) (*(const type *)((const __u8 *)(buf) + (off)))
#define PW_LOOP(max, fn, ctx) bpf_loop(max, fn, ctx, 0)

static __always_inline int pw_read(void *dst, __u32 len, __u64 addr)
{
	return bpf_probe_read_user(dst, len, (const void *)addr);
}

#include "pywalk.h"

#define RB_BYTES (8 << 20)
#define RB_WAKE_BYTES (RB_BYTES / 4)

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct scratch {
	struct py_sample s;
	struct pw_scratch pw;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PROCS);
	__type(key, __u32);
	__type(value, struct py_proc);
} procs SEC(".maps");

/* (tgid << 32 | tid) -> PyThreadState, revalidated on every use. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} tstates SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RB_BYTES);
} events SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		(*v)++;
}

static __always_inline __u64 thread_state(const struct py_proc *p, __u64 key, __u64 thread_id)
{
	__u64 *cached = bpf_map_lookup_elem(&tstates, &key);
	__u64 ts;

	if (cached && pw_tstate_owned_by(p, *cached, thread_id))
		return *cached;
	stat_inc(STAT_TSTATE_LOOKUP);
	ts = pw_find_tstate(p, thread_id, 0);
	if (ts)
		bpf_map_update_elem(&tstates, &key, &ts, BPF_ANY);
	else if (cached)
		bpf_map_delete_elem(&tstates, &key);
	return ts;
}

SEC("perf_event")
int sample_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, zero = 0, n = 0, flags = 0;
	__u64 size, wake;
	struct task_struct *task;
	struct py_proc *p;
	struct scratch *sc;
	__u64 ts, frame;

	stat_inc(STAT_SAMPLES);
	if (!pid)
		return 0;
	p = bpf_map_lookup_elem(&procs, &pid);
	if (!p)
		return 0;
	stat_inc(STAT_PYTHON);
	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!sc)
		return 0;

	/* pthread_self() is the thread pointer, which CPython stores as tstate->thread_id:
	 * this finds the state of threads that released the GIL too. */
	task = (struct task_struct *)bpf_get_current_task();
	ts = thread_state(p, id, BPF_CORE_READ(task, thread.fsbase));
	if (!ts) {
		flags |= SAMPLE_NO_TSTATE;
		stat_inc(STAT_NO_TSTATE);
	} else if (pw_current_frame(&p->layout, ts, &frame)) {
		flags |= SAMPLE_READ_ERR;
	} else {
		n = pw_walk_frames(p, frame, sc->s.frames, &sc->pw, &flags);
		/* an idle state (see pw_find_match) may be a subinterpreter's: look again */
		if (!frame)
			bpf_map_delete_elem(&tstates, &id);
	}
	if (flags & SAMPLE_TRUNCATED)
		stat_inc(STAT_TRUNCATED);
	if (flags & SAMPLE_READ_ERR)
		stat_inc(STAT_READ_ERR);

	sc->s.hdr.time_ns = bpf_ktime_get_ns();
	sc->s.hdr.tstate = ts;
	sc->s.hdr.pid = pid;
	sc->s.hdr.tid = (__u32)id;
	sc->s.hdr.flags = flags;
	bpf_get_current_comm(sc->s.hdr.comm, sizeof(sc->s.hdr.comm));
	sc->s.hdr.nframes = n;
	size = sizeof(struct sample_hdr) + n * sizeof(struct frame_rec);
	/* keep clang from folding the bound into n, which the verifier then loses */
	asm volatile("" : "+r"(size));
	if (size > sizeof(struct py_sample))
		size = sizeof(struct py_sample);
	/* userspace drains on a timer; waking it per record costs more than the walk */
	wake = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > RB_WAKE_BYTES ? BPF_RB_FORCE_WAKEUP
									  : BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&events, &sc->s, size, wake))
		stat_inc(STAT_LOST);
	return 0;
}

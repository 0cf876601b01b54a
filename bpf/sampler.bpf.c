// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* CPU sampler: on each perf cpu-clock tick in a known Python process, find the thread's
 * PyThreadState and walk its frames into a ring-buffer record. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#define PW_INLINE		__always_inline
#define PW_LOAD(type, buf, off) (*(const type *)((const __u8 *)(buf) + (off)))
#define PW_LOOP(max, fn, ctx)	bpf_loop(max, fn, ctx, 0)

static __always_inline int pw_read(void *dst, __u32 len, __u64 addr)
{
	return bpf_probe_read_user(dst, len, (const void *)addr);
}

#include "pywalk.h"

#define RB_BYTES      (8 << 20)
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

/* [0] for samples, [1] for task creation (a uprobe may run under a sample on the CPU) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
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

/* coroutine -> the task running it, from userspace snapshots and task creation */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 17);
	__type(key, struct task_key);
	__type(value, struct task_id);
} coro_task SEC(".maps");

/* task address -> serial of the task that lives there now */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 17);
	__type(key, struct task_key);
	__type(value, __u64);
} task_serials SEC(".maps");

/* serials of tasks seen created; userspace numbers the others from SERIAL_USER up */
__u64 next_serial;

/* task -> the task it is linked to: an awaiter (userspace) or its creator */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 17);
	__type(key, struct task_key);
	__type(value, struct task_link);
} task_links SEC(".maps");

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

/* Copies a task's name (a short ASCII str, or 3.12+'s number of an unnamed task) into
 * buf; returns the name object. */
static __always_inline __u64 copy_name(const struct py_proc *p, __u64 task, __u32 *kind, char *buf)
{
	const struct py_layout *y = &p->layout;
	__u64 name = 0, type = 0, len = 0;
	__u32 state = 0;

	*kind = NAME_NONE;
	if (pw_read(&name, 8, task + p->async.task_name) || !name ||
	    pw_read(&type, 8, name + y->object_type))
		return name;
	if (type == p->long_type && p->long_type) {
		/* ob_size or lv_tag, then the first digits: enough for any task counter */
		if (!pw_read(buf, TASK_NAME_LEN, name + y->bytes_size))
			*kind = NAME_LONG;
		return name;
	}
	if (type != p->str_type || !p->str_type || pw_read(&state, 4, name + y->unicode_state) ||
	    pw_read(&len, 8, name + y->unicode_length))
		return name;
	if (!(state >> y->unicode_compact_bit & 1) || !(state >> y->unicode_ascii_bit & 1) ||
	    len >= TASK_NAME_LEN)
		return name;
	__builtin_memset(buf, 0, TASK_NAME_LEN);
	if (!pw_read(buf, len & (TASK_NAME_LEN - 1), name + y->unicode_ascii_size))
		*kind = NAME_ASCII;
	return name;
}

static __always_inline __u64 serial_of(__u32 pid, __u64 task)
{
	struct task_key key = { .pid = pid, .addr = task };
	__u64 *serial = bpf_map_lookup_elem(&task_serials, &key);

	return serial ? *serial : 0;
}

/* Is the task at addr, running coro, still the task numbered serial? */
static __always_inline int task_alive(const struct py_proc *p, __u32 pid, __u64 addr,
				      __u64 coro, __u64 serial)
{
	__u64 now = 0;

	if (serial && serial_of(pid, addr) != serial)
		return 0;
	return !pw_read(&now, 8, addr + p->async.task_coro) && now == coro;
}

/* Is gen the coroutine of a live task? Returns the task (0 if not) and its serial. */
static __always_inline __u64 task_of(const struct py_proc *p, __u32 pid, __u64 gen,
				     __u64 *serial)
{
	struct task_key key = { .pid = pid, .addr = gen };
	struct task_id *id = bpf_map_lookup_elem(&coro_task, &key);
	__u64 t, sn;

	if (!id)
		return 0;
	t = id->task;
	sn = id->serial;
	if (!task_alive(p, pid, t, gen, sn))
		return 0;
	*serial = sn;
	return t;
}

struct find_running {
	const struct py_proc *p;
	struct pw_scratch *s;
	__u32 pid, idx;
	__u64 task, coro, serial;
};

static long find_running_step(__u32 i, void *ctx)
{
	struct find_running *f = ctx;
	__u32 k = i & (PW_MAX_GENS - 1);
	__u64 t;

	if (i >= f->s->ngens)
		return 1;
	t = task_of(f->p, f->pid, f->s->gen[k], &f->serial);
	if (!t)
		return 0;
	f->task = t;
	f->coro = f->s->gen[k];
	f->idx = f->s->gen_idx[k];
	return 1;
}

struct task_walk {
	const struct py_proc *p;
	struct py_sample *smp;
	struct pw_scratch *s;
	__u32 pid, n, used; /* tasks recorded, frames used */
	__u64 cur, cur_coro, cur_serial;
	__u32 cur_flags;
	const struct task_link *link; /* how cur was reached, NULL for the running task */
};

static long in_chain_step(__u32 i, void *ctx)
{
	struct task_walk *w = ctx;

	if (i >= w->n)
		return 1;
	if (w->smp->tasks[i & (MAX_TASKS - 1)].addr == w->cur) {
		w->cur_flags |= TASK_CYCLE;
		return 1;
	}
	return 0;
}

/* Records the current task and steps to its parent; awaiters' coroutines are walked. */
static long task_step(__u32 i, void *ctx)
{
	struct task_walk *w = ctx;
	const struct py_proc *p = w->p;
	struct task_key key = { .pid = w->pid, .addr = w->cur };
	struct task_link *link;
	struct task_rec *t;
	__u32 n = w->n, flags = 0, nf = 0;
	__u64 awaited;

	if (n >= MAX_TASKS)
		return 1;
	t = &w->smp->tasks[n & (MAX_TASKS - 1)];
	t->addr = w->cur;
	t->coro = w->cur_coro;
	t->serial = w->cur_serial;
	t->name_obj = 0;
	t->flags = w->cur_flags;
	t->first = w->used;
	t->nframes = 0;
	w->n = n + 1;
	if (w->cur_flags & TASK_ENDED) {
		/* gone: the name its creation link recorded, if any */
		t->name_kind = NAME_NONE;
		if (w->link) {
			t->name_kind = w->link->name_kind;
			__builtin_memcpy(t->name, w->link->name, TASK_NAME_LEN);
		}
		return 1;
	}
	t->name_obj = copy_name(p, w->cur, &t->name_kind, t->name);
	if (w->cur_flags & TASK_CYCLE)
		return 1;
	if (i > 0) {
		nf = pw_walk_coro(p, w->cur_coro, w->smp->frames, w->used, PW_FRAMES_CAP, w->s,
				  &awaited, &flags);
		t->nframes = nf;
		w->used += nf;
		if (flags & SAMPLE_TRUNCATED)
			t->flags |= TASK_TRUNCATED;
	}
	link = bpf_map_lookup_elem(&task_links, &key);
	if (!link || link->child_serial != w->cur_serial || link->child_coro != w->cur_coro)
		return 1;
	if (n + 1 >= MAX_TASKS) {
		t->flags |= TASK_MORE;
		return 1;
	}
	w->link = link;
	w->cur = link->parent;
	w->cur_coro = link->parent_coro;
	w->cur_serial = link->parent_serial;
	w->cur_flags = link->kind == LINK_ORIGIN ? TASK_ORIGIN : 0;
	if (!task_alive(p, w->pid, w->cur, w->cur_coro, w->cur_serial))
		w->cur_flags |= TASK_ENDED;
	bpf_loop(MAX_TASKS, in_chain_step, w, 0);
	return 0;
}

/* If the thread runs an asyncio task: which, and the chain of tasks awaiting it. */
static __always_inline void walk_tasks(const struct py_proc *p, __u32 pid, struct scratch *sc)
{
	struct find_running f = { .p = p, .s = &sc->pw, .pid = pid };
	struct task_walk w = { .p = p, .smp = &sc->s, .s = &sc->pw, .pid = pid };

	sc->s.hdr.ntasks = 0;
	sc->s.hdr.ncoro = 0;
	sc->s.hdr.running_idx = RUNNING_NONE;
	if (!p->async.yf_kind || !sc->pw.ngens)
		return;
	bpf_loop(PW_MAX_GENS, find_running_step, &f, 0);
	if (!f.task)
		return;
	stat_inc(STAT_TASK);
	w.cur = f.task;
	w.cur_coro = f.coro;
	w.cur_serial = f.serial;
	w.used = sc->s.hdr.nframes;
	bpf_loop(MAX_TASKS, task_step, &w, 0);
	sc->s.hdr.running_idx = f.idx;
	sc->s.hdr.ntasks = w.n;
	sc->s.hdr.ncoro = w.used - sc->s.hdr.nframes;
}

/* Walks the current thread's frames into sc; returns the thread state (0: none). */
static __always_inline __u64 walk_thread(const struct py_proc *p, __u64 id, struct scratch *sc,
					 __u32 *n, __u32 *flags)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 ts, frame;

	sc->pw.ngens = 0;
	/* pthread_self() is the thread pointer, which CPython stores as tstate->thread_id:
	 * this finds the state of threads that released the GIL too. */
	ts = thread_state(p, id, BPF_CORE_READ(task, thread.fsbase));
	if (!ts) {
		*flags |= SAMPLE_NO_TSTATE;
	} else if (pw_current_frame(&p->layout, ts, &frame)) {
		*flags |= SAMPLE_READ_ERR;
	} else {
		*n = pw_walk_frames(p, frame, sc->s.frames, &sc->pw, flags);
		/* an idle state (see pw_find_match) may be a subinterpreter's: look again */
		if (!frame)
			bpf_map_delete_elem(&tstates, &id);
	}
	return ts;
}

/* _asyncio.Task's tp_init(self, args, kwargs), attached per process by userspace: the
 * new task is linked to the task running on this thread, its creator, and its
 * coroutine (args[0]) is known at once. A fire-and-forget child keeps this link after
 * its creator has returned, when nothing in memory relates them any more. */
SEC("uprobe")
int BPF_KPROBE(task_init, __u64 self, __u64 args)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, one = 1, n = 0, flags = 0;
	struct find_running f = {};
	struct task_key key = { .pid = pid };
	struct task_link link = { .kind = LINK_ORIGIN };
	struct task_id id_new;
	struct py_proc *p = bpf_map_lookup_elem(&procs, &pid);
	struct scratch *sc;
	__s64 nargs = 0;
	__u64 coro = 0;

	if (!p || !p->async.yf_kind)
		return 0;
	/* PyTupleObject: ob_size at 16, ob_item at 24 on every supported 64-bit CPython */
	if (bpf_probe_read_user(&nargs, 8, (void *)(args + 16)) || nargs < 1 ||
	    bpf_probe_read_user(&coro, 8, (void *)(args + 24)) || !coro)
		return 0;
	id_new.task = self;
	id_new.serial = __sync_fetch_and_add(&next_serial, 1) + 1;
	key.addr = self;
	bpf_map_update_elem(&task_serials, &key, &id_new.serial, BPF_ANY);
	/* whatever link this address had belongs to a task that is gone */
	bpf_map_delete_elem(&task_links, &key);
	key.addr = coro;
	bpf_map_update_elem(&coro_task, &key, &id_new, BPF_ANY);
	stat_inc(STAT_TASK_CREATED);

	sc = bpf_map_lookup_elem(&scratch, &one);
	if (!sc || !walk_thread(p, id, sc, &n, &flags))
		return 0;
	f.p = p;
	f.s = &sc->pw;
	f.pid = pid;
	bpf_loop(PW_MAX_GENS, find_running_step, &f, 0);
	if (!f.task || f.task == self)
		return 0;
	link.child_serial = id_new.serial;
	link.child_coro = coro;
	link.parent = f.task;
	link.parent_coro = f.coro;
	link.parent_serial = f.serial;
	copy_name(p, f.task, &link.name_kind, link.name);
	key.addr = self;
	bpf_map_update_elem(&task_links, &key, &link, BPF_ANY);
	return 0;
}

SEC("perf_event")
int sample_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, zero = 0, n = 0, flags = 0;
	__u64 size, wake, ts;
	struct py_proc *p;
	struct scratch *sc;

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
	ts = walk_thread(p, id, sc, &n, &flags);
	if (flags & SAMPLE_NO_TSTATE)
		stat_inc(STAT_NO_TSTATE);
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
	walk_tasks(p, pid, sc);
	size = offsetof(struct py_sample, frames) +
	       (sc->s.hdr.nframes + sc->s.hdr.ncoro) * sizeof(struct frame_rec);
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

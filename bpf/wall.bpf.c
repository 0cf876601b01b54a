// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Wall-clock sampler. A perf event only fires for a thread that is on a CPU; a thread
 * blocked in a syscall and a task suspended in an await never get one. So userspace runs
 * this sleepable task iterator at each wall tick over the threads of one process: every
 * thread is walked whatever its state, reading the process's memory with
 * bpf_copy_from_user_task (which may fault pages in; bpf_probe_read_user cannot read
 * another process at all). The first thread visited also walks the suspended tasks
 * userspace listed for this tick, each with the chain of tasks awaiting it. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "wallsample.h"

static __always_inline void stat_inc(__u32 idx);

struct pw_reader;

/* r is the iterator's thread (ctx->task), carried through the walk as pywalk's reader
 * handle: a task pointer cannot be kept in a map or a global, but in the stack slots of
 * the loops' state the verifier keeps its type. */
static __always_inline int pw_read(struct pw_reader *r, void *dst, __u32 len, __u64 addr)
{
	stat_inc(WSTAT_READS);
	return bpf_copy_from_user_task(dst, len, (const void *)addr, (struct task_struct *)r, 0);
}

static __always_inline const struct task_id *pw_coro_task(__u32 pid, __u64 coro);
static __always_inline int pw_task_serial(__u32 pid, __u64 task, __u64 *serial);
static __always_inline const struct task_link *pw_task_link(__u32 pid, __u64 task);
#define PW_NAME_CACHE
/* a thread may run on another CPU while it is read (bpf_copy_from_user_task faults
 * pages in) */
#define PW_READS_RUNNING
struct pw_tasks;
__noinline int memo_hit(__u64 task, __u64 serial);
#define PW_MEMO_HIT(w) memo_hit((w)->cur, (w)->cur_serial)
/* one run at a time: the name cache's key can be a global */
#define NAME_KEY(r) (&name_key)
struct name_key name_key;

#include "pywalk.h"
/* the sampler's maps, shared with it: processes, thread states and the asyncio maps */
#define MAPS_WALK
#include "maps.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by userspace before each run: the suspended tasks to walk, once per run. */
struct wall_task tasks[WALL_MAX_TASKS];
__u32 ntasks;
__u32 tasks_pending;
/* The tasks created at or after births_after (when userspace made the list, which holds
 * the creations before it) are added after the listed ones, each kept with probability
 * birth_keep / 2^32, the rate at which the listed ones were chosen (all: 1 << 32). A task
 * created between the list and its walk would otherwise be missed at that tick, which
 * short tasks would lose a share of their lives to (the list-to-walk time over the life). */
__u64 births_after, birth_keep;
__u32 births_pending, nr_cpus;

#define HEAD_MAX 128

/* The tasks whose walk an emitted suspended-task chain of this run holds (WALL_MEMO_SKIP),
 * by address: 1,000 connections gathered by one task walk that task's chain once a tick,
 * not 1,000 times. Entries of another run (memo_run) are stale; memo_on only while the
 * suspended tasks are walked (the thread samples are not held for the join). A task's walk
 * is reused only within the run that made it: the run's samples stand for one tick, and
 * each of its walks reads its tasks at a moment of its own anyway. The task was proven
 * then (serial, coroutine), and its serial is in the key: a task freed and another made at
 * its address since has another. */
struct memo_slot memo[WALL_MEMO_SLOTS];
__u32 memo_run, memo_on;

/* A listed task's state, fut_waiter and coroutine, in one read: they lie within 100 bytes
 * of each other in the task object, and each read of another process's memory costs
 * about a microsecond here. */
struct task_head {
	__s32 state;
	__u64 waiter, coro;
};

struct scratch {
	struct wall_sample w;
	struct pw_scratch pw;
	__u8 head[HEAD_MAX]; /* a listed task's fields, fut_state to task_coro */
	struct task_head h;  /* off the stack: 6.1 allows 512 bytes for the calls together */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WSTAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} wstats SEC(".maps");

const __u32 zero_key;
__u32 proc_key;

/* Userspace drains it after every run: it needs to hold one process's tick. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 32 << 20);
} wall_events SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&wstats, &idx);

	if (v)
		(*v)++;
}

static __always_inline void name_stat(__u32 what)
{
	stat_inc(what == NAME_STAT_HIT ? WSTAT_NAME_HITS : WSTAT_NAME_COPIES);
}

static __always_inline __u32 memo_slot_of(__u64 task)
{
	return (__u32)((task >> 4) ^ (task >> 11)) & (WALL_MEMO_SLOTS - 1);
}

/* Global: verified once on its own, not in every state of the task loop that calls it. */
__noinline int memo_hit(__u64 task, __u64 serial)
{
	const struct memo_slot *m = &memo[memo_slot_of(task)];

	if (!memo_on || m->run != memo_run || m->task != task || m->serial != serial)
		return 0;
	stat_inc(WSTAT_MEMO_HITS);
	return 1;
}

struct memo_put {
	const struct py_sample *s;
	__u32 ok;
};

static long memo_check_step(__u32 i, void *ctx)
{
	struct memo_put *m = ctx;

	if (i >= m->s->hdr.ntasks)
		return 1;
	if (m->s->tasks[i & (MAX_TASKS - 1)].flags & WALL_MEMO_BLOCK) {
		m->ok = 0;
		return 1;
	}
	return 0;
}

static long memo_put_step(__u32 i, void *ctx)
{
	struct memo_put *m = ctx;
	const struct task_rec *t;
	struct memo_slot *e;

	if (i >= m->s->hdr.ntasks)
		return 1;
	t = &m->s->tasks[i & (MAX_TASKS - 1)];
	if (!i || t->flags & WALL_MEMO_SKIP)
		return 0;
	e = &memo[memo_slot_of(t->addr)];
	e->task = t->addr;
	e->serial = t->serial;
	e->run = memo_run;
	return 0;
}

/* An emitted chain's tasks, for the later chains of the run (see struct memo_slot). */
static __always_inline void memo_put(const struct py_sample *s)
{
	struct memo_put m = { .s = s, .ok = !(s->hdr.flags & SAMPLE_READ_ERR) };

	bpf_loop(MAX_TASKS, memo_check_step, &m, 0);
	if (m.ok)
		bpf_loop(MAX_TASKS, memo_put_step, &m, 0);
}

static __always_inline void walk_chain(struct pw_tasks *w, struct scratch *sc)
{
	w->smp = &sc->w.s;
	w->s = &sc->pw;
	bpf_loop(MAX_TASKS, pw_task_step, w, 0);
	sc->w.s.hdr.ntasks = w->n;
	sc->w.s.hdr.ncoro = w->used - sc->w.s.hdr.nframes;
}

static __always_inline int emit(struct scratch *sc)
{
	__u64 size = offsetof(struct wall_sample, s.frames) +
		     (sc->w.s.hdr.nframes + sc->w.s.hdr.ncoro) * sizeof(struct frame_rec);

	asm volatile("" : "+r"(size));
	if (size > sizeof(struct wall_sample))
		size = sizeof(struct wall_sample);
	if (sc->w.s.hdr.flags & SAMPLE_READ_ERR)
		stat_inc(WSTAT_READ_ERR);
	if (sc->w.s.hdr.flags & SAMPLE_TRUNCATED)
		stat_inc(WSTAT_TRUNCATED);
	if (bpf_ringbuf_output(&wall_events, &sc->w, size, BPF_RB_NO_WAKEUP)) {
		stat_inc(WSTAT_LOST);
		return -1;
	}
	return 0;
}

/* Does the suspended task await a thread pool's job still queued? Proven as the pool link
 * is, each object held by the one before: the future the task awaits (its fut_waiter,
 * read with the task's head), the callback wrap_future put first on it (its code
 * checked), the concurrent future in that callback's closure, whose _state is the
 * 'PENDING' str until a worker takes the job. A function of its own: the task loop's
 * frame has no room for these reads. */
static __noinline int task_queued(struct pw_reader *r, const struct py_proc *p, __u64 waiter,
				  __u64 *v, const struct pw_scratch *s)
{
	const struct py_work *k = &p->work;

	if (!k->check_cancel_code || !k->pending_state || !waiter)
		return 0;
	v[0] = waiter;
	/* the first callback as the task's walk read it with the future, else read now */
	if (s->cb0_of == waiter)
		v[1] = s->cb0;
	else if (pw_read(r, &v[1], 8, v[0] + p->async.fut_callback0))
		return 0;
	if (!v[1] || pw_read(r, &v[2], 8, v[1] + k->func_code) || v[2] != k->check_cancel_code ||
	    pw_read(r, &v[2], 8, v[1] + k->func_closure) || !v[2] ||
	    pw_read(r, &v[3], 8, v[2] + p->async.tuple_items + 8 * (__u64)k->check_cell) || !v[3] ||
	    pw_read(r, &v[0], 8, v[3] + k->cell_ref) || !v[0] ||
	    pw_attr(r, v[0], &k->future_state, &v[1]))
		return 0;
	return v[1] == k->pending_state;
}

static __always_inline int read_head(struct pw_reader *r, const struct py_proc *p, __u64 task,
				     __u8 *buf, struct task_head *h)
{
	const struct py_async_layout *a = &p->async;
	__u32 len = a->task_coro + 8 - a->fut_state;
	__u64 w = a->task_fut_waiter - a->fut_state, c = a->task_coro - a->fut_state;

	if (len > HEAD_MAX || w > HEAD_MAX - 8 || c > HEAD_MAX - 8 || a->task_coro < a->fut_state ||
	    a->task_fut_waiter < a->fut_state)
		return -1;
	asm volatile("%0 &= 0x7f" : "+r"(len));
	if (!len || pw_read(r, buf, len, task + a->fut_state))
		return -1;
	asm volatile("%0 &= 0x7f" : "+r"(w));
	asm volatile("%0 &= 0x7f" : "+r"(c));
	if (w > HEAD_MAX - 8 || c > HEAD_MAX - 8)
		return -1;
	h->state = *(__s32 *)buf;
	h->waiter = *(__u64 *)(buf + w);
	h->coro = *(__u64 *)(buf + c);
	return 0;
}

/* Does the task await another task (fut_waiter a task of ours: its coroutine maps back to
 * it)? Then it is drawn in that task's chain, whose link names its creator or awaiter. A
 * snapshot's leaf may have come to await a task since; what gather and task groups hold
 * only a snapshot sees. */
static __noinline int awaits_task(struct pw_reader *r, const struct py_proc *p, __u32 pid,
				  __u64 waiter, __u64 *v)
{
	const struct task_id *id;

	/* the map first: most tasks await a future that was never a task, and a read of
	 * another process's memory costs more than a lookup */
	if (!waiter || pw_task_serial(pid, waiter, &v[2]) ||
	    pw_read(r, &v[1], 8, waiter + p->async.task_coro) || !v[1])
		return 0;
	id = pw_coro_task(pid, v[1]);
	return id && id->task == waiter && v[2] == id->serial;
}

struct births {
	__u32 pid, cpu, head;
};

/* One slot of a CPU's ring, newest first: 1 to go on to an older one. */
static long birth_step(__u32 m, void *ctx)
{
	struct births *b = ctx;
	__u32 k = (b->head - 1 - m) & (BIRTH_SLOTS - 1), gen, n;
	const struct task_birth *e = bpf_map_lookup_percpu_elem(&task_births, &k, b->cpu);
	struct task_birth v;

	if (!e)
		return 1;
	/* the seqlock's read side: the slot's CPU may be writing it now */
	gen = *(volatile __u32 *)&e->gen;
	asm volatile("" ::: "memory");
	v = *e;
	asm volatile("" ::: "memory");
	if ((gen & 1) || *(volatile __u32 *)&e->gen != gen) {
		stat_inc(WSTAT_BIRTHS_MISSED);
		return 0;
	}
	if (v.ns < births_after)
		return 1;
	/* the whole ring is newer than the list: older creations were overwritten */
	if (m == BIRTH_SLOTS - 1)
		stat_inc(WSTAT_BIRTHS_MISSED);
	if (v.pid != b->pid || (birth_keep <= 0xffffffffULL && bpf_get_prandom_u32() >= birth_keep))
		return 0;
	n = ntasks;
	if (n >= WALL_MAX_TASKS) {
		stat_inc(WSTAT_BIRTHS_MISSED);
		return 0;
	}
	tasks[n & (WALL_MAX_TASKS - 1)] = (struct wall_task){
		.task = v.task, .coro = v.coro, .serial = v.serial, .flags = WALL_TASK_NEW
	};
	ntasks = n + 1;
	stat_inc(WSTAT_BIRTHS);
	return 0;
}

static long birth_cpu(__u32 cpu, void *ctx)
{
	struct births *b = ctx;
	__u32 k = BIRTH_SLOTS;
	const struct task_birth *h;

	if (cpu >= nr_cpus)
		return 1;
	h = bpf_map_lookup_percpu_elem(&task_births, &k, cpu);
	if (!h)
		return 0;
	/* slots below the head are whole: it is raised after the slot is written */
	b->head = *(volatile __u32 *)&h->gen;
	b->cpu = cpu;
	bpf_loop(b->head < BIRTH_SLOTS ? b->head : BIRTH_SLOTS, birth_step, b, 0);
	return 0;
}

/* Its own function: verified once, not in every state of the task loop. */
static __noinline void add_births(__u32 pid)
{
	struct births b = { .pid = pid };

	bpf_loop(WALL_BIRTH_CPUS, birth_cpu, &b, 0);
}

struct suspended {
	struct pw_reader *r;
	const struct py_proc *p;
	struct scratch *sc;
	__u32 pid, tid;
};

static long suspended_step(__u32 i, void *ctx)
{
	struct suspended *x = ctx;
	struct scratch *sc = x->sc;
	struct wall_task *wt;
	struct pw_tasks w = { .r = x->r, .p = x->p, .pid = x->pid, .own = 1 };
	struct task_head *h = &sc->h;
	__u64 k = i, sn = 0;

	/* after the listed tasks, the ones created since the list was made */
	if (i >= ntasks && births_pending) {
		births_pending = 0;
		add_births(x->pid);
	}
	if (i >= ntasks || i >= WALL_MAX_TASKS)
		return 1;
	/* masked where the verifier sees it: clang would reuse the unmasked i */
	asm volatile("%0 &= 0x1fff" : "+r"(k));
	wt = &tasks[k];
	/* as pw_task_alive, with the task's fields read at once */
	if ((wt->serial && (pw_task_serial(x->pid, wt->task, &sn) || sn != wt->serial)) ||
	    read_head(x->r, x->p, wt->task, sc->head, h) || h->coro != wt->coro) {
		stat_inc(WSTAT_TASK_GONE);
		return 0;
	}
	/* a finished task that something still references is not waiting */
	if (h->state != 0) {
		stat_inc(WSTAT_TASK_DONE);
		return 0;
	}
	if (awaits_task(x->r, x->p, x->pid, h->waiter, sc->pw.work_read)) {
		stat_inc(WSTAT_TASK_AWAITS);
		return 0;
	}
	sc->w.kind = WALL_TASK;
	sc->w.idx = i;
	sc->w.cpu_ns = 0;
	sc->w.s.hdr.time_ns = bpf_ktime_get_ns();
	sc->w.s.hdr.tstate = 0;
	sc->w.s.hdr.pid = x->pid;
	sc->w.s.hdr.tid = x->tid;
	sc->w.s.hdr.flags = SAMPLE_SUSPENDED;
	sc->w.s.hdr.nframes = 0;
	sc->w.s.hdr.running_idx = RUNNING_NONE;
	w.cur = wt->task;
	w.cur_coro = wt->coro;
	w.cur_serial = wt->serial;
	/* from memory, as in thread_tasks: a known 0 lets the verifier track the frame count
	 * through the task walk, and its states multiply past the limit */
	w.used = *(volatile __u32 *)&sc->w.s.hdr.nframes;
	sc->pw.first_running = 0;
	sc->pw.cb0_of = 0;
	walk_chain(&w, sc);
	/* running now: its thread's sample shows it */
	if (sc->pw.first_running) {
		stat_inc(WSTAT_TASK_ACTIVE);
		return 0;
	}
	if (task_queued(x->r, x->p, h->waiter, sc->pw.work_read, &sc->pw)) {
		sc->w.s.hdr.flags |= SAMPLE_QUEUED;
		stat_inc(WSTAT_QUEUED);
	}
	stat_inc(WSTAT_TASKS);
	if (!emit(sc))
		memo_put(&sc->w.s);
	return 0;
}

static __always_inline void walk_suspended(struct pw_reader *r, const struct py_proc *p, __u32 pid,
					   __u32 tid, struct scratch *sc)
{
	struct suspended x = { .r = r, .p = p, .sc = sc, .pid = pid, .tid = tid };

	memo_run++;
	memo_on = 1;
	bpf_loop(WALL_MAX_TASKS, suspended_step, &x, 0);
	memo_on = 0;
}

/* Its own stack frame: the suspended-task walk that follows nests deeper. */
static __noinline void sample_thread(struct task_struct *task, const struct py_proc *p,
				     struct scratch *sc)
{
	struct pw_reader *r = (struct pw_reader *)task;
	__u32 pid = task->tgid, tid = task->pid, n = 0, flags = 0;
	__u64 ts, frame = 0, key = (__u64)pid << 32 | tid;

	pw_scratch_reset(&sc->pw);
	ts = pw_cached_tstate(r, p, key, task->thread.fsbase, NULL);
	if (!ts) {
		flags |= SAMPLE_NO_TSTATE;
		stat_inc(WSTAT_NO_TSTATE);
	} else if (pw_current_frame(r, &p->layout, ts, &frame)) {
		flags |= SAMPLE_READ_ERR;
	} else {
		n = pw_walk_frames(r, p, frame, pw_base_frame(r, &p->layout, ts), sc->w.s.frames,
				   &sc->pw, &flags);
		if (!frame)
			bpf_map_delete_elem(&tstates, &key);
	}
	sc->w.kind = WALL_THREAD;
	sc->w.idx = 0;
	sc->w.s.hdr.time_ns = bpf_ktime_get_ns();
	sc->w.s.hdr.tstate = ts;
	sc->w.s.hdr.pid = pid;
	sc->w.s.hdr.tid = tid;
	sc->w.s.hdr.flags = flags;
	sc->w.s.hdr.nframes = n;
	/* the thread's running task, or the task a pool worker's item is for, as in CPU mode */
	pw_walk_tasks(r, p, pid, &sc->w.s, &sc->pw);
	/* frames of a task that ended since they were read: torn, not no task's (3.11's task
	 * step, say, read in its task's last line, the task freed before it was looked up) */
	if (!sc->w.s.hdr.ntasks && sc->pw.gone_task)
		sc->w.s.hdr.flags |= SAMPLE_READ_ERR;
	stat_inc(WSTAT_THREADS);
	emit(sc);
}

SEC("iter.s/task")
int wall_tick(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct py_proc *p;
	struct scratch *sc;
	__u32 pid;

	if (!task)
		return 0;
	pid = task->tgid;
	/* the keys in globals: the suspended-task walk's stack is at the limit on 6.1 */
	proc_key = pid;
	p = bpf_map_lookup_elem(&procs, &proc_key);
	sc = bpf_map_lookup_elem(&scratch, &zero_key);
	if (!p || !sc)
		return 0;
	sc->pw.stamp_slot = 2;
	sc->w.cpu_ns = task->se.sum_exec_runtime;
	__builtin_memcpy(sc->w.s.hdr.comm, task->comm, TASK_COMM_LEN);
	sample_thread(task, p, sc);
	if (tasks_pending && p->async.yf_kind) {
		tasks_pending = 0;
		walk_suspended((struct pw_reader *)task, p, pid, task->pid, sc);
	}
	return 0;
}

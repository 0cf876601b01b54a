// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* CPU sampler: on each perf cpu-clock tick in a known Python process, find the thread's
 * PyThreadState and walk its frames into a ring-buffer record. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

/* Measured here: a read's cost follows the cache lines and pages it touches (a cold 4 KiB
 * page about 500 ns, a lone 64-byte object 150), so a page is read whole only once a
 * second object in it is wanted. */
#define PW_PAGES_LAZY		     1
#define PW_PAGES_RAW(dst, len, addr) bpf_probe_read_user(dst, len, (const void *)(addr))
#define PW_PAGES_COPY(dst, len, src) bpf_probe_read_kernel(dst, len, src)
#include "pwpages.h"

/* the running thread's memory, through the page cache of the walk */
struct pw_reader {
	struct pw_pages pages;
	struct name_key name_key; /* the name cache's, off the stack */
	struct task_key kept_key; /* kept_frames', as name_key */
};

/* Only frames and code objects are read through the cache (pw_view): cached reads at
 * every read site take 7.2's verifier past its million instructions. */
static __always_inline int pw_read(struct pw_reader *r, void *dst, __u32 len, __u64 addr)
{
	return pw_pages_raw(&r->pages, dst, len, addr);
}

static __always_inline const __u8 *pw_view(struct pw_reader *r, __u8 *buf, __u32 len, __u64 addr)
{
	return pw_pages_view(&r->pages, buf, len, addr);
}

/* the asyncio lookups of pywalk.h, on the maps below */
static __always_inline const struct task_id *pw_coro_task(__u32 pid, __u64 coro);
static __always_inline int pw_task_serial(__u32 pid, __u64 task, __u64 *serial);
static __always_inline const struct task_link *pw_task_link(__u32 pid, __u64 task);
#define PW_NAME_CACHE
#define PW_SERIAL_NAMES
#define NAME_KEY(r)		      (&(r)->name_key)
#define PW_KEEP_FRAMES(dst, len, src) bpf_probe_read_kernel(dst, len, src)
#define PW_WORK_HINTS
#define PW_CODE_BY_VERSION
/* not in 5.10's unrolled walk, where sample_cpu's copy of the check is rejected */
#ifndef PW_BOUNDED_LOOPS
#define PW_STOP_AT_TASK
#endif

#include "pywalk.h"
#define MAPS_WALK
#include "maps.h"

/* new task -> where its creator created it (task_init), read by userspace
 * only */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 15);
	__type(key, struct site_key);
	__type(value, struct task_site);
} task_sites SEC(".maps");

#define RB_BYTES      (8 << 20)
#define RB_WAKE_BYTES (RB_BYTES / 4)

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* wall mode: task creations and frees go to task_lives for the ticker */
const volatile bool task_lives_on = false;
/* --no-origins: the creation probe numbers tasks (wall mode) but links none */
const volatile bool origins_on = true;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} task_lives SEC(".maps");

/* Set only to test how a rejected program is reported (ASYNCBPF_TEST_REJECT_BPF): the
 * verifier knows this frozen constant and checks the invalid access below only if set. */
const volatile bool reject_for_test = false;
/* --native: pages of user stack copied per sample (0: none, at most NATIVE_STACK_PAGES) */
const volatile __u32 native_pages = 0;

struct scratch {
	struct py_sample s;
	struct pt_regs uregs; /* --native: the user registers of a thread in the kernel */
	struct pw_scratch pw;
	struct py_proc proc; /* the walked process's, copied: see pwbounded.h */
	struct pw_loops loops;
	__u64 serials;	       /* tasks numbered on this CPU (task_init) */
	struct task_site site; /* task_init's, built here: too big for the stack */
	struct site_key site_key;
	/* off the stack, which this program and its loops' frames share (512 bytes on 6.1
	 * and 5.10, with none to spare): walk_thread's result and the sample's start */
	bool looked_up;
	__u64 interp;			       /* the sampled thread's interpreter */
	__u32 seen;			       /* the code-version counter read */
	__u64 t0, t_tstate, t_frames, t_tasks; /* the sample's start, its phases' ends */
};

/* [0] for samples, [1] for task creation (a uprobe may run under a sample on the CPU) */
#define SCRATCH_SAMPLE 0
#ifndef PW_BOUNDED_LOOPS
#define SCRATCH_TASK_INIT 1
#else
/* pwbounded.h's steps find their state in [0]; a kernel without bpf_loop runs no tracing
 * program under another on a CPU (bpf_prog_active), so task creation can use it too */
#define SCRATCH_TASK_INIT 0
#endif

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* the page cache of each walk, slots as scratch's (too large to share its value). The
 * value wraps the reader: a map's value type seen before only through pointers would be
 * a forward declaration in clang's BTF. */
struct reader_slot {
	struct pw_reader rd;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct reader_slot);
} readers SEC(".maps");

/* --native: a record is the sample's used part with a struct native_hdr and the stack
 * copy right after it, built here (a per-CPU array's values are at most 32 KiB). One
 * entry per possible CPU, set by userspace (1 without --native). */
struct native_rec {
	__u8 data[sizeof(struct py_sample) + sizeof(struct native_hdr) + NATIVE_STACK_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct native_rec);
} native_out SEC(".maps");

/* the record as it goes up (see pack), built per CPU */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_sample);
} packed SEC(".maps");

static __always_inline struct pw_reader *reader_of(__u32 slot)
{
	struct reader_slot *r = bpf_map_lookup_elem(&readers, &slot);

	return r ? &r->rd : NULL;
}

#ifdef PW_BOUNDED_LOOPS
static __always_inline struct scratch *pw_bounded_scratch(void)
{
	__u32 slot = SCRATCH_SAMPLE;

	return bpf_map_lookup_elem(&scratch, &slot);
}

static __always_inline struct pw_reader *pw_bounded_reader(void)
{
	return reader_of(SCRATCH_SAMPLE);
}

#include "pwbounded.h"
#endif

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* STAT_PY_NS per sample, by cost_bucket() */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COST_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} cost_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RB_BYTES);
} events SEC(".maps");

/* serials of tasks seen created: a count per CPU (no 64-bit atomic fetch-and-add before
 * 5.12) times 8192 plus the CPU; userspace numbers the others from SERIAL_USER up */
#define SERIAL_CPUS 8192

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		(*v)++;
}

/* suspended awaiters' frames kept across samples (pywalk.h, pw_kept): up to 4096 tasks
 * that await a task, in all profiled processes together, of 63 frames each (4.3 MB) */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct task_key);
	__type(value, struct kept_ent);
} kept_frames SEC(".maps");

/* a new entry starts as this and is filled in place */
const struct kept_ent no_kept;

static __always_inline struct kept_ent *pw_kept_lookup(struct pw_reader *r, __u32 pid, __u64 task)
{
	r->kept_key.pid = pid;
	r->kept_key.pad = 0;
	r->kept_key.addr = task;
	return bpf_map_lookup_elem(&kept_frames, &r->kept_key);
}

static __always_inline struct kept_ent *pw_kept_slot(struct pw_reader *r, __u32 pid, __u64 task)
{
	struct kept_ent *k = pw_kept_lookup(r, pid, task);

	if (k)
		return k;
	bpf_map_update_elem(&kept_frames, &r->kept_key, &no_kept, BPF_NOEXIST);
	return bpf_map_lookup_elem(&kept_frames, &r->kept_key);
}

static __always_inline void pw_kept_stat(int fill)
{
	stat_inc(fill ? STAT_KEPT_FILLS : STAT_KEPT_HITS);
}

/* each pool worker thread's last link (pywalk.h, pw_pool_link), keyed by its thread
 * state: a guess, proven again at each sample */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct task_key);
	__type(value, __u64[2]);
} work_hints SEC(".maps");

static __always_inline void pw_work_hint(struct pw_reader *r, struct pw_scratch *s, __u32 pid,
					 __u64 tstate)
{
	const __u64 *h;

	r->kept_key.pid = pid;
	r->kept_key.pad = 0;
	r->kept_key.addr = tstate;
	h = bpf_map_lookup_elem(&work_hints, &r->kept_key);
	s->work_hint[0] = h ? h[0] : 0;
	s->work_hint[1] = h ? h[1] : 0;
}

static __always_inline void pw_work_hint_keep(struct pw_reader *r, struct pw_scratch *s, __u32 pid,
					      __u64 tstate)
{
	r->kept_key.pid = pid;
	r->kept_key.pad = 0;
	r->kept_key.addr = tstate;
	bpf_map_update_elem(&work_hints, &r->kept_key, s->work_hint, BPF_ANY);
}

static __always_inline void pw_work_hint_stat(void)
{
	stat_inc(STAT_WORK_HINTED);
}

static __always_inline void name_stat(__u32 what)
{
	if (what == NAME_STAT_COPY)
		stat_inc(STAT_NAME_COPIES);
}

static __always_inline void hist_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&cost_hist, &idx);

	if (v)
		(*v)++;
}

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += n;
}

/* Walks the current thread's frames into sc, their code objects left unread where the
 * counter allows (a sample's proven by the sampler, a creation site's by tasksites.c);
 * returns the thread state (0: none). to_task (a constant): the walk ends at the
 * coroutine of a task of process pid (the creation probe's). */
static __always_inline __u64 walk_thread(struct pw_reader *rd, const struct py_proc *p, __u64 id,
					 struct scratch *sc, int to_task)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 ts;

	/* pthread_self() is the thread pointer, which CPython stores as tstate->thread_id:
	 * this finds the state of threads that released the GIL too. */
	pw_pages_reset(&rd->pages);
	sc->looked_up = false;
	ts = pw_cached_tstate(rd, p, id, BPF_CORE_READ(task, thread.fsbase), &sc->looked_up);
	/* before any frame is read: it dates the code objects the walk meets, the main
	 * interpreter's (user/cpython/codever.c) */
	sc->pw.epoch = 0;
	if (ts && p->code_counter && !pw_read(rd, &sc->interp, 8, ts + p->tstate_interp) &&
	    sc->interp == p->main_interp && pw_read(rd, &sc->pw.epoch, 4, p->code_counter))
		sc->pw.epoch = 0;
	sc->seen = sc->pw.epoch;
	if (sc->pw.epoch != p->code_confirmed)
		sc->pw.epoch = 0;
	sc->t_tstate = bpf_ktime_get_ns();
	if (sc->looked_up)
		stat_inc(STAT_TSTATE_LOOKUP);
#ifdef PW_STOP_AT_TASK
	if (to_task)
		sc->pw.stop_pid = id >> 32;
#endif
	/* an idle state (see pw_find_match) may be a subinterpreter's: look again */
	if (!pw_walk_thread_of(rd, p, ts, &sc->s, &sc->pw, to_task) && ts &&
	    !(sc->s.hdr.flags & SAMPLE_READ_ERR))
		bpf_map_delete_elem(&tstates, &id);
	return ts;
}

static __always_inline void task_life(__u32 kind, __u32 pid, __u64 task, __u64 coro, __u64 serial,
				      __u64 ns)
{
	struct task_life *e = bpf_ringbuf_reserve(&task_lives, sizeof(*e), 0);

	if (!e) {
		stat_inc(STAT_TASK_LIFE_LOST);
		return;
	}
	e->kind = kind;
	e->pid = pid;
	e->task = task;
	e->coro = coro;
	e->serial = serial;
	e->ns = ns;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/* The creation into this CPU's task_births ring too, stamped as its TASK_BORN: the wall
 * tick walks the ones at or after the time its list was made (wall.bpf.c add_births). */
static __always_inline void task_birth(__u32 pid, __u64 task, __u64 coro, __u64 serial, __u64 ns)
{
	__u32 k = BIRTH_SLOTS;
	struct task_birth *h = bpf_map_lookup_elem(&task_births, &k), *b;

	if (!h)
		return;
	k = h->gen & (BIRTH_SLOTS - 1);
	b = bpf_map_lookup_elem(&task_births, &k);
	if (!b)
		return;
	/* x86-64 keeps stores in order: the barriers keep the compiler from moving them */
	b->gen++;
	asm volatile("" ::: "memory");
	b->pid = pid;
	b->task = task;
	b->coro = coro;
	b->serial = serial;
	b->ns = ns;
	asm volatile("" ::: "memory");
	b->gen++;
	asm volatile("" ::: "memory");
	h->gen++;
}

/* _asyncio.Task's tp_dealloc(self), attached in wall mode: the task's memory may hold
 * anything after this, so the ticker stops listing it before its next walk. A task
 * resurrected by its finalizer is dropped too (never pending again). */
SEC("uprobe")
int BPF_KPROBE(task_free, __u64 self)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct task_key key = { .pid = pid, .addr = self };
	struct task_serial *sn;

	if (!bpf_map_lookup_elem(&procs, &pid))
		return 0;
	sn = bpf_map_lookup_elem(&task_serials, &key);
	stat_inc(STAT_TASK_FREED);
	task_life(TASK_FREED, pid, self, 0, sn ? sn->serial : 0, bpf_ktime_get_ns());
	return 0;
}

/* A task_serials value to fill, zeroed in the scratch (too big for the stack). */
static __always_inline struct task_serial *new_serial_entry(struct scratch *sc)
{
	__builtin_memset(&sc->pw.sname, 0, sizeof(sc->pw.sname));
	sc->pw.sname_of = 0;
	return &sc->pw.sname;
}

/* _asyncio.Task.set_name(self, value), attached per process by userspace: the task's
 * name generation moves on before the new name replaces the old (see pw_name_gen). A
 * task the maps do not know yet has no entry: a str rename is then over before one is
 * made, and anything else leaves an entry of serial 0 that the next serial given keeps
 * marked (sampler_set_serial). */
SEC("uprobe")
int BPF_KPROBE(task_set_name, __u64 self, __u64 value)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32, slot = SCRATCH_TASK_INIT;
	struct task_key key = { .pid = pid, .addr = self };
	struct py_proc *p = bpf_map_lookup_elem(&procs, &pid);
	struct task_serial *e;
	struct scratch *sc;
	__u64 type = 0;
	bool odd;

	if (!p)
		return 0;
	stat_inc(STAT_RENAMES);
	odd = !p->str_type ||
	      bpf_probe_read_user(&type, 8, (void *)(value + p->layout.object_type)) ||
	      type != p->str_type;
	e = bpf_map_lookup_elem(&task_serials, &key);
	if (!e && odd && (sc = bpf_map_lookup_elem(&scratch, &slot))) {
		new_serial_entry(sc)->name_odd = 1;
		bpf_map_update_elem(&task_serials, &key, &sc->pw.sname, BPF_NOEXIST);
		return 0;
	}
	if (!e)
		return 0;
	if (odd)
		e->name_odd = 1;
	__sync_fetch_and_add(&e->name_gen, 1);
	return 0;
}

/* _asyncio.Task's tp_init(self, args, kwargs), attached per process by userspace: the
 * new task is linked to the task running on this thread, its creator, and its
 * coroutine (args[0]) is known at once. A fire-and-forget child keeps this link after
 * its creator has returned, when nothing in memory relates them any more. */
SEC("uprobe")
int BPF_KPROBE(task_init, __u64 self, __u64 args)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, slot = SCRATCH_TASK_INIT;
	struct pw_running f = {};
	struct task_key key = { .pid = pid };
	struct task_link link = { .kind = LINK_ORIGIN };
	struct task_id id_new;
	struct py_proc *proc = bpf_map_lookup_elem(&procs, &pid);
	const struct py_proc *p;
	struct scratch *sc;
	struct pw_reader *rd;
	__s64 nargs = 0;
	__u64 coro = 0;
	__u32 more;

	if (!proc || !proc->async.yf_kind || !proc->async.tuple_items)
		return 0;
	sc = bpf_map_lookup_elem(&scratch, &slot);
	rd = reader_of(slot);
	if (!sc || !rd)
		return 0;
	sc->pw.stamp_slot = 1;
	sc->proc = *proc;
	p = &sc->proc;
	/* PyTupleObject: ob_size at 16 on every supported 64-bit CPython */
	if (bpf_probe_read_user(&nargs, 8, (void *)(args + 16)) || nargs < 1 ||
	    bpf_probe_read_user(&coro, 8, (void *)(args + p->async.tuple_items)) || !coro)
		return 0;
	id_new.task = self;
	id_new.serial = ++sc->serials * SERIAL_CPUS + bpf_get_smp_processor_id() % SERIAL_CPUS;
	key.addr = self;
	new_serial_entry(sc)->serial = id_new.serial;
	bpf_map_update_elem(&task_serials, &key, &sc->pw.sname, BPF_ANY);
	/* whatever link this address had belongs to a task that is gone */
	bpf_map_delete_elem(&task_links, &key);
	key.addr = coro;
	bpf_map_update_elem(&coro_task, &key, &id_new, BPF_ANY);
	stat_inc(STAT_TASK_CREATED);
	if (task_lives_on) {
		__u64 ns = bpf_ktime_get_ns();

		task_life(TASK_BORN, pid, self, coro, id_new.serial, ns);
		task_birth(pid, self, coro, id_new.serial, ns);
	}
	if (!origins_on)
		return 0;

	/* the site ends at the creator's coroutine: the loop's frames past it are not read.
	 * more holds whether a thread was walked until it counts the site's frames: 5.10
	 * and 6.1 have no stack to spare for a variable of its own */
	more = walk_thread(rd, p, id, sc, 1) != 0;
	if (!more)
		return 0;
	sc->site.code_seen = sc->seen;
	sc->site.code_epoch_end = 0;
	if (sc->pw.epoch && pw_read(rd, &sc->site.code_epoch_end, 4, p->code_counter))
		sc->site.code_epoch_end = 0;
	sc->site.end_ns = bpf_ktime_get_ns();
	f.r = rd;
	f.p = p;
	f.s = &sc->pw;
	f.pid = pid;
	pw_find_running(&f);
	stat_inc(STAT_INIT_WALKS);
	stat_add(STAT_INIT_READS, rd->pages.reads);
	if (!f.task || f.task == self)
		return 0;
	link.child_serial = id_new.serial;
	link.child_coro = coro;
	link.parent = f.task;
	link.parent_coro = f.coro;
	link.parent_serial = f.serial;
	link.name_obj =
		pw_copy_name(rd, p, &sc->pw, pid, f.task, f.serial, &link.name_kind, link.name);
	key.addr = self;
	bpf_map_update_elem(&task_links, &key, &link, BPF_ANY);
	/* the creation site: thread frames 0 (the create call) to f.idx (the creator's
	 * coroutine); of more than SITE_FRAMES, the innermost and the SITE_OUTER outermost */
	if (f.idx >= MAX_FRAMES)
		return 0;
	more = f.idx >= SITE_FRAMES ? f.idx + 1 - SITE_FRAMES : 0;
	sc->site.serial = id_new.serial;
	sc->site.nframes = f.idx + 1 - more;
	sc->site.more = more;
	__builtin_memcpy(sc->site.frames, sc->s.frames, sizeof(sc->site.frames));
	if (more)
		for (__u32 k = 0; k < SITE_OUTER; k++) {
			/* masked in asm: clang drops a plain mask it can prove, which the
			 * bounded-loop build's verifier then misses */
			__u32 at = f.idx - k;

			PW_MASK(at, MAX_FRAMES - 1);
			sc->site.frames[SITE_FRAMES - 1 - k] = sc->s.frames[at];
		}
	sc->site_key.pid = pid;
	sc->site_key.pad = 0;
	sc->site_key.task = self;
	sc->site_key.serial = id_new.serial;
	bpf_map_update_elem(&task_sites, &sc->site_key, &sc->site, BPF_ANY);
	return 0;
}

#define NATIVE_REGS_OF(out, get)                                                                   \
	do {                                                                                       \
		(out)[0] = get(ax);                                                                \
		(out)[1] = get(dx);                                                                \
		(out)[2] = get(cx);                                                                \
		(out)[3] = get(bx);                                                                \
		(out)[4] = get(si);                                                                \
		(out)[5] = get(di);                                                                \
		(out)[6] = get(bp);                                                                \
		(out)[7] = get(sp);                                                                \
		(out)[8] = get(r8);                                                                \
		(out)[9] = get(r9);                                                                \
		(out)[10] = get(r10);                                                              \
		(out)[11] = get(r11);                                                              \
		(out)[12] = get(r12);                                                              \
		(out)[13] = get(r13);                                                              \
		(out)[14] = get(r14);                                                              \
		(out)[15] = get(r15);                                                              \
		(out)[16] = get(ip);                                                               \
	} while (0)

/* A field of the interrupted registers in the context: the verifier takes a context field
 * only at a fixed offset from the context pointer itself, which clang does not always
 * keep (it adds the offset to a copy first). */
#define CTX_REG(f)                                                                                 \
	({                                                                                         \
		__u64 v_;                                                                          \
		asm volatile("%0 = *(u64 *)(%1 + %2)"                                              \
			     : "=r"(v_)                                                            \
			     : "r"(ctx), "i"(offsetof(struct bpf_perf_event_data, regs) +          \
					     offsetof(struct pt_regs, f)));                        \
		v_;                                                                                \
	})
#define SC_REG(f) (sc->uregs.f)

/* The user registers and stack at `at`, right after the sample's frames; its bytes. */
static __always_inline __u64 native_capture(struct bpf_perf_event_data *ctx, struct scratch *sc,
					    struct native_hdr *h)
{
	__u8 *stack = (__u8 *)(h + 1);
	__u64 sp;
	__u32 len, first;

	h->flags = 0;
	h->stack_len = 0;
	h->nshims = sc->pw.nshims;
	for (__u32 i = 0; i < NATIVE_MAX_SHIMS; i++) {
		h->shim[i] = sc->pw.shim[i];
		h->shim_at[i] = sc->pw.shim_at[i];
	}
	/* user mode: a user address (the context allows no narrow read of cs) */
	if ((__s64)CTX_REG(ip) >= 0) {
		NATIVE_REGS_OF(h->regs, CTX_REG);
	} else if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs)) {
		/* interrupted in the kernel: the registers saved at its entry (5.15+) */
		if (bpf_probe_read_kernel(&sc->uregs, sizeof(sc->uregs),
					  (void *)bpf_task_pt_regs(bpf_get_current_task_btf()))) {
			h->flags = NATIVE_NO_REGS;
			return sizeof(*h);
		}
		NATIVE_REGS_OF(h->regs, SC_REG);
	} else {
		h->flags = NATIVE_NO_REGS;
		return sizeof(*h);
	}
	sp = h->regs[7];
	h->stack_start = sp;
	/* to the end of rsp's page, then whole pages: a read never spans two pages, so the
	 * first unmapped one (the stack's top) ends the copy with all below it kept */
	first = 4096 - (sp & 4095);
	if (bpf_probe_read_user(stack, first, (void *)sp)) {
		h->flags |= NATIVE_STACK_END;
		return sizeof(*h);
	}
	len = first;
	for (__u32 i = 1; i < NATIVE_STACK_PAGES; i++) {
		if (i >= native_pages)
			break;
		asm volatile("" : "+r"(len));
		if (len > NATIVE_STACK_MAX - 4096)
			break;
		if (bpf_probe_read_user(stack + len, 4096, (void *)(sp + len))) {
			h->flags |= NATIVE_STACK_END;
			break;
		}
		len += 4096;
	}
	h->stack_len = len;
	return sizeof(*h) + len;
}

/* The sample as a ring record into dst (sizeof(struct py_sample) bytes at least): its
 * header, its tasks used, its frames (asyncbpf.h, SAMPLE_REC). Returns its size, 0 if it
 * could not be copied. Writing the ring's memory is a sample's dearest step after the
 * walk (about 2 ns a byte here): the unused task slots went up with every record. */
static __always_inline __u64 pack(void *dst, const struct py_sample *s)
{
	__u64 t = s->hdr.ntasks, f = s->hdr.nframes + s->hdr.ncoro;

	/* bounds in the registers the copies take: clang would test copies of them */
	asm volatile("" : "+r"(t));
	if (t > MAX_TASKS)
		t = MAX_TASKS;
	asm volatile("" : "+r"(f));
	if (f > MAX_FRAMES + MAX_CORO_FRAMES)
		f = MAX_FRAMES + MAX_CORO_FRAMES;
	t = offsetof(struct py_sample, tasks) + t * sizeof(struct task_rec);
	f *= sizeof(struct frame_rec);
	if (bpf_probe_read_kernel(dst, t, s) || bpf_probe_read_kernel(dst + t, f, s->frames))
		return 0;
	return t + f;
}

/* The packed sample, then its native part, as one record; -1 if it could not be built
 * (the sample then goes alone). */
static __always_inline int emit_native(struct bpf_perf_event_data *ctx, struct scratch *sc,
				       __u64 wake)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct native_rec *nr = bpf_map_lookup_elem(&native_out, &cpu);
	__u64 n, size;

	sc->s.hdr.flags |= SAMPLE_NATIVE;
	if (!nr)
		return -1;
	size = pack(nr->data, &sc->s);
	asm volatile("" : "+r"(size));
	if (!size || size > sizeof(struct py_sample))
		return -1;
	n = native_capture(ctx, sc, (struct native_hdr *)(nr->data + size));
	stat_inc(STAT_NATIVE);
	stat_add(STAT_NATIVE_BYTES, n - sizeof(struct native_hdr));
	size += n;
	asm volatile("" : "+r"(size));
	if (size > sizeof(nr->data))
		size = sizeof(nr->data);
	if (bpf_ringbuf_output(&events, nr->data, size, wake))
		stat_inc(STAT_LOST);
	return 0;
}

/* The sample to the ring, packed: a function of its own, its locals out of sample_cpu's
 * frame, which the walk's loop steps share 512 bytes of stack with (8 bytes fewer there
 * on the bpf_loop build; 5.10's bounded build keeps 192 either way). */
static __noinline void emit(struct bpf_perf_event_data *ctx, struct scratch *sc)
{
	__u32 slot = 0;
	struct py_sample *out;
	__u64 size, wake;

	if (!sc)
		return;
	/* userspace drains on a timer; waking it per record costs more than the walk */
	wake = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > RB_WAKE_BYTES ? BPF_RB_FORCE_WAKEUP
									     : BPF_RB_NO_WAKEUP;
	if (native_pages && !emit_native(ctx, sc, wake))
		return;
	sc->s.hdr.flags &= ~SAMPLE_NATIVE;
	out = bpf_map_lookup_elem(&packed, &slot);
	size = out ? pack(out, &sc->s) : 0;
	/* keep clang from folding the bound into the sum, which the verifier loses */
	asm volatile("" : "+r"(size));
	if (size > sizeof(struct py_sample))
		size = sizeof(struct py_sample);
	if (!out || !size || bpf_ringbuf_output(&events, out, size, wake))
		stat_inc(STAT_LOST);
}

SEC("perf_event")
int sample_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, slot = SCRATCH_SAMPLE;
	struct py_proc *proc;
	__u64 t0;
	const struct py_proc *p;
	struct scratch *sc;
	struct pw_reader *rd;

	if (reject_for_test)
		return *(volatile int *)(long)bpf_ktime_get_ns();
	stat_inc(STAT_SAMPLES);
	if (!pid)
		return 0;
	proc = bpf_map_lookup_elem(&procs, &pid);
	if (!proc)
		return 0;
	stat_inc(STAT_PYTHON);
	t0 = bpf_ktime_get_ns();
	sc = bpf_map_lookup_elem(&scratch, &slot);
	rd = reader_of(slot);
	if (!sc || !rd)
		return 0;
	sc->t0 = t0;
	sc->pw.stamp_slot = 0;
	sc->proc = *proc;
	p = &sc->proc;
	walk_thread(rd, p, id, sc, 0);
	sc->t_frames = bpf_ktime_get_ns();
	/* from the scratch, not a local: the bounded loops' frames and this program's share
	 * 512 bytes of stack on 6.1 and 5.10, with none to spare */
	if (sc->s.hdr.flags & SAMPLE_NO_TSTATE)
		stat_inc(STAT_NO_TSTATE);
	if (sc->s.hdr.flags & SAMPLE_TRUNCATED)
		stat_inc(STAT_TRUNCATED);
	if (sc->s.hdr.flags & SAMPLE_READ_ERR)
		stat_inc(STAT_READ_ERR);

	sc->s.hdr.time_ns = bpf_ktime_get_ns();
	sc->s.hdr.pid = pid;
	sc->s.hdr.tid = (__u32)id;
	bpf_get_current_comm(sc->s.hdr.comm, sizeof(sc->s.hdr.comm));
	if (pw_walk_tasks(rd, p, pid, &sc->s, &sc->pw))
		stat_inc(STAT_TASK);
	sc->s.hdr.code_seen = sc->seen;
	sc->s.hdr.code_epoch = sc->pw.epoch;
	sc->s.hdr.code_epoch_end = 0;
	if (sc->pw.epoch && pw_read(rd, &sc->s.hdr.code_epoch_end, 4, p->code_counter))
		sc->s.hdr.code_epoch_end = 0;
	sc->t_tasks = bpf_ktime_get_ns();
	sc->s.hdr.walk_ns = (__u32)(sc->t_tasks - sc->s.hdr.time_ns);
	emit(ctx, sc);
	t0 = bpf_ktime_get_ns();
	stat_add(STAT_NS_OUTPUT, t0 - sc->t_tasks);
	stat_add(STAT_NS_TASKS, sc->t_tasks - sc->t_frames);
	stat_add(STAT_NS_FRAMES, sc->t_frames - sc->t_tstate);
	stat_add(STAT_NS_TSTATE, sc->t_tstate - sc->t0);
	t0 -= sc->t0;
	stat_add(STAT_PY_NS, t0);
	stat_add(STAT_READS, rd->pages.reads);
	stat_add(STAT_READ_BYTES, rd->pages.bytes);
	hist_inc(cost_bucket(t0));
	return 0;
}

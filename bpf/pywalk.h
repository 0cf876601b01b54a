/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The walk from a Python thread to its frames, written once and compiled into every
 * reader (the BPF sampler and the userspace readers). The includer defines, before
 * including this file:
 *   static int pw_read(struct pw_reader *r, void *dst, __u32 len, __u64 addr);   0 on success
 * where r is whatever the walk's caller passed in (opaque here, carried through every
 * function and loop state): wall.bpf.c's thread to read, NULL for readers needing none.
 * and the asyncio lookups the task walk needs (BPF maps, or user/asyncio/taskmaps.h tables):
 *   static const struct task_id *pw_coro_task(__u32 pid, __u64 coro);    NULL: none
 *   static int pw_task_serial(__u32 pid, __u64 task, __u64 *serial);     0 on success
 *   static const struct task_link *pw_task_link(__u32 pid, __u64 task);  NULL: none
 * A returned pointer stays valid until the next lookup of the same kind. An includer that
 * defines PW_NAME_CACHE provides the name caches' lookups declared before pw_copy_name;
 * PW_SERIAL_NAMES keeps short names in the task's serial entry, pw_task_serial_name().
 */
#ifndef ASYNCBPF_PYWALK_H
#define ASYNCBPF_PYWALK_H

#include "asyncbpf.h"

struct pw_reader;

/* PW_LOOP(max, fn, ctx) calls long fn(__u32 i, void *ctx) up to max times, until it
 * returns nonzero; PW_LOAD(type, buf, off) loads a type at buf + off. */
#ifdef __bpf__
#define PW_INLINE __always_inline
/* a function of its own (a BPF subprogram), whose frame is not its caller's */
#define PW_NOINLINE		__attribute__((noinline))
#define PW_LOAD(type, buf, off) (*(const type *)((const __u8 *)(buf) + (off)))
/* v &= mask in an instruction clang cannot drop as redundant */
#define PW_MASK(v, mask) asm volatile("%0 &= %1" : "+r"(v) : "i"(mask))
/* v in a register clang knows nothing about */
#define PW_OPAQUE(v) asm volatile("" : "+r"(v))
#ifndef PW_BOUNDED_LOOPS
#define PW_LOOP(max, fn, ctx) bpf_loop(max, fn, ctx, 0)
/* v through map memory (slot, a __u32 or __u64 there), so that the verifier forgets its
 * value. Where a bpf_loop is called and where its callback returns, the verifier compares
 * loop states by every value it knows, precise or not: a counter, a flag or a pointer
 * known to be 0 at the start is a state of its own, with its own verification of the
 * callback (wall_tick: 177k instructions, 33k with the loops' values forgotten where they
 * start and where a step sets a constant). */
#define PW_FORGET(v, slot)                                                                         \
	do {                                                                                       \
		*(volatile __u32 *)&(slot) = (v);                                                  \
		(v) = *(volatile __u32 *)&(slot);                                                  \
	} while (0)
#define PW_FORGET64(v, slot)                                                                       \
	do {                                                                                       \
		*(volatile __u64 *)&(slot) = (v);                                                  \
		(v) = *(volatile __u64 *)&(slot);                                                  \
	} while (0)
#else
/* bounded loops keep their state in a map: the verifier knows none of it */
#define PW_FORGET(v, slot)    ((void)0)
#define PW_FORGET64(v, slot)  ((void)0)
/* A kernel without bpf_loop (before 5.17): the includer defines, for each step function
 * fn, pw_bounded_fn(max, ctx) running it in a bounded loop (see bpf/pwbounded.h). */
#define PW_LOOP(max, fn, ctx) pw_bounded_##fn(max, ctx)
struct pw_find;
struct pw_walk;
struct pw_coro;
struct pw_running;
struct pw_tasks;
static __always_inline void pw_bounded_pw_find_step(__u32 max, struct pw_find *ctx);
static __always_inline void pw_bounded_pw_walk_step(__u32 max, struct pw_walk *ctx);
static __always_inline void pw_bounded_pw_coro_step(__u32 max, struct pw_coro *ctx);
static __always_inline void pw_bounded_pw_running_step(__u32 max, struct pw_running *ctx);
static __always_inline void pw_bounded_pw_in_chain_step(__u32 max, struct pw_tasks *ctx);
static __always_inline void pw_bounded_pw_task_step(__u32 max, struct pw_tasks *ctx);
#endif
#else
#include <string.h>
#define PW_INLINE	     inline __attribute__((unused))
#define PW_NOINLINE	     PW_INLINE
#define PW_MASK(v, mask)     ((v) &= (mask))
#define PW_FORGET(v, slot)   ((void)0)
#define PW_FORGET64(v, slot) ((void)0)
#define PW_OPAQUE(v)	     ((void)0)
#define PW_LOAD(type, buf, off)                                                                    \
	({                                                                                         \
		type v_;                                                                           \
		memcpy(&v_, (const __u8 *)(buf) + (off), sizeof(type));                            \
		v_;                                                                                \
	})
#define PW_LOOP(max, fn, ctx)                                                                      \
	do {                                                                                       \
		for (__u32 i_ = 0; i_ < (max); i_++)                                               \
			if ((fn)(i_, (ctx)))                                                       \
				break;                                                             \
	} while (0)
#endif

#define PW_READ_MAX 128 /* bytes read per frame and per code object */

/* pw_view(r, buf, len, addr): len bytes of addr (len <= PW_READ_MAX), where a masked
 * offset (PW_OFF) plus a load stays inside: in buf (2 * PW_READ_MAX bytes) or wherever the
 * includer that defines PW_VIEW keeps them; NULL if unreadable. Valid until the next
 * read. */
#ifndef PW_VIEW
static PW_INLINE const __u8 *pw_view(struct pw_reader *r, __u8 *buf, __u32 len, __u64 addr)
{
	const __u8 *v = pw_read(r, buf, len, addr) ? NULL : buf;

	/* the caller tests v itself: 6.1's verifier cannot follow clang testing the read's
	 * result again instead */
	PW_OPAQUE(v);
	return v;
}
#endif
#define PW_OFF(off) ((off) & (PW_READ_MAX - 1))
/* Shim frames (3.12+) cost a loop step without a record; allow some per stack. */
#define PW_MAX_STEPS (MAX_FRAMES + 64)
/* capacity of a frame array that holds a thread's frames and then coroutine frames */
#define PW_FRAMES_CAP (MAX_FRAMES + MAX_CORO_FRAMES)

#define PW_MAX_GENS 32 /* generator frames remembered per thread walk */
/* bytes of a suspended generator read at once (3.11+: its type, state, embedded frame and
 * first stack slots) */
#define PW_WIDE 256
/* 5.10's 512 bytes of stack for the program and its bounded loops' frames together have no
 * room for the wide read's locals: there a suspended generator is read field by field */
#ifdef PW_BOUNDED_LOOPS
#define PW_GEN_WINDOW 0
#else
#define PW_GEN_WINDOW 1
#endif
#define PW_CODE_SLOTS 8	 /* code objects remembered per walk, direct-mapped */
#define PW_PAIR_SPAN  64 /* bytes of one object pw_read_pair reads at once */
/* _PyFrameOwner: FRAME_OWNED_BY_GENERATOR is 1 in 3.11-3.15 */
#define PW_OWNED_BY_GENERATOR 1

struct pw_scratch {
	/* twice PW_READ_MAX so that a masked offset plus a load stays inside */
	__u8 frame[2 * PW_READ_MAX];
	__u8 code[2 * PW_READ_MAX];
	/* a suspended generator's first PW_WIDE bytes (pw_coro_step), twice as large for the
	 * masked offsets */
	__u8 genbuf[2 * PW_WIDE];
	__u32 genlen; /* the bytes of genbuf read */
	/* generator frames of the last thread walk that may be a task's coroutine (see
	 * pw_keep_gen), the outermost PW_MAX_GENS of ngens in a ring, innermost first:
	 * the generator object and the index of its frame record */
	__u64 gen[PW_MAX_GENS];
	__u32 gen_idx[PW_MAX_GENS];
	__u32 ngens;
	__u32 forget; /* PW_FORGET's slot */
	__u64 forget64;
	/* 3.12+: the shim frames of the last thread walk, innermost first (see native_hdr) */
	__u64 shim[NATIVE_MAX_SHIMS];
	__u32 shim_at[NATIVE_MAX_SHIMS];
	__u32 nshims;
	/* the innermost pool worker's frame of the last thread walk (py_work.code), 0 if
	 * none, the index of its frame record and its enum work_kind */
	__u64 work_frame;
	__u32 work_idx;
	__u32 work_kind;
	/* the work links' reads, off the stack (5.10 allows 512 bytes for the program and its
	 * calls together); PW_WORK_HINTS: the worker's last link, task and future */
	__u64 work_read[6];
	__u64 work_hint[2];
	__u8 pair[2 * PW_PAIR_SPAN]; /* pw_read_pair's span */
	/* the task pw_task_fields read last in this walk (0: none), and its fut_waiter,
	 * coroutine and name */
	__u64 fields_of;
	__u64 fields[3];
	/* PW_KEEP_FRAMES: the task of the last task step when it is known pending and of
	 * the sampled thread's loop (0: not), whether the walk has left that loop (passed a
	 * creator), and whether pw_kept found the current task's walk may be kept */
	__u64 pending;
	__u32 crossed, keep;
	__u32 gone_task; /* PW_READS_RUNNING: see pw_task_of */
	/* PW_SERIAL_NAMES: the serial entry of task sname_of (0: none) as copied after the
	 * last read of its fields (pw_task_fields forgets it) */
	__u64 sname_of;
	struct task_serial sname;
	/* PW_NAME_CACHE: name stamps made on this CPU, and whose they are (the includer's
	 * program: 0 to 2, see pw_name_stamp); kept from walk to walk */
	__u32 stamps, stamp_slot;
	__u64 last_code; /* the code object of the walk's last frame */
	/* fingerprints of the code objects read in this walk */
	__u64 code_addr[PW_CODE_SLOTS];
	__u32 code_fp[PW_CODE_SLOTS];
	/* PW_READS_RUNNING's checks: pw_code_fp(_cached) found no code object; the thread
	 * walk's cycle check (Brent's), off the stack: the frame at step 2^k - 1, the steps
	 * since, 2^k */
	__u32 not_code;
	/* pw_coro_step saw frame record 0 be an executing generator's: a listed task's walk
	 * (wall mode) found it running, without a read of its own. Its reader clears it. */
	__u32 first_running;
	/* the first awaited object a walk read whole (cb0_of, 0 if none; its reader clears
	 * it) and the word at its fut_callback0: a listed task's future's first callback */
	__u64 cb0_of, cb0;
	__u64 mark;
	__u32 steps, lap;
	/* PW_CODE_BY_VERSION: the code-version counter as read before the walk, 0 if none
	 * (last: the other includers' verification does not see their fields move) */
	__u32 epoch;
#ifdef PW_STOP_AT_TASK
	/* the process of a walk that ends at the caller of the first coroutine of a task
	 * (pw_walk_thread_of's stop), and whether it did */
	__u32 stop_pid, stopped;
#endif
};

/* Starts a walk: forgets the last walk's generators and code objects. */
static PW_INLINE void pw_scratch_reset(struct pw_scratch *s)
{
	/* a sample whose frames are not walked (no thread state, a failed read) must not take
	 * the last sample's pool frame on this CPU as its own: the link would follow it */
	s->work_frame = 0;
	s->ngens = 0;
	s->fields_of = 0;
	s->sname_of = 0;
	s->pending = 0;
	s->crossed = 0;
	s->gone_task = 0;
	for (__u32 i = 0; i < PW_CODE_SLOTS; i++)
		s->code_addr[i] = 0;
}

static PW_INLINE __u32 pw_code_fingerprint(__u32 firstlineno, __u64 filename, __u64 name)
{
	__u64 h = (filename >> 4) * 0x9E3779B97F4A7C15ULL;

	h ^= (name >> 4) * 0xC2B2AE3D27D4EB4FULL;
	h ^= firstlineno;
	h ^= h >> 32;
	return (__u32)h ? (__u32)h : 1;
}

struct pw_find {
	struct pw_reader *r;
	const struct py_proc *p;
	__u64 thread_id, native_id;
	__u64 interp, ts, found, idle;
};

static PW_INLINE int pw_current_frame(struct pw_reader *r, const struct py_layout *l, __u64 ts,
				      __u64 *frame);

/* A thread that created a subinterpreter owns an idle state there too (3.8-3.12): take a
 * state with frames, else the first idle one. */
static PW_INLINE long pw_find_match(struct pw_find *f)
{
	__u64 frame = 0;

	if (!pw_current_frame(f->r, &f->p->layout, f->ts, &frame) && frame) {
		f->found = f->ts;
		return 1;
	}
	if (!f->idle)
		f->idle = f->ts;
	return 0;
}

static long pw_find_step(__u32 i, void *ctx)
{
	struct pw_find *f = ctx;
	const struct py_layout *l = &f->p->layout;
	__u64 v;

	(void)i;
	if (!f->ts) {
		if (pw_read(f->r, &f->interp, 8, f->interp + l->interp_next) || !f->interp)
			return 1;
		return pw_read(f->r, &f->ts, 8, f->interp + l->interp_tstate_head) ? 1 : 0;
	}
	if ((f->thread_id && !pw_read(f->r, &v, 8, f->ts + l->tstate_thread_id) &&
	     v == f->thread_id) ||
	    (f->native_id && l->tstate_native_id &&
	     !pw_read(f->r, &v, 8, f->ts + l->tstate_native_id) && v == f->native_id)) {
		if (pw_find_match(f))
			return 1;
	}
	return pw_read(f->r, &f->ts, 8, f->ts + l->tstate_next) ? 1 : 0;
}

/* Finds the thread state whose owner is the given thread: thread_id is its pthread_self()
 * (on x86-64 glibc and musl, the thread pointer), native_id its kernel tid as the
 * process sees it (3.11+ only). Zero means "do not match on this". Walks every
 * interpreter's list, at most MAX_THREADS steps in all. */
static PW_INLINE __u64 pw_find_tstate(struct pw_reader *r, const struct py_proc *p, __u64 thread_id,
				      __u64 native_id)
{
	struct pw_find f = { .r = r, .p = p, .thread_id = thread_id, .native_id = native_id };

	if (pw_read(r, &f.interp, 8, p->runtime + p->layout.runtime_interp_head) || !f.interp)
		return 0;
	if (pw_read(r, &f.ts, 8, f.interp + p->layout.interp_tstate_head))
		return 0;
	PW_LOOP(MAX_THREADS, pw_find_step, &f);
	return f.found ? f.found : f.idle;
}

/* Does ts still belong to the thread (a cached pointer may be stale)? */
static PW_INLINE int pw_tstate_owned_by(struct pw_reader *r, const struct py_proc *p, __u64 ts,
					__u64 thread_id)
{
	__u64 v;

	return !pw_read(r, &v, 8, ts + p->layout.tstate_thread_id) && v == thread_id;
}

/* Innermost frame of a thread state, 0 if none; -1 on a failed read. */
static PW_INLINE int pw_current_frame(struct pw_reader *r, const struct py_layout *l, __u64 ts,
				      __u64 *frame)
{
	__u64 f = 0;

	if (pw_read(r, &f, 8, ts + l->tstate_frame))
		return -1;
	if (l->frame_kind == PY_FRAMES_CFRAME && f && pw_read(r, &f, 8, f + l->cframe_current))
		return -1;
	*frame = f;
	return 0;
}

/* Fingerprint of the code object read at c, FP_INVALID if not a code object. */
static PW_INLINE __u32 pw_code_fp_of(const struct py_proc *p, const __u8 *c)
{
	const struct py_layout *l = &p->layout;
	__u64 base = l->object_type;

	if (p->code_type && PW_LOAD(__u64, c, 0) != p->code_type)
		return FP_INVALID;
	return pw_code_fingerprint(PW_LOAD(__u32, c, PW_OFF(l->code_firstlineno - base)),
				   PW_LOAD(__u64, c, PW_OFF(l->code_filename - base)),
				   PW_LOAD(__u64, c, PW_OFF(l->code_name - base)));
}

/* An includer that reads threads while they run (wall mode) defines PW_READS_RUNNING:
 * a thread walk then ends as torn (SAMPLE_READ_ERR) on a chain that comes back to a
 * frame, or on a frame of no code object, which it reads where the thread freed and
 * reused the frames meanwhile. Its reads fault pages in: an address they cannot read is
 * no object. Elsewhere the walked thread is interrupted, and the checks' stack (5.10's
 * 512 bytes) is spared. */
/* An includer that walks many tasks in one run may end a chain at a task walked earlier
 * in the run (PW_MEMO_HIT(w): the task w moved to, by an awaiter link); elsewhere every
 * chain is walked whole. */
#ifndef PW_MEMO_HIT
#define PW_MEMO_HIT(w) 0
#endif

#ifdef PW_READS_RUNNING
#define PW_NOT_CODE(s, v) ((s)->not_code = (v))
#else
#define PW_NOT_CODE(s, v) ((void)0)
#endif

/* Fingerprint of a code object, FP_INVALID if unreadable or not a code object (then
 * s->not_code says which). */
static PW_INLINE __u32 pw_code_fp(struct pw_reader *r, const struct py_proc *p, __u64 code,
				  struct pw_scratch *s)
{
	const __u8 *c = pw_view(r, s->code, PW_READ_MAX, code + p->layout.object_type);
	__u32 fp;

	if (!c) {
		PW_NOT_CODE(s, code != 0);
		return FP_INVALID;
	}
	fp = pw_code_fp_of(p, c);
	PW_NOT_CODE(s, fp == FP_INVALID);
	return fp;
}

/* pw_code_fp read once per code object and walk: recursion, wrappers and the same
 * coroutine in many tasks cost one read each. A walk lasts microseconds; a code object
 * freed and another allocated at its address within one is not worth a read per frame.
 * direct: copied with pw_read, not viewed (a suspended coroutine's: its loop has no stack
 * to spare for the view). */
static PW_INLINE __u32 pw_code_fp_cached(struct pw_reader *r, const struct py_proc *p, __u64 code,
					 struct pw_scratch *s, int direct)
{
	__u32 k = (__u32)((code >> 4) ^ (code >> 11)) & (PW_CODE_SLOTS - 1), fp;

	PW_NOT_CODE(s, 0);
#ifdef PW_CODE_BY_VERSION
	/* 3.12+: a code object's co_version comes from a counter that only grows, read before
	 * the walk; userspace proves the object at the address now was made before it, so
	 * alive through the walk: the frame's (user/cpython/codever.c). No read here. */
	if (s->epoch && code)
		return FP_VERSIONED;
#endif
	if (code && s->code_addr[k] == code)
		return s->code_fp[k];
	if (!direct) {
		fp = pw_code_fp(r, p, code, s);
	} else if (pw_read(r, s->code, PW_READ_MAX, code + p->layout.object_type)) {
		fp = FP_INVALID;
		PW_NOT_CODE(s, code != 0);
	} else {
		fp = pw_code_fp_of(p, s->code);
		PW_NOT_CODE(s, fp == FP_INVALID);
	}
	if (fp != FP_INVALID) {
		s->code_addr[k] = code;
		s->code_fp[k] = fp;
	}
	return fp;
}

static PW_INLINE __s32 pw_instr(const struct py_layout *l, const __u8 *frame, __u64 code)
{
	__s64 off;

	switch (l->lasti_kind) {
	case PY_LASTI_BYTES:
		off = PW_LOAD(__s32, frame, PW_OFF(l->frame_lasti));
		break;
	case PY_LASTI_UNITS:
		off = (__s64)PW_LOAD(__s32, frame, PW_OFF(l->frame_lasti)) * 2;
		break;
	default:
		off = (__s64)(PW_LOAD(__u64, frame, PW_OFF(l->frame_lasti)) -
			      (code + l->code_code));
		break;
	}
	/* Before the first instruction (3.11+: prev_instr one unit before the code). */
	if (off < 0 || off > 0x7fffffff)
		return -1;
	return (__s32)off;
}

/* A _PyStackRef (3.14+) is a pointer with tag bits; before 3.14 ref_tag_bits is 0. */
static PW_INLINE __u64 pw_untag(const struct py_layout *l, __u64 ref)
{
	return ref & ~(((__u64)1 << (l->ref_tag_bits & 7)) - 1);
}

struct pw_walk {
	struct pw_reader *r;
	const struct py_proc *p;
	struct frame_rec *out; /* MAX_FRAMES entries */
	struct pw_scratch *s;
	__u64 frame, base;
	__u32 n, flags, at_base;
	__u64 pend_gen; /* the last frame's generator, its caller not seen yet */
	__u32 pend_idx;
};

/* A generator frame whose caller is a generator frame is awaited (yielded from) by it;
 * only one entered from elsewhere (a task's step from the event loop, an eager start
 * through a shim) can be a task's coroutine. Those are kept for pw_find_running, the
 * outermost PW_MAX_GENS, so that it looks up one or two per sample, not every
 * coroutine of a deep chain. */
static PW_INLINE void pw_keep_gen(struct pw_walk *w, int stop)
{
	struct pw_scratch *s = w->s;
	__u32 g = s->ngens;

	if (!w->pend_gen)
		return;
	s->gen[g & (PW_MAX_GENS - 1)] = w->pend_gen;
	s->gen_idx[g & (PW_MAX_GENS - 1)] = w->pend_idx;
	s->ngens = g + 1;
#ifdef PW_STOP_AT_TASK
	/* a map lookup, no read: pw_find_running proves the task after the walk, and takes
	 * the innermost task's coroutine anyway */
	if (stop && pw_coro_task(s->stop_pid, w->pend_gen))
		s->stopped = 1;
#else
	(void)stop;
#endif
	w->pend_gen = 0;
}

#ifdef PW_STOP_AT_TASK
/* The walk ends here, where it would at the thread's base (3.15+'s check). */
#define PW_STOPPED(w, stop)                                                                        \
	do {                                                                                       \
		if ((stop) && (w)->s->stopped) {                                                   \
			(w)->at_base = 1;                                                          \
			(w)->frame = 0;                                                            \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)
#else
#define PW_STOPPED(w, stop) ((void)0)
#endif

/* One frame of a thread walk. stop, a constant at each caller: the walk ends at a task's
 * coroutine (the creation probe's). A check at run time in the one callback made 7.2's
 * verifier follow both ends of it at every step of sample_cpu too (its instructions
 * doubled), so each kind of walk has a callback of its own. */
static __always_inline long pw_walk_step_of(struct pw_walk *w, int stop)
{
	const struct py_layout *l = &w->p->layout;
	struct pw_scratch *s = w->s;
	__u32 len = l->frame_read, n = w->n;
	__u64 code, cur = w->frame, gen = 0;
	const __u8 *f;

	PW_FORGET(n, s->forget);
	if (!cur || n >= MAX_FRAMES)
		return 1;
	if (cur == w->base) {
		w->at_base = 1;
		w->frame = 0;
		return 1;
	}
#ifdef PW_READS_RUNNING
	if (cur == s->mark) {
		w->flags |= SAMPLE_READ_ERR;
		w->frame = 0;
		return 1;
	}
	if (++s->steps >= s->lap) {
		s->mark = cur;
		s->lap <<= 1;
		s->steps = 0;
	}
#endif
	if (len > PW_READ_MAX)
		len = PW_READ_MAX;
	f = pw_view(w->r, s->frame, len, cur);
	if (!f) {
		w->flags |= SAMPLE_READ_ERR;
		w->frame = 0;
		return 1;
	}
	code = pw_untag(l, PW_LOAD(__u64, f, PW_OFF(l->frame_code)));
	w->frame = PW_LOAD(__u64, f, PW_OFF(l->frame_back));
	if (l->owner_cstack != PY_NO_OWNER && f[PW_OFF(l->frame_owner)] >= l->owner_cstack) {
		/* the shim that starts a C call of the eval loop: its frames end here. It
		 * lives on that call's C stack, where --native finds the call. */
		if (s->nshims < NATIVE_MAX_SHIMS) {
			s->shim[s->nshims & (NATIVE_MAX_SHIMS - 1)] = cur;
			s->shim_at[s->nshims & (NATIVE_MAX_SHIMS - 1)] = n;
			s->nshims++;
		}
		pw_keep_gen(w, stop);
		PW_STOPPED(w, stop);
		return 0;
	}
	if (l->frame_kind == PY_FRAMES_OBJECT) {
		if (w->p->async.frame_gen)
			gen = PW_LOAD(__u64, f, PW_OFF(w->p->async.frame_gen));
	} else if (w->p->async.yf_kind && f[PW_OFF(l->frame_owner)] == PW_OWNED_BY_GENERATOR) {
		gen = cur - w->p->async.gen_frame;
	}
	if (gen) {
		w->pend_gen = gen;
		w->pend_idx = n;
	} else {
		pw_keep_gen(w, stop);
	}
	/* n < MAX_FRAMES, masked again where 5.10's verifier sees it: it loses the bound
	 * through the register copies clang makes around the base check */
	PW_MASK(n, MAX_FRAMES - 1);
	w->out[n].code = code | (l->frame_entry && f[PW_OFF(l->frame_entry)] ? FRAME_ENTRY : 0);
	w->out[n].instr = pw_instr(l, f, code);
	if (code && !s->work_frame &&
	    (code == w->p->work.code[WORK_ANYIO] || code == w->p->work.code[WORK_POOL])) {
		s->work_frame = cur;
		s->work_idx = n;
		s->work_kind = code == w->p->work.code[WORK_POOL] ? WORK_POOL : WORK_ANYIO;
		if (n && w->p->work.pool_inner && s->last_code == w->p->work.pool_inner)
			s->work_idx = n - 1;
	}
	s->last_code = code;
	/* last: the read of a code object may replace the page f points into */
	w->out[n].fp = pw_code_fp_cached(w->r, w->p, code, s, 0);
#ifdef PW_READS_RUNNING
	if (s->not_code) {
		w->flags |= SAMPLE_READ_ERR;
		w->frame = 0;
		return 1;
	}
#endif
	w->n = n + 1;
	PW_STOPPED(w, stop);
	return 0;
}

static long pw_walk_step(__u32 i, void *ctx)
{
	(void)i;
	return pw_walk_step_of(ctx, 0);
}

#ifdef PW_STOP_AT_TASK
static long pw_walk_step_stop(__u32 i, void *ctx)
{
	(void)i;
	return pw_walk_step_of(ctx, 1);
}
#endif

/* Walks outward from frame, innermost first, into out[0..MAX_FRAMES). Returns the number
 * of frames recorded; *flags gets SAMPLE_TRUNCATED or SAMPLE_READ_ERR. base (3.15+, else
 * 0) is the thread state's base frame: a walk that ends anywhere else was torn. */
static PW_INLINE __u32 pw_walk_frames_of(struct pw_reader *r, const struct py_proc *p, __u64 frame,
					 __u64 base, struct frame_rec *out, struct pw_scratch *s,
					 __u32 *flags, int stop)
{
	struct pw_walk w = { .r = r, .p = p, .out = out, .s = s, .frame = frame, .base = base };

	s->ngens = 0;
	s->nshims = 0;
	s->work_frame = 0;
#ifdef PW_STOP_AT_TASK
	s->stopped = 0;
#endif
	s->last_code = 0;
	s->mark = 0;
	s->steps = 0;
	s->lap = 1;
	PW_FORGET64(w.frame, s->forget64);
	PW_FORGET64(w.base, s->forget64);
	PW_FORGET64(w.pend_gen, s->forget64);
	PW_FORGET(w.pend_idx, s->forget);
	PW_FORGET(w.at_base, s->forget);
	PW_FORGET(w.flags, s->forget);
#ifdef PW_STOP_AT_TASK
	if (stop)
		PW_LOOP(PW_MAX_STEPS, pw_walk_step_stop, &w);
	else
#endif
		PW_LOOP(PW_MAX_STEPS, pw_walk_step, &w);
	pw_keep_gen(&w, stop);
	if (w.frame)
		w.flags |= SAMPLE_TRUNCATED;
	else if (base && frame && !w.at_base)
		w.flags |= SAMPLE_READ_ERR;
	*flags |= w.flags;
	return w.n;
}

static PW_INLINE __u32 pw_walk_frames(struct pw_reader *r, const struct py_proc *p, __u64 frame,
				      __u64 base, struct frame_rec *out, struct pw_scratch *s,
				      __u32 *flags)
{
	return pw_walk_frames_of(r, p, frame, base, out, s, flags, 0);
}

/* The base frame of thread state ts (tstate->base_frame points to one embedded in
 * _PyThreadStateImpl), 0 where the version has none or it cannot be read. */
static PW_INLINE __u64 pw_base_frame(struct pw_reader *r, const struct py_layout *l, __u64 ts)
{
	__u64 base = 0;

	if (!l->tstate_base_frame || pw_read(r, &base, 8, ts + l->tstate_base_frame))
		return 0;
	return base;
}

struct pw_coro {
	struct pw_reader *r;
	const struct py_proc *p;
	struct frame_rec *out; /* records go to out[n..max), max <= PW_FRAMES_CAP */
	struct pw_scratch *s;
	__u64 gen;     /* generator to read next, 0 when done */
	__u64 awaited; /* what the innermost generator awaits when it is not a generator */
	__u32 n, max, flags;
	__u32 check; /* gen's type is still to check (pw_yf_target) */
};

static PW_INLINE __u64 pw_yf_target(struct pw_reader *r, const struct py_proc *p, __u64 yf,
				    __u64 *awaited)
{
	const struct py_async_layout *a = &p->async;
	__u64 type = 0, next = 0;

	if (!yf || pw_read(r, &type, 8, yf + p->layout.object_type))
		return 0;
	if (type == p->coro_type || type == p->gen_type)
		return yf;
	if (type == p->asend_type && p->asend_type && !pw_read(r, &next, 8, yf + a->asend_gen))
		return next;
	if (type == p->corowrapper_type && p->corowrapper_type &&
	    !pw_read(r, &next, 8, yf + a->corowrapper_coro))
		return next;
	*awaited = yf;
	return 0;
}

/* What a suspended generator's frame (its bytes at fb) delegates to, 0 if nothing. win
 * (NULL: none) holds the generator's first PW_WIDE bytes from gen: the top of the stack is
 * taken from there when it lies inside. coro: the generator is a coroutine, suspended only
 * in an await (a coroutine cannot yield), so the RESUME after it need not be read. */
static PW_INLINE __u64 pw_yield_from(struct pw_reader *r, const struct py_proc *p, __u64 frame,
				     __s8 state, const __u8 *fb, const __u8 *win, __u64 gen,
				     __u32 winlen, int coro)
{
	const struct py_layout *l = &p->layout;
	const struct py_async_layout *a = &p->async;
	__u64 code = pw_untag(l, PW_LOAD(__u64, fb, PW_OFF(l->frame_code))), co_code = 0, tos = 0,
	      at;
	__s32 lasti, depth;
	__u8 op[2] = {};

	switch (a->yf_kind) {
	case PY_YF_LASTI_BYTES:
	case PY_YF_LASTI_UNITS:
		lasti = PW_LOAD(__s32, fb, PW_OFF(l->frame_lasti));
		if (lasti < 0 || pw_read(r, &co_code, 8, code + l->code_code))
			return 0;
		at = co_code + l->bytes_sval;
		at += a->yf_kind == PY_YF_LASTI_BYTES ? (__u64)lasti + 2 : ((__u64)lasti + 1) * 2;
		if (pw_read(r, op, 1, at) || op[0] != a->op_yield_from)
			return 0;
		if (a->yf_kind == PY_YF_LASTI_BYTES) {
			at = PW_LOAD(__u64, fb, PW_OFF(a->frame_stack));
			if (!at)
				return 0;
			at -= 8;
		} else {
			depth = PW_LOAD(__s32, fb, PW_OFF(a->frame_stackdepth));
			if (depth < 1)
				return 0;
			at = PW_LOAD(__u64, fb, PW_OFF(a->frame_stack)) + (__u64)(depth - 1) * 8;
		}
		break;
	case PY_YF_RESUME:
		if (state != a->gen_suspended)
			return 0;
		at = PW_LOAD(__u64, fb, PW_OFF(l->frame_lasti)) + 2;
		if (!coro && (pw_read(r, op, 2, at) ||
			      (op[0] != a->op_resume && op[0] != a->op_resume_alt) || op[1] < 2))
			return 0;
		/* fall through */
	case PY_YF_STATE:
		if (state != a->gen_suspended)
			return 0;
		depth = PW_LOAD(__s32, fb, PW_OFF(a->frame_stackdepth));
		if (depth < 1 || depth > 4096)
			return 0;
		at = frame + a->frame_stack + (__u64)(depth - 1) * 8;
		break;
	case PY_YF_STACKPTR:
		if (state != a->gen_suspended)
			return 0;
		at = PW_LOAD(__u64, fb, PW_OFF(a->frame_stack));
		/* the value stack lies inside the frame, past its fixed part */
		if (at < frame + 16 + 8 * (__u64)a->yf_slots || at - frame > 0x10000)
			return 0;
		at -= 8 * (__u64)(a->yf_slots & 3);
		break;
	default:
		return 0;
	}
	if (win && at >= gen && at - gen + 8 <= winlen)
		return pw_untag(l, PW_LOAD(__u64, win, (at - gen) & (PW_WIDE - 1)));
	return pw_read(r, &tos, 8, at) ? 0 : pw_untag(l, tos);
}

/* The generator at gen read whole into s->genbuf: PW_WIDE bytes, fewer where its page
 * ends (a read across a page end fails whole, where the narrow reads it replaces might
 * not), but never fewer than its state and frame. NULL when it cannot be read so (3.8-3.10,
 * whose frames are objects of their own, or a short page): read it field by field. */
static PW_INLINE const __u8 *pw_gen_window(struct pw_reader *r, const struct py_proc *p, __u64 gen,
					   struct pw_scratch *s)
{
	__u64 len = 4096 - (gen & 4095); /* 4 KiB: the smallest page */

	if (!PW_GEN_WINDOW || p->layout.frame_kind == PY_FRAMES_OBJECT ||
	    p->async.gen_frame + PW_READ_MAX > PW_WIDE ||
	    p->async.gen_frame_state >= p->async.gen_frame)
		return NULL;
	if (len > PW_WIDE)
		len = PW_WIDE;
	if (len < (__u64)p->async.gen_frame + PW_READ_MAX)
		return NULL;
	PW_MASK(len, 2 * PW_WIDE - 1);
	s->genlen = len;
	return pw_read(r, s->genbuf, len, gen) ? NULL : s->genbuf;
}

static long pw_coro_step(__u32 i, void *ctx)
{
	struct pw_coro *w = ctx;
	const struct py_proc *p = w->p;
	const struct py_layout *l = &p->layout;
	const struct py_async_layout *a = &p->async;
	struct pw_scratch *s = w->s;
	__u64 gen = w->gen, frame = 0, code, yf, type = 0;
	__s8 state = -1, executing = a->gen_executing;
	__u32 n = w->n, check = w->check;
	const __u8 *win, *fb;

	(void)i;
	PW_FORGET(n, s->forget);
	PW_FORGET(check, s->forget);
	w->gen = 0;
	if (!gen)
		return 1;
	if (n >= w->max || n >= PW_FRAMES_CAP) {
		/* what it awaits, as if its type had been read at the last step */
		if (PW_GEN_WINDOW && check)
			pw_yf_target(w->r, p, gen, &w->awaited);
		return 1;
	}
	win = pw_gen_window(w->r, p, gen, s);
	/* check: gen is what the last generator awaits, its type not read yet (see the end) */
	if (PW_GEN_WINDOW && check &&
	    (!win ||
	     ((type = PW_LOAD(__u64, win, l->object_type & (PW_WIDE - 1))) != p->coro_type &&
	      type != p->gen_type))) {
		/* an object that delegates to no generator (a future): its type, and its
		 * first callback for task_queued, came with the window */
		if (win && type != p->asend_type && type != p->corowrapper_type) {
			w->awaited = gen;
			if (!s->cb0_of && (__u32)a->fut_callback0 + 8 <= s->genlen) {
				s->cb0_of = gen;
				s->cb0 = PW_LOAD(__u64, win, a->fut_callback0 & (PW_WIDE - 1));
			}
			return 1;
		}
		gen = pw_yf_target(w->r, p, gen, &w->awaited);
		if (!gen)
			return 1;
		win = pw_gen_window(w->r, p, gen, s);
	}
	type = win ? PW_LOAD(__u64, win, l->object_type & (PW_WIDE - 1)) : 0;
	/* An executing generator (a task that runs right now) shows its own frame, as
	 * CPython's pstree does, but what it awaits is not known: the chain ends there. */
	if (win) {
		state = (__s8)win[a->gen_frame_state & (PW_WIDE - 1)];
		if (state > executing)
			return 1; /* finished */
		frame = gen + a->gen_frame;
		fb = win + (a->gen_frame & (PW_WIDE - 1));
	} else {
		if (l->frame_kind == PY_FRAMES_OBJECT) {
			if (pw_read(w->r, &frame, 8, gen + a->gen_frame) || !frame)
				return 1; /* finished */
		} else {
			if (pw_read(w->r, &state, 1, gen + a->gen_frame_state) || state > executing)
				return 1; /* finished */
			frame = gen + a->gen_frame;
		}
		if (pw_read(w->r, s->frame, PW_READ_MAX, frame)) {
			__u32 fl = w->flags | SAMPLE_READ_ERR;

			PW_FORGET(fl, s->forget); /* a known flag: a loop state of its own */
			w->flags = fl;
			return 1;
		}
		fb = s->frame;
	}
	if (a->frame_state) { /* 3.10 */
		state = (__s8)fb[PW_OFF(a->frame_state)];
		if (state > executing)
			return 1;
	} else if (a->yf_kind == PY_YF_LASTI_BYTES && !PW_LOAD(__u64, fb, PW_OFF(a->frame_stack)) &&
		   PW_LOAD(__s32, fb, PW_OFF(l->frame_lasti)) >= 0) {
		state = executing; /* 3.8-3.9: no value stack while running */
	}
	code = pw_untag(l, PW_LOAD(__u64, fb, PW_OFF(l->frame_code)));
	w->out[n].code = code;
	w->out[n].instr = pw_instr(l, fb, code);
	/* a suspended-task walk starts at record 0 (see pw_scratch.first_running) */
	if (!n && state == executing)
		s->first_running = 1;
	yf = state == executing ? 0
				: pw_yield_from(w->r, p, frame, state, fb, win, gen, s->genlen,
						win && type && type == p->coro_type);
	w->out[n].fp = pw_code_fp_cached(w->r, p, code, s, 1);
	w->n = n + 1;
	if (!yf)
		return 1;
	/* With a window, yf's type is read with yf itself, at the next step; without, now. */
	if (PW_GEN_WINDOW && win) {
		check = 1;
		PW_FORGET(check, s->forget);
		w->check = check;
		w->gen = yf;
		return 0;
	}
	check = 0;
	PW_FORGET(check, s->forget);
	w->check = check;
	w->gen = pw_yf_target(w->r, p, yf, &w->awaited);
	return w->gen ? 0 : 1;
}

/* Walks a suspended coroutine and what it awaits, outermost first, into out[start..max)
 * (max <= PW_FRAMES_CAP). Returns the number of frames; *awaited gets the object the
 * innermost one awaits when that is not a coroutine (a future's iterator, say), else 0. */
static PW_INLINE __u32 pw_walk_coro(struct pw_reader *r, const struct py_proc *p, __u64 coro,
				    struct frame_rec *out, __u32 start, __u32 max,
				    struct pw_scratch *s, __u64 *awaited, __u32 *flags)
{
	struct pw_coro w = {
		.r = r, .p = p, .out = out, .s = s, .gen = coro, .n = start, .max = max
	};

	PW_FORGET64(w.gen, s->forget64);
	PW_FORGET64(w.awaited, s->forget64);
	PW_FORGET(w.flags, s->forget);
	PW_FORGET(w.check, s->forget);
	PW_LOOP(MAX_CORO_FRAMES, pw_coro_step, &w);
	if (PW_GEN_WINDOW && w.gen && w.check)
		w.gen = pw_yf_target(r, p, w.gen, &w.awaited);
	if (w.gen)
		w.flags |= SAMPLE_TRUNCATED;
	*awaited = w.awaited;
	*flags |= w.flags;
	return w.n - start;
}

/* A thread's frames from its thread state ts (0: none) into smp; the generator frames
 * seen are left in s for pw_walk_tasks. Returns the innermost frame (0: none). stop (a
 * constant; PW_STOP_AT_TASK): the walk ends at the caller of the first coroutine of a
 * task of process s->stop_pid. */
static PW_INLINE __u64 pw_walk_thread_of(struct pw_reader *r, const struct py_proc *p, __u64 ts,
					 struct py_sample *smp, struct pw_scratch *s, int stop)
{
	__u64 frame = 0;
	__u32 flags = 0, n = 0;

	pw_scratch_reset(s);
	if (!ts)
		flags |= SAMPLE_NO_TSTATE;
	else if (pw_current_frame(r, &p->layout, ts, &frame))
		flags |= SAMPLE_READ_ERR;
	else
		n = pw_walk_frames_of(r, p, frame, pw_base_frame(r, &p->layout, ts), smp->frames, s,
				      &flags, stop);
	smp->hdr.tstate = ts;
	smp->hdr.nframes = n;
	smp->hdr.flags = flags;
	return frame;
}

static PW_INLINE __u64 pw_walk_thread(struct pw_reader *r, const struct py_proc *p, __u64 ts,
				      struct py_sample *smp, struct pw_scratch *s)
{
	return pw_walk_thread_of(r, p, ts, smp, s, 0);
}

/* Copies a task's name (a short ASCII str, or 3.12+'s number of an unnamed task) into
 * buf; returns the name object. An includer that defines PW_NAME_CACHE provides
 * pw_name_cached(), which finds the name copied for (task, serial, name object), and
 * pw_name_slot(), the entry to copy it into: while a task keeps its serial and its name
 * object, the object is alive (the task holds it) and a str never changes, so a copy made
 * once stays right. Through the cache any str, whatever its length and kind, is copied
 * (up to TASK_NAME_MAX characters) while the task provably holds it (NAME_CACHED);
 * without it, only short ASCII ones and numbers. */
#ifdef PW_NAME_CACHE
enum name_stat { NAME_STAT_HIT, NAME_STAT_COPY };
/* counted by the includer */
static __always_inline void name_stat(__u32 what);
static __always_inline int pw_name_cached(struct pw_reader *r, __u32 pid, __u64 task, __u64 serial,
					  __u64 name, __u32 gen, __u32 *kind, char *buf);
static __always_inline struct name_ent *pw_name_slot(struct pw_reader *r, __u32 pid, __u64 task,
						     __u64 name, __u64 serial, __u32 gen);
/* the task's serial entry, to read its renames or write its name into */
static __always_inline struct task_serial *pw_serial_slot(__u32 pid, __u64 task);

/* A name generation no other copy has while task_names may hold it (NAME_STAMP): the
 * slot tells the includer's programs apart (they may run nested on a CPU), 2^19 copies
 * per CPU and slot before one comes back, when the 2^14 entries of task_names are long
 * gone. */
static __always_inline __u32 pw_name_stamp(struct pw_scratch *s)
{
	return NAME_STAMP_OF(s->stamp_slot, bpf_get_smp_processor_id(), s->stamps++);
}

/* The generation of the task's names for a copy found or made now. Each set_name call
 * adds one to the task's name_gen before the new name object replaces the old one, which
 * is then freed and whose address the next name of its size often takes; under the GIL
 * a call with a str does nothing else in between (given anything else, it runs that
 * object's __str__, maybe Python code, and name_odd keeps the task's names from the
 * caches for good). So a copy of the characters of the object a task names, read after
 * the generation was g and with the name object read again in between, is right while
 * the generation is still g: a later name at that address comes with a rename. A copy is
 * found when the generation read after the name object is the copy's. From s->sname
 * where it was copied after the task's fields, else a lookup; a stamp where renames are
 * not watched, the entry is another's or the task was given a non-str. p->renames says
 * creations are watched too: else a task at a freed one's address would have its serial
 * until a snapshot, and its name at the freed name's address. */
static __always_inline __u32 pw_name_gen(const struct py_proc *p, struct pw_scratch *s, __u32 pid,
					 __u64 task, __u64 serial)
{
	const struct task_serial *e;

	if (!p->renames || !serial)
		return pw_name_stamp(s);
#ifdef PW_SERIAL_NAMES
	if (s->sname_of == task)
		e = &s->sname;
	else
#endif
		e = pw_serial_slot(pid, task);
	if (!e || e->serial != serial || e->name_odd)
		return pw_name_stamp(s);
	return e->name_gen & (NAME_STAMP - 1);
}
#endif

/* PW_SERIAL_NAMES: a short name lives in its task's serial entry (struct task_serial),
 * which the alive check looks up anyway: pw_task_serial_name() is pw_task_serial() that
 * also copies the entry into s->sname (sname_of the task, after its fields' read). */
#ifdef PW_SERIAL_NAMES
static __always_inline int pw_task_serial_name(struct pw_scratch *s, __u32 pid, __u64 task,
					       __u64 *serial);
#define PW_SERIAL(s, pid, task, serial) pw_task_serial_name(s, pid, task, serial)

/* A mix of the name part's words, odd (an entry never named has check 0). Writers of
 * one entry may interleave (two CPUs naming a task, or one writing into an entry the LRU
 * has handed to another key meanwhile) and so may a copy with a write; aligned words are
 * written whole, so a torn part is words of two writes, which match its check only by
 * a 64-bit collision. */
static __always_inline __u64 pw_serial_check(const struct task_serial *e)
{
	const __u64 *w = &e->name_serial;
	__u64 h = 0;

	for (__u32 i = 0; i < (sizeof(*e) - 24) / 8; i++) {
		h = (h ^ w[i]) * 0x9E3779B97F4A7C15ULL;
		h ^= h >> 31;
	}
	return h | 1;
}

/* The name of task (serial, name object name, generation gen) from the entry its alive
 * check copied: 1, its kind in *kind and the name in buf, when the copy is whole and of
 * all three. */
static __always_inline int pw_serial_name(struct pw_scratch *s, __u64 task, __u64 serial,
					  __u64 name, __u32 gen, __u32 *kind, char *buf)
{
	const struct task_serial *e = &s->sname;

	if (s->sname_of != task || e->serial != serial || e->name_serial != serial ||
	    e->name_obj != name || e->fill_gen != gen || e->check != pw_serial_check(e))
		return 0;
	*kind = e->name_kind;
	__builtin_memcpy(buf, e->name, TASK_NAME_LEN);
	return 1;
}

/* Writes a short name copied from the task's name object for generation gen into the
 * task's serial entry, if the entry is still of this serial. */
static __always_inline void pw_serial_name_keep(struct pw_scratch *s, __u32 pid, __u64 task,
						__u64 serial, __u64 name, __u32 gen, __u32 kind,
						const char *buf)
{
	struct task_serial *e = pw_serial_slot(pid, task), *n = &s->sname;

	if (!e || e->serial != serial)
		return;
	s->sname_of = 0;
	n->name_serial = serial;
	n->name_obj = name;
	n->name_kind = kind;
	n->fill_gen = gen;
	__builtin_memcpy(n->name, buf, TASK_NAME_LEN);
	/* the check from the words stored, not from buf's bytes held in registers (which
	 * spill 256 bytes on a stack that 5.10 and 6.1 limit to 512 for all frames) */
	asm volatile("" ::: "memory");
	n->check = pw_serial_check(n);
	__builtin_memcpy(&e->name_serial, &n->name_serial, sizeof(*e) - 16);
}
#else
#define PW_SERIAL(s, pid, task, serial) pw_task_serial(pid, task, serial)
#endif

/* Two 8-byte fields of the object at obj, at offsets a and b, into *va and *vb: one read
 * of the span between them where it is short, else one each. Both are needed, so the
 * span, inside the object and no longer than a page, fails only where one of the two
 * narrow reads would. 0 on success. */
static PW_INLINE int pw_read_pair(struct pw_reader *r, struct pw_scratch *s, __u64 obj, __u32 a,
				  __u32 b, __u64 *va, __u64 *vb)
{
	__u32 lo = a < b ? a : b, len = (a < b ? b - a : a - b) + 8;

	if (len > PW_PAIR_SPAN)
		return pw_read(r, va, 8, obj + a) || pw_read(r, vb, 8, obj + b) ? -1 : 0;
	PW_MASK(len, 2 * PW_PAIR_SPAN - 1);
	if (pw_read(r, s->pair, len, obj + lo))
		return -1;
	*va = PW_LOAD(__u64, s->pair, (a - lo) & (PW_PAIR_SPAN - 1));
	*vb = PW_LOAD(__u64, s->pair, (b - lo) & (PW_PAIR_SPAN - 1));
	return 0;
}

enum { PW_WAITER, PW_CORO, PW_NAME };

/* A task's fut_waiter, coroutine and name into s->fields: side by side in that order in
 * every version (test_objmodel checks the table), one read. s->fields_of says whose they
 * are until the next call or walk: the alive check reads them, and the task step after it
 * takes the name, the link check the fut_waiter, from there, as current as that read. 0
 * on success. */
/* Not in wall mode (PW_TASK_SPAN 0: the fields read one by one where wanted, its alive
 * check the coroutine alone): its program's verification on Linux 7.2 walks 95% of the
 * million instructions the verifier allows, and the span's paths take it past. */
#ifdef PW_READS_RUNNING
#define PW_TASK_SPAN 0
#else
#define PW_TASK_SPAN 1
#endif
static PW_INLINE int pw_task_fields(struct pw_reader *r, const struct py_proc *p,
				    struct pw_scratch *s, __u64 task)
{
	const struct py_async_layout *a = &p->async;
	__u32 w = a->task_fut_waiter;

	s->fields_of = 0;
	s->sname_of = 0;
	if (!PW_TASK_SPAN)
		return pw_read_pair(r, s, task, w, a->task_coro, &s->fields[PW_WAITER],
				    &s->fields[PW_CORO]);
	if (a->task_coro != w + 8 || a->task_name != w + 16 ||
	    pw_read(r, s->fields, sizeof(s->fields), task + w))
		return -1;
	s->fields_of = task;
	return 0;
}

static PW_INLINE __u64 pw_copy_name(struct pw_reader *r, const struct py_proc *p,
				    struct pw_scratch *s, __u32 pid, __u64 task, __u64 serial,
				    __u32 *kind, char *buf)
{
	const struct py_layout *y = &p->layout;
	/* few locals: this runs in the task loop's frame, which 5.10 and 6.1 limit with the
	 * program's to 512 bytes. v is type, state, length and size in turn; w the width of
	 * a character, 0 for ASCII */
	__u64 name = 0, v = 0;
	__u32 w;
#ifdef PW_NAME_CACHE
	struct name_ent *c;
	__u32 gen;
#endif

	*kind = NAME_NONE;
	if (PW_TASK_SPAN && task && s->fields_of == task) {
		name = s->fields[PW_NAME];
	} else {
		if (pw_read(r, &name, 8, task + p->async.task_name))
			return 0;
		/* an entry copied before this read is too old for pw_name_gen */
		s->sname_of = 0;
	}
	if (!name)
		return name;
#ifdef PW_NAME_CACHE
	gen = pw_name_gen(p, s, pid, task, serial);
	if (gen < NAME_STAMP) {
#ifdef PW_SERIAL_NAMES
		if (pw_serial_name(s, task, serial, name, gen, kind, buf)) {
			name_stat(NAME_STAT_HIT);
			return name;
		}
#endif
		if (pw_name_cached(r, pid, task, serial, name, gen, kind, buf))
			return name;
		/* the copy made below is of gen if the task still names that object now */
		if (pw_read(r, &v, 8, task + p->async.task_name) || v != name)
			gen = pw_name_stamp(s);
	}
#endif
	if (pw_read(r, &v, 8, name + y->object_type))
		return name;
	if (v == p->long_type && p->long_type) {
		/* ob_size or lv_tag, then the first digits: enough for any task counter */
		if (!pw_read(r, buf, TASK_NAME_LEN, name + y->bytes_size))
			*kind = NAME_LONG;
	} else if (v == p->str_type && p->str_type) {
		v = 0;
		if (pw_read(r, &v, 4, name + y->unicode_state) ||
		    !(v >> y->unicode_compact_bit & 1))
			return name;
		w = v >> y->unicode_ascii_bit & 1 ? 0 : v >> y->unicode_kind_shift & 7;
		if (pw_read(r, &v, 8, name + y->unicode_length))
			return name;
		if (!w && v < TASK_NAME_LEN) {
			__builtin_memset(buf, 0, TASK_NAME_LEN);
			if (!pw_read(r, buf, v & (TASK_NAME_LEN - 1), name + y->unicode_ascii_size))
				*kind = NAME_ASCII;
		}
#ifdef PW_NAME_CACHE
		/* stamped (a task of no known serial, say), copied at each sample, never found */
		else if ((w <= 2 || w == 4) &&
			 (c = pw_name_slot(r, pid, task, name, serial, gen))) {
			/* filled in place: a reader ignores it until kind says NAME_CACHED */
			c->kind = NAME_NONE;
			c->serial = serial;
			c->gen = gen;
			c->length = v > 0xffffffff ? 0xffffffff : v;
			c->width = w ? w : 1;
			c->nchars = v < TASK_NAME_MAX ? v : TASK_NAME_MAX;
			/* masked in asm: clang knows the product is below NAME_BYTES and drops
			 * a plain mask, 5.10's verifier does not know it */
			v = (__u64)c->nchars * c->width;
			PW_MASK(v, NAME_BYTES - 1);
			if (pw_read(r, c->chars, v,
				    name + (w ? y->unicode_compact_size : y->unicode_ascii_size)))
				return name;
			c->name_obj = name;
			c->kind = NAME_CACHED;
			*kind = NAME_CACHED;
			__builtin_memcpy(buf, &gen, sizeof(gen));
			return name;
		}
#endif
	}
#ifdef PW_SERIAL_NAMES
	if (gen < NAME_STAMP && *kind != NAME_NONE) {
		pw_serial_name_keep(s, pid, task, serial, name, gen, *kind, buf);
		name_stat(NAME_STAT_COPY);
	}
#elif defined(PW_NAME_CACHE)
	if (gen < NAME_STAMP && *kind != NAME_NONE &&
	    (c = pw_name_slot(r, pid, task, name, serial, gen))) {
		c->serial = 0;
		c->gen = gen;
		c->kind = *kind;
		__builtin_memcpy(c->name, buf, TASK_NAME_LEN);
		c->name_obj = name;
		c->serial = serial;
	}
#else
	(void)pid;
	(void)serial;
#endif
	return name;
}

/* Is the task at addr, running coro, still the task numbered serial? 1 yes, 0 no, -1
 * its memory cannot be read now. */
static PW_INLINE int pw_task_alive(struct pw_reader *r, const struct py_proc *p,
				   struct pw_scratch *s, __u32 pid, __u64 addr, __u64 coro,
				   __u64 serial)
{
	__u64 sn = 0, now = 0;
	int err;

	if (!PW_TASK_SPAN) {
		if (serial && (pw_task_serial(pid, addr, &sn) || sn != serial))
			return 0;
		if (pw_read(r, &now, 8, addr + p->async.task_coro))
			return -1;
		return now == coro;
	}
	/* the fields first: the serial entry's copy is then newer than the name read, as
	 * pw_name_gen wants */
	err = pw_task_fields(r, p, s, addr);
	if (serial && (PW_SERIAL(s, pid, addr, &sn) || sn != serial))
		return 0;
	if (err)
		return -1;
	return s->fields[PW_CORO] == coro;
}

/* Is gen the coroutine of a live task? Returns the task (0 if not) and its serial. A
 * walk of a running thread (PW_READS_RUNNING) notes in s->gone_task a coroutine that was
 * a task's and is no longer: the thread may have run on past the frames it read (the
 * task ended and was freed meanwhile), which its includer then shows as torn. */
static PW_INLINE __u64 pw_task_of(struct pw_reader *r, const struct py_proc *p,
				  struct pw_scratch *s, __u32 pid, __u64 gen, __u64 *serial)
{
	const struct task_id *id = pw_coro_task(pid, gen);
	__u64 t, sn;

	if (!id)
		return 0;
	t = id->task;
	sn = id->serial;
	if (pw_task_alive(r, p, s, pid, t, gen, sn) != 1) {
#ifdef PW_READS_RUNNING
		s->gone_task = 1;
#endif
		return 0;
	}
	*serial = sn;
	return t;
}

struct pw_running {
	struct pw_reader *r;
	const struct py_proc *p;
	struct pw_scratch *s;
	__u32 pid, idx;
	__u64 task, coro, serial;
};

static long pw_running_step(__u32 i, void *ctx)
{
	struct pw_running *f = ctx;
	__u32 n = f->s->ngens, first = n > PW_MAX_GENS ? n - PW_MAX_GENS : 0;
	__u32 k = (first + i) & (PW_MAX_GENS - 1);
	__u64 t;

	if (first + i >= n)
		return 1;
	t = pw_task_of(f->r, f->p, f->s, f->pid, f->s->gen[k], &f->serial);
	if (!t)
		return 0;
	f->task = t;
	f->coro = f->s->gen[k];
	f->idx = f->s->gen_idx[k];
	return 1;
}

/* The innermost task running on the thread of the last pw_walk_thread: f->task, 0 if
 * none. f->r, f->p, f->s and f->pid are set by the caller. */
static PW_INLINE void pw_find_running(struct pw_running *f)
{
	PW_LOOP(PW_MAX_GENS, pw_running_step, f);
}

struct pw_tasks {
	struct pw_reader *r;
	const struct py_proc *p;
	struct py_sample *smp;
	struct pw_scratch *s;
	__u32 pid, n, used; /* tasks recorded, frames used */
	/* walk the first task's coroutine too: it is suspended. 16 bits, with cur_flags:
	 * every byte of this struct is on the program's stack (see pw_first_task) */
	__u16 own;
	__u16 cur_flags;
	__u64 cur, cur_coro, cur_serial;
};

static long pw_in_chain_step(__u32 i, void *ctx)
{
	struct pw_tasks *w = ctx;

	if (i >= w->n)
		return 1;
	if (w->smp->tasks[i & (MAX_TASKS - 1)].addr == w->cur) {
		w->cur_flags |= TASK_CYCLE;
		return 1;
	}
	return 0;
}

/* Records the current task and steps to its parent; awaiters' coroutines are walked. */
/* The name of the task the walk is at into t: a subprogram of its own, so that the copy's
 * locals are not in the task loop's frame, which 5.10 and 6.1 limit with the program's to
 * 512 bytes. */
static PW_NOINLINE int pw_task_name(struct pw_tasks *w)
{
	struct task_rec *t = &w->smp->tasks[(w->n - 1) & (MAX_TASKS - 1)];

	t->name_obj = pw_copy_name(w->r, w->p, w->s, w->pid, w->cur, w->cur_serial, &t->name_kind,
				   t->name);
	return 0;
}

/* The fut_waiter of the task the walk has just checked alive (w->cur); 0 if unreadable. */
static PW_INLINE __u64 pw_cur_waiter(struct pw_tasks *w)
{
	__u64 v = 0;

	if (PW_TASK_SPAN)
		return w->s->fields[PW_WAITER];
	return pw_read(w->r, &v, 8, w->cur + w->p->async.task_fut_waiter) ? 0 : v;
}

/* Moves the walk to the task that the task at n (t) is linked to; 1 when there is none.
 * A function of its own, for the task step's frame (see pw_in_chain). */
static PW_NOINLINE int pw_next_task(struct pw_tasks *w, struct task_rec *t, __u32 n)
{
	const struct py_proc *p = w->p;
	const struct task_link *link;
	struct task_rec *next;
	int alive;

	link = pw_task_link(w->pid, w->cur);
	if (!link || link->child_serial != w->cur_serial || link->child_coro != w->cur_coro)
		return 1;
	if (n + 1 >= MAX_TASKS) {
		t->flags |= TASK_MORE;
		return 1;
	}
	w->cur = link->parent;
	w->cur_coro = link->parent_coro;
	w->cur_serial = link->parent_serial;
	w->cur_flags = link->kind == LINK_ORIGIN ? TASK_ORIGIN : 0;
	if (link->kind == LINK_AWAITER && PW_MEMO_HIT(w)) {
		w->cur_flags = TASK_MEMO;
		return 0;
	}
	alive = pw_task_alive(w->r, p, w->s, w->pid, w->cur, w->cur_coro, w->cur_serial);
	/* a creator that awaits the task now (aiohttp's connection task its request) is drawn
	 * as an awaiter, as it is once a snapshot has seen it */
	if (alive > 0 && link->kind == LINK_ORIGIN && pw_cur_waiter(w) == t->addr)
		w->cur_flags = 0;
	if (alive <= 0) {
		/* copied now: no pointer is kept from one step to the next (the bounded
		 * loops keep their state in a map) */
		w->cur_flags |= TASK_ENDED;
		if (alive < 0)
			w->smp->hdr.flags |= SAMPLE_READ_ERR;
		next = &w->smp->tasks[(n + 1) & (MAX_TASKS - 1)];
		next->name_kind = link->name_kind;
		next->name_obj = link->name_obj;
		__builtin_memcpy(next->name, link->name, TASK_NAME_LEN);
	}
	return 0;
}

/* Marks TASK_CYCLE when the task the walk moved to is already in the chain: a function of
 * its own, as the bounded loops unroll it into the task step's frame. */
static PW_NOINLINE int pw_in_chain(struct pw_tasks *w)
{
	PW_LOOP(MAX_TASKS, pw_in_chain_step, w);
	return 0;
}

/* Frames kept across samples, where the includer defines PW_KEEP_FRAMES(dst, len, src),
 * a copy out of a map value, and provides pw_kept_lookup() (a task's kept entry), pw_kept_slot()
 * (one to fill) and pw_kept_stat(). A task that awaits another task directly runs
 * again only once that task is done: its wakeup is that task's done-callback, and its
 * cancel() goes to the awaited task while that is pending (Task.cancel,
 * task_cancel_impl). So while a task awaits the same task as when it was walked (its
 * fut_waiter, of the same serial and coroutine) and that task is still pending, it has
 * not run since: its coroutines are the frames walked then. The awaited task is pending
 * when it runs on the sampled thread, or when its fut_waiter, read in this walk, is set
 * (cleared at every step: a finished task has none). That holds from the pending check
 * to the awaiter's own read only where nothing runs in between: the tasks of the sampled
 * thread's loop, stopped while it is walked; an awaiter link stays in its loop (a task
 * awaits no other loop's future), a creator link (made from another thread, say) and a
 * pool worker's link do not, and the walk keeps nothing past them. A future that is not
 * a task has no serial: a freed one's address is soon another's, awaited elsewhere, so an
 * awaiter of one is walked at every sample. */
#ifdef PW_KEEP_FRAMES
static __always_inline struct kept_ent *pw_kept_lookup(struct pw_reader *r, __u32 pid, __u64 task);
static __always_inline struct kept_ent *pw_kept_slot(struct pw_reader *r, __u32 pid, __u64 task);
static __always_inline void pw_kept_stat(int fill);

/* The task the walk is at (record n) takes its frames from its kept entry: 1, its frames
 * copied after the ones used. Notes in s->keep whether a walk of it may be kept. */
static PW_NOINLINE int pw_kept(struct pw_tasks *w, struct task_rec *t, __u32 n)
{
	struct pw_scratch *s = w->s;
	const struct task_rec *c;
	struct kept_ent *k;
	__u64 gen, at = w->used, len;
	__u32 nf;

	s->keep = 0;
	/* serials tell task objects apart only where creations are watched: else a task at
	 * a freed one's address (and its coroutine at the freed coroutine's) has its
	 * numbers until a snapshot, and would be taken for it */
	if (!n || !PW_TASK_SPAN || !w->p->creations)
		return 0;
	c = &w->smp->tasks[(n - 1) & (MAX_TASKS - 1)];
	if (!c->addr || !c->serial || !w->cur_serial || s->pending != c->addr ||
	    s->fields_of != w->cur || s->fields[PW_WAITER] != c->addr)
		return 0;
	s->keep = 1;
	k = pw_kept_lookup(w->r, w->pid, w->cur);
	if (!k)
		return 0;
	/* a seqlock: one writer per entry, the thread of the task's loop */
	gen = k->gen;
	asm volatile("" ::: "memory");
	nf = k->nframes;
	if ((gen & 1) || k->serial != w->cur_serial || k->coro != w->cur_coro ||
	    k->waiter != c->addr || k->waiter_serial != c->serial || k->waiter_coro != c->coro ||
	    nf >= KEPT_FRAMES || at + nf > PW_FRAMES_CAP)
		return 0;
	len = nf * sizeof(struct frame_rec);
	PW_MASK(len, KEPT_FRAMES * sizeof(struct frame_rec) - 1);
	PW_MASK(at, 511);
	if (PW_KEEP_FRAMES(&w->smp->frames[at], len, k->frames))
		return 0;
	asm volatile("" ::: "memory");
	/* and the entry still this task's: a full LRU map hands an entry to a new key at
	 * once */
	if (k->gen != gen || k->serial != w->cur_serial || k->waiter != c->addr ||
	    k->waiter_serial != c->serial)
		return 0;
	t->nframes = nf;
	t->flags |= k->flags;
	w->used = at + nf;
	pw_kept_stat(0);
	return 1;
}

/* After a walk of record n's coroutine into frames[start..): kept if pw_kept said so. */
static PW_NOINLINE void pw_keep(struct pw_tasks *w, struct task_rec *t, __u32 n, __u64 start)
{
	const struct task_rec *c = &w->smp->tasks[(n - 1) & (MAX_TASKS - 1)];
	__u64 len = t->nframes;
	struct kept_ent *k;

	if (!w->s->keep || len >= KEPT_FRAMES)
		return;
	k = pw_kept_slot(w->r, w->pid, w->cur);
	if (!k)
		return;
	k->gen++;
	asm volatile("" ::: "memory");
	k->serial = w->cur_serial;
	k->coro = w->cur_coro;
	k->waiter = c->addr;
	k->waiter_serial = c->serial;
	k->waiter_coro = c->coro;
	k->flags = t->flags & TASK_TRUNCATED;
	k->nframes = len;
	len *= sizeof(struct frame_rec);
	PW_MASK(len, KEPT_FRAMES * sizeof(struct frame_rec) - 1);
	PW_MASK(start, 511);
	if (PW_KEEP_FRAMES(k->frames, len, &w->smp->frames[start]))
		k->serial = 0;
	asm volatile("" ::: "memory");
	k->gen++;
	pw_kept_stat(1);
}
#else
#define pw_kept(w, t, n)	0
#define pw_keep(w, t, n, start) ((void)0)
#endif

static long pw_task_step(__u32 i, void *ctx)
{
	struct pw_tasks *w = ctx;
	const struct py_proc *p = w->p;
	struct task_rec *t;
	__u32 n = w->n, flags = 0, nf = 0;
	__u64 awaited;

	if (n >= MAX_TASKS)
		return 1;
	t = &w->smp->tasks[n & (MAX_TASKS - 1)];
	t->addr = w->cur;
	t->coro = w->cur_coro;
	t->serial = w->cur_serial;
	t->flags = w->cur_flags;
	t->first = w->used;
	t->nframes = 0;
	w->n = n + 1;
	/* gone: its name is the one the link to it recorded; or walked already */
	if (w->cur_flags & (TASK_ENDED | TASK_MEMO))
		return 1;
	pw_task_name(w);
	if (w->cur_flags & TASK_CYCLE)
		return 1;
	/* a creator is shown where it created the task, not by what it runs now */
	if ((i > 0 || w->own) && !(w->cur_flags & TASK_ORIGIN) && !pw_kept(w, t, n)) {
		nf = pw_walk_coro(w->r, p, w->cur_coro, w->smp->frames, w->used, PW_FRAMES_CAP,
				  w->s, &awaited, &flags);
		t->nframes = nf;
		if (flags & SAMPLE_TRUNCATED)
			t->flags |= TASK_TRUNCATED;
		if (flags & SAMPLE_READ_ERR)
			w->smp->hdr.flags |= SAMPLE_READ_ERR;
		else
			pw_keep(w, t, n, w->used);
		w->used += nf;
	}
#ifdef PW_KEEP_FRAMES
	/* pending in the sampled thread's loop: running on the thread, or awaiting
	 * something (see pw_kept) */
	if (w->own || (w->cur_flags & TASK_ORIGIN))
		w->s->crossed = 1;
	w->s->pending =
		!w->s->crossed && (!n || (w->s->fields_of == w->cur && w->s->fields[PW_WAITER]))
			? w->cur
			: 0;
#endif
	if (pw_next_task(w, t, n))
		return 1;
	pw_in_chain(w);
	/* forgotten: each combination of the flags would be a loop state of its own */
	flags = w->cur_flags;
	PW_FORGET(flags, w->s->forget);
	w->cur_flags = flags;
	return 0;
}

/* Attribute a of obj into *v: a slot of the values obj shares its keys with its class
 * (struct py_attr). -1 when obj keeps its attributes in a dict of its own instead, or the
 * slot is empty. */
static PW_INLINE int pw_attr(struct pw_reader *r, __u64 obj, const struct py_attr *a, __u64 *v)
{
	__u64 base;

	if (!a->model || pw_read(r, v, 8, obj + (__s64)a->at))
		return -1;
	if (a->model == PY_ATTR_INLINE) {
		if (!(*v >> 24 & 0xff)) /* the header's valid byte */
			return -1;
		base = obj + (__s64)a->at;
	} else if (a->model == PY_ATTR_TAGGED) {
		if (!(*v & 1))
			return -1;
		base = *v + 1;
	} else if (a->model == PY_ATTR_DICT) {
		if (!*v || pw_read(r, v, 8, *v + a->values))
			return -1;
		base = *v;
	} else {
		base = *v;
	}
	if (!base || pw_read(r, v, 8, base + a->slot) || !*v)
		return -1;
	return 0;
}

/* Moves the walk to task, which awaits the pool worker's item's asyncio future fut now
 * (its fields just read): 0; 1 when the maps do not know it yet or it has no coroutine. */
static PW_INLINE int pw_work_enter(struct pw_tasks *w, __u64 task)
{
	__u64 *v = w->s->work_read;

	/* a task the maps do not know yet: not drawn */
	if (PW_SERIAL(w->s, w->pid, task, &v[3])) {
		w->smp->hdr.flags |= SAMPLE_WORK_UNSEEN;
		return 1;
	}
	if (!w->s->fields[PW_CORO])
		return 1;
	w->cur = task;
	w->cur_coro = w->s->fields[PW_CORO];
	w->cur_serial = v[3];
	w->own = 1;
	w->smp->hdr.running_idx = w->s->work_idx;
	w->smp->hdr.flags |= SAMPLE_WORK;
	return 0;
}

/* Moves the walk to task, which a pool worker's item wakes when done, if task awaits
 * that item's asyncio future fut now (its fut_waiter): 0. Else the item is no task's
 * any more (cancelled, timed out, abandoned: SAMPLE_WORK_STALE), 1. */
static PW_INLINE int pw_work_task(struct pw_tasks *w, __u64 task, __u64 fut)
{
	if (!task || pw_task_fields(w->r, w->p, w->s, task) || w->s->fields[PW_WAITER] != fut) {
		w->smp->hdr.flags |= SAMPLE_WORK_STALE;
		return 1;
	}
	return pw_work_enter(w, task);
}

/* An anyio worker (WorkerThread.run): its frame holds the item's future, which the task
 * awaits directly (its first done-callback is the task's wakeup), and the item's
 * Context. The item is the one running now when the thread is inside that Context
 * (ts->context: a Context is entered by one thread at a time, and the worker enters this
 * one for this item only; an idle worker keeps its last item's locals but has left their
 * Context). A function of its own, for the stack (see pw_task_name). */
static PW_NOINLINE int pw_anyio_link(struct pw_tasks *w)
{
	const struct py_proc *p = w->p;
	struct pw_reader *r = w->r;
	__u64 *v = w->s->work_read, locals = w->s->work_frame + p->async.frame_localsplus, fut;

	if (!p->async.tstate_context || !w->smp->hdr.tstate)
		return 1;
	/* v[0]: the thread's Context, v[1]: the item's */
	if (pw_read(r, &v[0], 8, w->smp->hdr.tstate + p->async.tstate_context) ||
	    pw_read(r, &v[1], 8, locals + 8 * (__u64)p->work.anyio_context))
		return 1;
	if (!v[0] || pw_untag(&p->layout, v[1]) != v[0]) {
		w->smp->hdr.flags |= SAMPLE_WORK_NO_FUTURE; /* between items */
		return 1;
	}
	if (pw_read(r, &v[2], 8, locals + 8 * (__u64)p->work.anyio_future))
		return 1;
	fut = pw_untag(&p->layout, v[2]);
	if (!fut || pw_read(r, &v[3], 8, fut + p->async.fut_callback0) || !v[3] ||
	    pw_read(r, &v[2], 8, v[3] + p->async.wakeup_task)) {
		w->smp->hdr.flags |= SAMPLE_WORK_STALE;
		return 1;
	}
	return pw_work_task(w, v[2], fut);
}

/* The first item of a list into *v, 0; -1 when it is empty. */
static PW_INLINE int pw_list_first(struct pw_reader *r, struct pw_scratch *s,
				   const struct py_work *k, __u64 list, __u64 *v)
{
	__u64 size = 0;

	if (!list || pw_read_pair(r, s, list, k->list_size, k->list_items, &size, v) ||
	    (__s64)size < 1 || !*v || pw_read(r, v, 8, *v) || !*v)
		return -1;
	return 0;
}

#ifdef PW_WORK_HINTS
/* The includer's: into s->work_hint, the task and future of the last link of the pool
 * worker thread tstate (zeros if none); and to keep them there. */
static __always_inline void pw_work_hint(struct pw_reader *r, struct pw_scratch *s, __u32 pid,
					 __u64 tstate);
static __always_inline void pw_work_hint_keep(struct pw_reader *r, struct pw_scratch *s, __u32 pid,
					      __u64 tstate);
static __always_inline void pw_work_hint_stat(void);

/* Is fut the asyncio future wrap_future chained to the concurrent future cf? Then its
 * first done-callback is _chain_future's _call_check_cancel (its code checked), whose
 * closure holds cf as source: 0. */
static PW_INLINE int pw_chained(struct pw_reader *r, const struct py_proc *p, struct pw_scratch *s,
				__u64 fut, __u64 cf)
{
	const struct py_work *k = &p->work;
	__u64 *v = s->work_read;

	if (!k->check_cancel_code || pw_read(r, &v[0], 8, fut + p->async.fut_callback0) || !v[0] ||
	    pw_read_pair(r, s, v[0], k->func_code, k->func_closure, &v[2], &v[1]) ||
	    v[2] != k->check_cancel_code || !v[1] ||
	    pw_read(r, &v[2], 8, v[1] + p->async.tuple_items + 8 * (__u64)k->check_cell) || !v[2] ||
	    pw_read(r, &v[2], 8, v[2] + k->cell_ref))
		return 1;
	return v[2] != cf;
}
#endif

/* A concurrent.futures worker (_WorkItem.run; loop.run_in_executor, asyncio.to_thread):
 * the frame's self is the item running now, and it holds its concurrent future until it
 * ends. wrap_future made that future's first done-callback a closure over the asyncio
 * future the task awaits (checked by its code object), and put its own callback first on
 * the asyncio future: the awaiting task's wakeup is the second, the first of
 * fut_callbacks. Every object read is held by the one before it, from the running frame
 * on: none can be another's at a reused address. PW_WORK_HINTS: the worker's last link
 * is a guess, proven as the walk from the item is, backwards: its future is the one
 * chained to the item's (pw_chained: the future, held by the concurrent future, is that
 * one from this read on), then its task awaits that future (read after). A function of
 * its own, for the stack. */
static PW_NOINLINE int pw_pool_link(struct pw_tasks *w)
{
	const struct py_proc *p = w->p;
	const struct py_work *k = &p->work;
	struct pw_reader *r = w->r;
	struct pw_scratch *s = w->s;
	__u64 *v = s->work_read;

	/* the item, its concurrent future (v[4]) */
	if (pw_read(r, &v[0], 8,
		    s->work_frame + p->async.frame_localsplus + 8 * (__u64)k->pool_self) ||
	    pw_attr(r, pw_untag(&p->layout, v[0]), &k->item_future, &v[4]) || !v[4])
		return 1;
#ifdef PW_WORK_HINTS
	pw_work_hint(r, s, w->pid, w->smp->hdr.tstate);
	if (s->work_hint[1] && !pw_chained(r, p, s, s->work_hint[1], v[4])) {
		v[5] = s->work_hint[1];
		pw_work_hint_stat();
		if (s->work_hint[0] && !pw_task_fields(r, p, s, s->work_hint[0]) &&
		    s->fields[PW_WAITER] == v[5])
			return pw_work_enter(w, s->work_hint[0]);
		goto waker;
	}
#endif
	/* the first of its done-callbacks */
	if (pw_attr(r, v[4], &k->done_callbacks, &v[2]))
		return 1;
	/* no done-callback, or not wrap_future's: no asyncio future stands for the item */
	if (pw_list_first(r, s, k, v[2], &v[0]) ||
	    pw_read_pair(r, s, v[0], k->func_code, k->func_closure, &v[3], &v[1]) ||
	    v[3] != k->set_state_code) {
		w->smp->hdr.flags |= SAMPLE_WORK_NO_FUTURE;
		return 1;
	}
	/* the closure's destination cell: the asyncio future (v[5]) */
	if (!v[1] || pw_read(r, &v[2], 8, v[1] + p->async.tuple_items + 8 * (__u64)k->pool_cell) ||
	    !v[2] || pw_read(r, &v[5], 8, v[2] + k->cell_ref) || !v[5])
		return 1;
#ifdef PW_WORK_HINTS
waker:
#endif
	/* the wakeup, a (callback, context) tuple in fut_callbacks, and its task */
	if (pw_read(r, &v[0], 8, v[5] + p->async.fut_callbacks) ||
	    pw_list_first(r, s, k, v[0], &v[1]) ||
	    pw_read(r, &v[2], 8, v[1] + p->async.tuple_items) || !v[2] ||
	    pw_read(r, &v[2], 8, v[2] + p->async.wakeup_task)) {
		w->smp->hdr.flags |= SAMPLE_WORK_STALE;
		return 1;
	}
	if (pw_work_task(w, v[2], v[5]))
		return 1;
#ifdef PW_WORK_HINTS
	if (s->work_hint[0] != w->cur || s->work_hint[1] != v[5]) {
		s->work_hint[0] = w->cur;
		s->work_hint[1] = v[5];
		pw_work_hint_keep(r, s, w->pid, w->smp->hdr.tstate);
	}
#endif
	return 0;
}

/* Starts the walk at the task running on the thread, or at the one a pool worker's item
 * is for; 1 when there is none. A function of its own, so that its stack is not the
 * program's: 5.10 and 6.1 allow 512 bytes for the program and the loops' frames
 * together. */
static PW_NOINLINE int pw_first_task(struct pw_tasks *w)
{
	struct pw_running f = { .r = w->r, .p = w->p, .s = w->s, .pid = w->pid };

	pw_find_running(&f);
	if (!f.task && !w->s->work_frame)
		return 1;
	if (!f.task) {
		w->smp->hdr.flags |= SAMPLE_WORK_FRAME;
		return w->s->work_kind == WORK_POOL ? pw_pool_link(w) : pw_anyio_link(w);
	}
	w->cur = f.task;
	w->cur_coro = f.coro;
	w->cur_serial = f.serial;
	w->smp->hdr.running_idx = f.idx;
	return 0;
}

/* After pw_walk_thread: if the thread runs an asyncio task, which, and the chain of tasks
 * awaiting it, with their suspended frames after the thread's; or, for a pool worker,
 * the task that awaits its item (pw_first_task). 1 when in a task. */
static PW_INLINE int pw_walk_tasks(struct pw_reader *r, const struct py_proc *p, __u32 pid,
				   struct py_sample *smp, struct pw_scratch *s)
{
	struct pw_tasks w = { .r = r, .p = p, .smp = smp, .s = s, .pid = pid };

	smp->hdr.ntasks = 0;
	smp->hdr.ncoro = 0;
	smp->hdr.running_idx = RUNNING_NONE;
	if (!p->async.yf_kind || (!s->ngens && !s->work_frame) || pw_first_task(&w))
		return 0;
	w.used = smp->hdr.nframes;
	PW_LOOP(MAX_TASKS, pw_task_step, &w);
	smp->hdr.ntasks = w.n;
	smp->hdr.ncoro = w.used - smp->hdr.nframes;
	return 1;
}

/* The state of each loop while it runs, for bounded loops that keep it in a map
 * (bpf/pwbounded.h); a task's coroutine walk nests in the task walk. */
struct pw_loops {
	struct pw_find find;
	struct pw_walk walk;
	struct pw_coro coro;
	struct pw_tasks tasks;
};

#endif

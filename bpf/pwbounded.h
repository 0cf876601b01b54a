/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* pywalk.h's loops on a kernel without bpf_loop (before 5.17), where PW_LOOP expands to
 * pw_bounded_STEP(max, ctx). Unrolled by the verifier, the frame walk alone (320 steps)
 * exceeds its million instructions, so each heavy step is a global function, which the
 * verifier checks once, whatever the number of calls: the loop costs one call per step,
 * as bpf_loop does. Before 5.12 a global function takes no pointer but its program's
 * context, so a step keeps its state in the includer's per-CPU scratch, and the pointers
 * of that state are those of the scratch: the reader, the walked process (a copy), the
 * walker's scratch and the sample being built. The includer defines, before including
 * this file:
 *   struct scratch { struct py_sample s; struct pw_scratch pw; struct py_proc proc;
 *                    struct pw_loops loops; ... };
 *   static struct scratch *pw_bounded_scratch(void);   the one the walk uses
 *   static struct pw_reader *pw_bounded_reader(void);   and its reader
 * and walks with &sc->proc, &sc->pw and &sc->s of that scratch. */
#ifndef ASYNCBPF_PWBOUNDED_H
#define ASYNCBPF_PWBOUNDED_H

#include "pywalk.h"

#ifdef PW_BOUNDED_LOOPS

static __always_inline void pw_bounded_fix_find(struct pw_find *c, struct scratch *sc,
						struct pw_reader *rd)
{
	c->r = rd;
	c->p = &sc->proc;
}

static __always_inline void pw_bounded_fix_walk(struct pw_walk *c, struct scratch *sc,
						struct pw_reader *rd)
{
	c->r = rd;
	c->p = &sc->proc;
	c->out = sc->s.frames;
	c->s = &sc->pw;
}

static __always_inline void pw_bounded_fix_coro(struct pw_coro *c, struct scratch *sc,
						struct pw_reader *rd)
{
	c->r = rd;
	c->p = &sc->proc;
	c->out = sc->s.frames;
	c->s = &sc->pw;
}

static __always_inline void pw_bounded_fix_tasks(struct pw_tasks *c, struct scratch *sc,
						 struct pw_reader *rd)
{
	c->r = rd;
	c->p = &sc->proc;
	c->smp = &sc->s;
	c->s = &sc->pw;
}

/* STEP_global(i) runs one step on the state in the scratch. Not static: the verifier
 * checks a global function once, a static one at every call. */
#define PW_BOUNDED_GLOBAL(step, type, field)                                                       \
	__noinline long step##_global(__u32 i)                                                     \
	{                                                                                          \
		struct scratch *sc = pw_bounded_scratch();                                         \
		struct pw_reader *rd = pw_bounded_reader();                                        \
		type c;                                                                            \
		long ret;                                                                          \
                                                                                                   \
		/* used, so that clang passes it: the verifier checks every argument */            \
		asm volatile("" : : "r"(i));                                                       \
		if (!sc || !rd)                                                                    \
			return 1;                                                                  \
		c = sc->loops.field;                                                               \
		pw_bounded_fix_##field(&c, sc, rd);                                                \
		ret = step(i, &c);                                                                 \
		sc->loops.field = c;                                                               \
		return ret;                                                                        \
	}                                                                                          \
	static __always_inline void pw_bounded_##step(__u32 max, type *ctx)                        \
	{                                                                                          \
		struct scratch *sc = pw_bounded_scratch();                                         \
		struct pw_reader *rd = pw_bounded_reader();                                        \
                                                                                                   \
		if (!sc || !rd)                                                                    \
			return;                                                                    \
		sc->loops.field = *ctx;                                                            \
		for (__u32 i = 0; i < max; i++)                                                    \
			if (step##_global(i))                                                      \
				break;                                                             \
		*ctx = sc->loops.field;                                                            \
		pw_bounded_fix_##field(ctx, sc, rd);                                               \
	}

PW_BOUNDED_GLOBAL(pw_find_step, struct pw_find, find)
PW_BOUNDED_GLOBAL(pw_walk_step, struct pw_walk, walk)
PW_BOUNDED_GLOBAL(pw_coro_step, struct pw_coro, coro)
PW_BOUNDED_GLOBAL(pw_task_step, struct pw_tasks, tasks)

/* short loops with small steps: unrolled */
static __always_inline void pw_bounded_pw_running_step(__u32 max, struct pw_running *ctx)
{
	for (__u32 i = 0; i < max; i++)
		if (pw_running_step(i, ctx))
			break;
}

static __always_inline void pw_bounded_pw_in_chain_step(__u32 max, struct pw_tasks *ctx)
{
	for (__u32 i = 0; i < max; i++)
		if (pw_in_chain_step(i, ctx))
			break;
}

#endif
#endif

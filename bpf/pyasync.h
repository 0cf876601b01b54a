/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the walker needs to follow coroutines and asyncio tasks: generator and frame
 * fields (generated with offsetof from each version's headers) and _asyncio's
 * FutureObj/TaskObj fields (transcribed per version from Modules/_asynciomodule.c,
 * which no header declares, and checked against tp_basicsize at attach time). */
#ifndef ASYNCBPF_PYASYNC_H
#define ASYNCBPF_PYASYNC_H

#include "pylayout.h"

/* How a suspended generator tells that it is delegating (await / yield from) and to what. */
enum py_yf_kind {
	PY_YF_LASTI_BYTES =
		1, /* 3.8-3.9: co_code[f_lasti + 2] == YIELD_FROM, TOS = f_stacktop[-1] */
	PY_YF_LASTI_UNITS = 2, /* 3.10: co_code[(f_lasti + 1) * 2] == YIELD_FROM,
				* TOS = f_valuestack[f_stackdepth - 1] */
	PY_YF_RESUME = 3,      /* 3.11-3.12: suspended, next code unit is RESUME with oparg >= 2,
				* TOS = localsplus[stacktop - 1] */
	PY_YF_STATE = 4,       /* 3.13: gi_frame_state == FRAME_SUSPENDED_YIELD_FROM */
	PY_YF_STACKPTR = 5,    /* 3.14+: same state, the awaited object is stackpointer[-yf_slots]
				* (a _PyStackRef) */
};

struct py_async_layout {
	__u8 yf_kind;
	__s8 gen_suspended; /* 3.11+: gi_frame_state of a generator suspended in an await
			     * (3.13+: FRAME_SUSPENDED_YIELD_FROM) */
	__u8 op_yield_from; /* 3.8-3.10: YIELD_FROM */
	__u8 op_resume;	    /* 3.11-3.12: RESUME */
	__u8 op_resume_alt; /* 3.11: RESUME_QUICK, 3.12: INSTRUMENTED_RESUME, else op_resume */
	__s8 gen_executing; /* FRAME_EXECUTING (f_state in 3.10): 0 up to 3.14, 4 in 3.15; states
			     * below it are created or suspended, above it finished */
	__u8 yf_slots;	    /* PY_YF_STACKPTR: 1 in 3.14; 2 in 3.15, whose [-1] holds NULL */
	__u8 pad;

	__u16 gen_frame; /* 3.8-3.10: gi_frame (PyFrameObject *); 3.11+: gi_iframe (embedded) */
	__u16 gen_frame_state;	/* 3.11+: gi_frame_state (int8) */
	__u16 gen_code;		/* gi_code (3.8-3.11), 0 when absent */
	__u16 gen_qualname;	/* gi_qualname */
	__u16 frame_gen;	/* 3.8-3.10: PyFrameObject.f_gen */
	__u16 frame_stack;	/* 3.8-3.9: f_stacktop (PyObject **); 3.10: f_valuestack
				 * (PyObject **); 3.11-3.13: localsplus (inline array);
				 * 3.14: stackpointer (_PyStackRef *) */
	__u16 frame_stackdepth; /* 3.10: f_stackdepth (int); 3.11+: stacktop (int) */
	__u16 frame_state;	/* 3.10: f_state (char), 0 when absent */
	__u16 asend_gen;	/* _PyAsyncGenASend.ags_gen */
	__u16 corowrapper_coro; /* _PyCoroWrapper.cw_coroutine */

	/* _asyncio */
	__u16 fut_loop;
	__u16 fut_callback0;
	__u16 fut_callbacks; /* list of (callback, context) tuples, or NULL */
	__u16 fut_state;     /* int (fut_state enum: 0 pending, 1 cancelled, 2 finished) */
	__u16 fut_size;	     /* tp_basicsize of _asyncio.Future */
	__u16 task_fut_waiter;
	__u16 task_coro;
	__u16 task_name;
	__u16 task_size;	 /* tp_basicsize of _asyncio.Task */
	__u16 futureiter_future; /* _asyncio.FutureIter: the awaited future */
	__u16 wakeup_task;	 /* 3.8-3.9: TaskWakeupMethWrapper.ww_task; 3.10+:
				    PyCFunctionObject.m_self */
	__u16 tuple_items;	 /* PyTupleObject.ob_item: 24, 32 from 3.14 (ob_hash) */

	/* what a thread is running on behalf of: its contextvars.Context and a frame's
	 * locals */
	__u16 tstate_context;	/* PyThreadState.context (PyObject *, NULL until first used) */
	__u16 frame_localsplus; /* 3.8-3.10: PyFrameObject.f_localsplus; 3.11+:
				 * _PyInterpreterFrame.localsplus (inline arrays, in the order of
				 * co_varnames / co_localsplusnames; 3.14+ _PyStackRef, tagged in
				 * py_layout.ref_tag_bits low bits) */
};
/* crosses to BPF inside struct py_proc: no implicit padding, fields naturally aligned */
_Static_assert(sizeof(struct py_async_layout) % 8 == 0, "py_async_layout: size");

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Prints the struct py_objmodel initializer of the CPython whose headers it is compiled
 * against (-DPy_BUILD_CORE -I<include/pythonX.Y> -I<include/pythonX.Y/internal>): object
 * model offsets and the generator/frame part of the async layout. The few structs no
 * installed header declares are transcribed below, marked as such, and checked against
 * live interpreters by tests/unit/test_objmodel.c. functools.partial and _asyncio come
 * from user/cpython/py_objmodel_find.c. Exits non-zero when a value does not fit what its
 * readers can use. Built and run by tools/gen-layouts.sh. */
#include <stddef.h>

#include <Python.h>
#include <frameobject.h>
#include <structmember.h>
#if PY_VERSION_HEX < 0x030b0000
#include <longintrepr.h>
#include <opcode.h>
#endif
#if PY_VERSION_HEX < 0x03090000
#include "pycore_pystate.h"
#else
#include "pycore_runtime.h"
#include "pycore_interp.h"
#endif
#if PY_VERSION_HEX >= 0x030a0000
#include "pycore_moduleobject.h"
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include "pycore_frame.h"
#include "pycore_dict.h"
#include "pycore_code.h"
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030d0000
#define NEED_OPCODE_TABLES
#include "pycore_opcode.h"
#endif
#if PY_VERSION_HEX >= 0x030d0000
#include "pycore_tstate.h"
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpython/py_objmodel.h"

#ifndef READ_MAX
#define READ_MAX 128 /* PW_READ_MAX of bpf/pywalk.h */
#endif

/* Transcribed from Objects/genobject.c (same in 3.8-3.13): only the leading fields;
 * ob_base is PyObject_HEAD. */
struct asend_transcribed {
	PyObject ob_base;
	PyObject *ags_gen;
};

struct corowrapper_transcribed {
	PyObject ob_base;
	PyObject *cw_coroutine;
};

#if PY_VERSION_HEX < 0x030b0000
/* Transcribed from Objects/dict-common.h of 3.8-3.10, which is not installed. */
struct dictkeys_transcribed {
	Py_ssize_t dk_refcnt;
	Py_ssize_t dk_size;
	void *dk_lookup;
	Py_ssize_t dk_usable;
	Py_ssize_t dk_nentries;
	char dk_indices[];
};

struct dictentry_transcribed {
	Py_hash_t me_hash;
	PyObject *me_key;
	PyObject *me_value;
};
#endif

#if PY_VERSION_HEX < 0x030a0000
/* Transcribed from Objects/moduleobject.c of 3.8-3.9 (3.10+: pycore_moduleobject.h). */
struct module_transcribed {
	PyObject ob_base;
	PyObject *md_dict;
};
#endif

static struct py_objmodel m;

static void die(const char *what, long v, const char *why)
{
	fprintf(stderr, "gen_objmodel: %s: %s = %ld %s\n", PY_VERSION, what, v, why);
	exit(1);
}

#define SET(f, v)                                                                                  \
	do {                                                                                       \
		long v_ = (long)(v);                                                               \
		m.f = v_;                                                                          \
		if ((long)m.f != v_)                                                               \
			die(#f, v_, "does not fit struct py_objmodel");                            \
	} while (0)

/* pw_coro_step reads READ_MAX bytes of a frame and loads these fields (8 bytes at most)
 * from that buffer. */
static __attribute__((unused)) void frame_field(const char *what, unsigned long off)
{
	if (off >= READ_MAX - 8)
		die(what, (long)off, "lies beyond the bytes read per frame");
}

static void fill_objects(void)
{
	SET(py_version, PY_VERSION_HEX);
	SET(var_size, offsetof(PyVarObject, ob_size));
	SET(type_name, offsetof(PyTypeObject, tp_name));
	SET(type_basicsize, offsetof(PyTypeObject, tp_basicsize));
	SET(type_flags, offsetof(PyTypeObject, tp_flags));
	SET(type_base, offsetof(PyTypeObject, tp_base));
	SET(type_dict, offsetof(PyTypeObject, tp_dict));
	SET(type_dictoffset, offsetof(PyTypeObject, tp_dictoffset));
	SET(type_init, offsetof(PyTypeObject, tp_init));
	SET(type_dealloc, offsetof(PyTypeObject, tp_dealloc));
	SET(type_methods, offsetof(PyTypeObject, tp_methods));
	SET(type_members, offsetof(PyTypeObject, tp_members));
	SET(heaptype_cached_keys, offsetof(PyHeapTypeObject, ht_cached_keys));
	SET(memberdef_size, sizeof(PyMemberDef));
	SET(memberdef_name, offsetof(PyMemberDef, name));
	SET(memberdef_offset, offsetof(PyMemberDef, offset));
#ifdef Py_TPFLAGS_MANAGED_DICT
	m.flag_managed_dict = Py_TPFLAGS_MANAGED_DICT;
#endif
#ifdef Py_TPFLAGS_INLINE_VALUES
	m.flag_inline_values = Py_TPFLAGS_INLINE_VALUES;
#endif
	m.flag_long_subclass = Py_TPFLAGS_LONG_SUBCLASS;
	m.flag_unicode_subclass = Py_TPFLAGS_UNICODE_SUBCLASS;

	SET(dict_used, offsetof(PyDictObject, ma_used));
	SET(dict_keys, offsetof(PyDictObject, ma_keys));
	SET(dict_values, offsetof(PyDictObject, ma_values));
#if PY_VERSION_HEX < 0x030b0000
	SET(dict_model, PY_DICT_38);
	SET(instdict_model, PY_INSTDICT_OFFSET);
	SET(keys_size, offsetof(struct dictkeys_transcribed, dk_size));
	SET(keys_nentries, offsetof(struct dictkeys_transcribed, dk_nentries));
	SET(keys_indices, offsetof(struct dictkeys_transcribed, dk_indices));
	SET(entry_size, sizeof(struct dictentry_transcribed));
	SET(entry_key, offsetof(struct dictentry_transcribed, me_key));
	SET(entry_value, offsetof(struct dictentry_transcribed, me_value));
#else
	SET(dict_model, PY_DICT_311);
	SET(instdict_model, PY_VERSION_HEX < 0x030c0000	  ? PY_INSTDICT_MANAGED
			    : PY_VERSION_HEX < 0x030d0000 ? PY_INSTDICT_TAGGED
							  : PY_INSTDICT_INLINE);
	SET(keys_size, offsetof(PyDictKeysObject, dk_log2_size));
	SET(keys_log2_index_bytes, offsetof(PyDictKeysObject, dk_log2_index_bytes));
	SET(keys_kind, offsetof(PyDictKeysObject, dk_kind));
	SET(keys_nentries, offsetof(PyDictKeysObject, dk_nentries));
	SET(keys_indices, offsetof(PyDictKeysObject, dk_indices));
	SET(entry_size, sizeof(PyDictKeyEntry));
	SET(entry_key, offsetof(PyDictKeyEntry, me_key));
	SET(entry_value, offsetof(PyDictKeyEntry, me_value));
	SET(uentry_size, sizeof(PyDictUnicodeEntry));
	SET(uentry_key, offsetof(PyDictUnicodeEntry, me_key));
	SET(uentry_value, offsetof(PyDictUnicodeEntry, me_value));
	SET(values_values, offsetof(PyDictValues, values));
	if (DICT_KEYS_GENERAL != 0)
		die("DICT_KEYS_GENERAL", DICT_KEYS_GENERAL, "is not 0 (see keys_kind)");
#endif

	SET(tuple_items, offsetof(PyTupleObject, ob_item));
	SET(list_items, offsetof(PyListObject, ob_item));
	SET(set_table, offsetof(PySetObject, table));
	SET(set_mask, offsetof(PySetObject, mask));
	SET(set_used, offsetof(PySetObject, used));
	SET(setentry_size, sizeof(setentry));
	SET(setentry_key, offsetof(setentry, key));
	SET(weakref_object, offsetof(PyWeakReference, wr_object));
	SET(cell_ref, offsetof(PyCellObject, ob_ref));
#if PY_VERSION_HEX < 0x030c0000
	SET(long_size, offsetof(PyVarObject, ob_size));
	SET(long_digits, offsetof(PyLongObject, ob_digit));
#else
	SET(long_size, offsetof(PyLongObject, long_value.lv_tag));
	SET(long_digits, offsetof(PyLongObject, long_value.ob_digit));
	SET(long_tagged, 1);
	if (_PyLong_NON_SIZE_BITS != 3)
		die("_PyLong_NON_SIZE_BITS", _PyLong_NON_SIZE_BITS, "is not 3 (see long_tagged)");
#endif
	SET(long_digit_bits, PyLong_SHIFT);

	SET(func_code, offsetof(PyFunctionObject, func_code));
	SET(func_closure, offsetof(PyFunctionObject, func_closure));
	SET(func_qualname, offsetof(PyFunctionObject, func_qualname));
	SET(func_name, offsetof(PyFunctionObject, func_name));
	SET(method_func, offsetof(PyMethodObject, im_func));
	SET(method_self, offsetof(PyMethodObject, im_self));
	SET(cfunc_ml, offsetof(PyCFunctionObject, m_ml));
	SET(cfunc_self, offsetof(PyCFunctionObject, m_self));
	SET(methoddef_name, offsetof(PyMethodDef, ml_name));
#if PY_VERSION_HEX < 0x030a0000
	SET(module_dict, offsetof(struct module_transcribed, md_dict));
#else
	SET(module_dict, offsetof(PyModuleObject, md_dict));
#endif

#if PY_VERSION_HEX < 0x030c0000
	SET(interp_modules, offsetof(PyInterpreterState, modules));
#else
	SET(interp_modules, offsetof(PyInterpreterState, imports.modules));
#endif
	SET(tstate_dict, offsetof(PyThreadState, dict));
	SET(tstate_size, sizeof(PyThreadState));
#if PY_VERSION_HEX >= 0x030d0000 && PY_VERSION_HEX < 0x030e0000
	if (offsetof(_PyThreadStateImpl, asyncio_running_loop) != sizeof(PyThreadState))
		die("asyncio_running_loop",
		    (long)offsetof(_PyThreadStateImpl, asyncio_running_loop),
		    "is not right after PyThreadState (see tstate_size)");
#endif
}

#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030d0000
/* The codes _PyGen_yf accepts as RESUME: those that deoptimize to it (3.11
 * RESUME_QUICK), and 3.12's INSTRUMENTED_RESUME, which its is_resume() names. */
static void resume_opcodes(void)
{
	int alt = RESUME, op;

	for (op = 0; op < 256; op++) {
		if (op == RESUME || _PyOpcode_Deopt[op] != RESUME)
			continue;
		if (alt != RESUME)
			die("opcodes deoptimizing to RESUME", op, "is a third one");
		alt = op;
	}
#if PY_VERSION_HEX >= 0x030c0000
	if (alt != RESUME)
		die("opcodes deoptimizing to RESUME", alt, "besides INSTRUMENTED_RESUME");
	alt = INSTRUMENTED_RESUME;
#endif
	SET(async.op_resume, RESUME);
	SET(async.op_resume_alt, alt);
}
#endif

static void fill_async(void)
{
	SET(async.asend_gen, offsetof(struct asend_transcribed, ags_gen));
	SET(async.corowrapper_coro, offsetof(struct corowrapper_transcribed, cw_coroutine));
	SET(async.gen_qualname, offsetof(PyGenObject, gi_qualname));
#if PY_VERSION_HEX >= 0x030a0000
	SET(async.wakeup_task, offsetof(PyCFunctionObject, m_self));
#endif

#if PY_VERSION_HEX >= 0x030e0000
	/* 3.14+: frames and generators as the runtime's _Py_DebugOffsets describes them
	 * (user/pydebug.c) */
#elif PY_VERSION_HEX < 0x030b0000
	PyFrameObject *f = NULL;

	SET(async.yf_kind, PY_VERSION_HEX < 0x030a0000 ? PY_YF_LASTI_BYTES : PY_YF_LASTI_UNITS);
	SET(async.op_yield_from, YIELD_FROM);
	SET(async.gen_frame, offsetof(PyGenObject, gi_frame));
	SET(async.gen_code, offsetof(PyGenObject, gi_code));
	SET(async.frame_gen, offsetof(PyFrameObject, f_gen));
	frame_field("f_lasti", offsetof(PyFrameObject, f_lasti));
	frame_field("f_code", offsetof(PyFrameObject, f_code));
#if PY_VERSION_HEX < 0x030a0000
	SET(async.frame_stack, offsetof(PyFrameObject, f_stacktop));
#else
	SET(async.frame_stack, offsetof(PyFrameObject, f_valuestack));
	SET(async.frame_stackdepth, offsetof(PyFrameObject, f_stackdepth));
	SET(async.frame_state, offsetof(PyFrameObject, f_state));
	frame_field("f_stackdepth", m.async.frame_stackdepth);
	frame_field("f_state", m.async.frame_state);
	if (sizeof(f->f_state) != 1 || sizeof(f->f_stackdepth) != 4)
		die("f_state, f_stackdepth", (long)sizeof(f->f_state), "have unexpected sizes");
	/* the walker takes a negative f_state for created or suspended */
	if (FRAME_CREATED >= 0 || FRAME_SUSPENDED >= 0 || FRAME_EXECUTING < 0)
		die("FRAME_SUSPENDED", FRAME_SUSPENDED, "frame states are not ordered as expected");
#endif
	frame_field("frame_stack", m.async.frame_stack);
	(void)f;
#else
	_PyInterpreterFrame *f = NULL;

	SET(async.gen_frame, offsetof(PyGenObject, gi_iframe));
	SET(async.gen_frame_state, offsetof(PyGenObject, gi_frame_state));
	SET(async.frame_stack, offsetof(_PyInterpreterFrame, localsplus));
	SET(async.frame_stackdepth, offsetof(_PyInterpreterFrame, stacktop));
	frame_field("localsplus", m.async.frame_stack);
	frame_field("stacktop", m.async.frame_stackdepth);
	if (sizeof(f->stacktop) != 4 || sizeof(((PyGenObject *)0)->gi_frame_state) != 1)
		die("stacktop", (long)sizeof(f->stacktop),
		    "or gi_frame_state has an unexpected size");
#if PY_VERSION_HEX < 0x030d0000
	SET(async.yf_kind, PY_YF_RESUME);
	SET(async.gen_suspended, FRAME_SUSPENDED);
	frame_field("f_code", offsetof(_PyInterpreterFrame, f_code));
	frame_field("prev_instr", offsetof(_PyInterpreterFrame, prev_instr));
	resume_opcodes();
#else
	SET(async.yf_kind, PY_YF_STATE);
	SET(async.gen_suspended, FRAME_SUSPENDED_YIELD_FROM);
	frame_field("f_executable", offsetof(_PyInterpreterFrame, f_executable));
	frame_field("instr_ptr", offsetof(_PyInterpreterFrame, instr_ptr));
	if (FRAME_SUSPENDED >= 0)
		die("FRAME_SUSPENDED", FRAME_SUSPENDED, "is not negative");
#endif
#if PY_VERSION_HEX < 0x030c0000
	SET(async.gen_code, offsetof(PyGenObject, gi_code));
#endif
	/* the walker takes a negative state for created or suspended, else running or done */
	if (FRAME_CREATED >= 0 || m.async.gen_suspended >= 0 || FRAME_EXECUTING < 0 ||
	    FRAME_COMPLETED < 0 || FRAME_CLEARED < 0)
		die("gi_frame_state", m.async.gen_suspended, "states are not ordered as expected");
#endif
	if (!m.async.op_resume_alt)
		m.async.op_resume_alt = m.async.op_resume;
}

/* A field the readers load as one pointer from an object of size bytes. */
static void pointer_field(const char *what, unsigned long off, size_t fsize, size_t size)
{
	if (fsize != 8)
		die(what, (long)fsize, "is not pointer-sized");
	if (off + fsize > size)
		die(what, (long)off, "lies beyond its struct");
}

/* What links a thread's work to whoever asked for it: the thread's contextvars.Context,
 * where a frame's locals start (an inline array that ends the frame struct) and the names
 * of those slots in its code object. */
static void fill_contexts(void)
{
	PyThreadState *ts = NULL;
	PyCodeObject *co = NULL;

	SET(async.tstate_context, offsetof(PyThreadState, context));
	pointer_field("PyThreadState.context", m.async.tstate_context, sizeof(ts->context),
		      sizeof(PyThreadState));
#if PY_VERSION_HEX < 0x030b0000
	PyFrameObject *f = NULL;

	SET(async.frame_localsplus, offsetof(PyFrameObject, f_localsplus));
	pointer_field("f_localsplus", m.async.frame_localsplus, sizeof(f->f_localsplus[0]),
		      sizeof(PyFrameObject));
	if (m.async.frame_localsplus + sizeof(f->f_localsplus) != sizeof(PyFrameObject))
		die("f_localsplus", m.async.frame_localsplus, "does not end PyFrameObject");
	SET(code_varnames, offsetof(PyCodeObject, co_varnames));
	pointer_field("co_varnames", m.code_varnames, sizeof(co->co_varnames),
		      sizeof(PyCodeObject));
#else
	_PyInterpreterFrame *f = NULL;

	SET(async.frame_localsplus, offsetof(_PyInterpreterFrame, localsplus));
	pointer_field("localsplus", m.async.frame_localsplus, sizeof(f->localsplus[0]),
		      sizeof(_PyInterpreterFrame));
	if (m.async.frame_localsplus + sizeof(f->localsplus) != sizeof(_PyInterpreterFrame))
		die("localsplus", m.async.frame_localsplus, "does not end _PyInterpreterFrame");
	SET(code_varnames, offsetof(PyCodeObject, co_localsplusnames));
	pointer_field("co_localsplusnames", m.code_varnames, sizeof(co->co_localsplusnames),
		      sizeof(PyCodeObject));
#endif
	(void)ts;
	(void)co;
	(void)f;
}

/* What finds a free variable's cell in a function's closure by name, and a nested
 * function's code among its outer function's constants. The closure tuple is in the order
 * of co_freevars (3.8-3.10) or of the CO_FAST_FREE entries of co_localsplusnames (3.11+),
 * whose kinds are one byte each in co_localspluskinds. */
static void fill_closures(void)
{
	PyCodeObject *co = NULL;

	SET(code_consts, offsetof(PyCodeObject, co_consts));
	pointer_field("co_consts", m.code_consts, sizeof(co->co_consts), sizeof(PyCodeObject));
#if PY_VERSION_HEX < 0x030b0000
	SET(code_freevars, offsetof(PyCodeObject, co_freevars));
	pointer_field("co_freevars", m.code_freevars, sizeof(co->co_freevars),
		      sizeof(PyCodeObject));
#else
	SET(code_localspluskinds, offsetof(PyCodeObject, co_localspluskinds));
	pointer_field("co_localspluskinds", m.code_localspluskinds, sizeof(co->co_localspluskinds),
		      sizeof(PyCodeObject));
	/* _PyLocals_Kind is one byte: the bit must be one of its own, apart from the others */
	SET(fast_free, CO_FAST_FREE);
	if (!m.fast_free || (m.fast_free & (m.fast_free - 1)) ||
	    (m.fast_free & (CO_FAST_LOCAL | CO_FAST_CELL)))
		die("CO_FAST_FREE", m.fast_free, "is not a kind bit of its own");
	if (sizeof(_PyLocals_Kind) != 1)
		die("_PyLocals_Kind", (long)sizeof(_PyLocals_Kind), "is not one byte");
#endif
	(void)co;
}

/* What proves a code object by its version (see user/cpython/codever.c): co_version and
 * the counters it comes from. */
static void fill_versions(void)
{
#if PY_VERSION_HEX >= 0x030c0000
	PyCodeObject *co = NULL;
	_PyRuntimeState *rt = NULL;
	PyInterpreterState *in = NULL;

	SET(code_version, offsetof(PyCodeObject, co_version));
	if (sizeof(co->co_version) != 4)
		die("co_version", (long)sizeof(co->co_version), "is not 4 bytes");
	SET(tstate_interp, offsetof(PyThreadState, interp));
	SET(runtime_interp_main, offsetof(_PyRuntimeState, interpreters.main));
	pointer_field("interpreters.main", m.runtime_interp_main, sizeof(rt->interpreters.main),
		      sizeof(_PyRuntimeState));
	SET(runtime_interp_next_id, offsetof(_PyRuntimeState, interpreters.next_id));
	if (sizeof(rt->interpreters.next_id) != 8)
		die("interpreters.next_id", (long)sizeof(rt->interpreters.next_id),
		    "is not 8 bytes");
	SET(runtime_size, sizeof(_PyRuntimeState));
	SET(interp_size, sizeof(PyInterpreterState));
	SET(code_size, sizeof(PyCodeObject));
	SET(code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	SET(code_filename, offsetof(PyCodeObject, co_filename));
#if PY_VERSION_HEX >= 0x030d0000
	SET(interp_code_counter, offsetof(PyInterpreterState, func_state.next_version));
	if (sizeof(in->func_state.next_version) != 4)
		die("func_state.next_version", (long)sizeof(in->func_state.next_version),
		    "is not 4 bytes");
#endif
	(void)co;
	(void)rt;
	(void)in;
#endif
}

#define P(f)  printf("\t\t." #f " = %u,\n", (unsigned)m.f)
#define PX(f) printf("\t\t." #f " = 0x%llx,\n", (unsigned long long)m.f)
#define PA(f) printf("\t\t\t." #f " = %d,\n", (int)m.async.f)

static const char *dict_model_name(void)
{
	return m.dict_model == PY_DICT_38 ? "PY_DICT_38" : "PY_DICT_311";
}

static const char *instdict_model_name(void)
{
	switch (m.instdict_model) {
	case PY_INSTDICT_OFFSET:
		return "PY_INSTDICT_OFFSET";
	case PY_INSTDICT_MANAGED:
		return "PY_INSTDICT_MANAGED";
	case PY_INSTDICT_TAGGED:
		return "PY_INSTDICT_TAGGED";
	default:
		return "PY_INSTDICT_INLINE";
	}
}

static const char *yf_kind_name(void)
{
	switch (m.async.yf_kind) {
	case PY_YF_LASTI_BYTES:
		return "PY_YF_LASTI_BYTES";
	case PY_YF_LASTI_UNITS:
		return "PY_YF_LASTI_UNITS";
	case PY_YF_RESUME:
		return "PY_YF_RESUME";
	case PY_YF_STATE:
		return "PY_YF_STATE";
	default:
		return "0";
	}
}

static void print_objmodel(void)
{
	printf("\t{\n\t\t/* %s headers */\n", PY_VERSION);
	printf("\t\t.py_version = 0x%08x,\n", (unsigned)m.py_version);
	P(var_size);
	P(type_name);
	P(type_basicsize);
	P(type_flags);
	P(type_base);
	P(type_dict);
	P(type_dictoffset);
	P(type_init);
	P(type_dealloc);
	P(type_methods);
	P(type_members);
	P(heaptype_cached_keys);
	P(memberdef_size);
	P(memberdef_name);
	P(memberdef_offset);
	PX(flag_managed_dict);
	PX(flag_inline_values);
	PX(flag_long_subclass);
	PX(flag_unicode_subclass);
	printf("\t\t.dict_model = %s,\n", dict_model_name());
	printf("\t\t.instdict_model = %s,\n", instdict_model_name());
	P(dict_used);
	P(dict_keys);
	P(dict_values);
	P(keys_size);
	P(keys_log2_index_bytes);
	P(keys_kind);
	P(keys_nentries);
	P(keys_indices);
	P(entry_size);
	P(entry_key);
	P(entry_value);
	P(uentry_size);
	P(uentry_key);
	P(uentry_value);
	P(values_values);
	P(tuple_items);
	P(list_items);
	P(set_table);
	P(set_mask);
	P(set_used);
	P(setentry_size);
	P(setentry_key);
	P(weakref_object);
	P(cell_ref);
	P(long_size);
	P(long_digits);
	P(long_digit_bits);
	P(long_tagged);
	P(func_code);
	P(func_closure);
	P(func_qualname);
	P(func_name);
	P(code_varnames);
	P(code_consts);
	P(code_freevars);
	P(code_localspluskinds);
	PX(fast_free);
	P(method_func);
	P(method_self);
	P(cfunc_ml);
	P(cfunc_self);
	P(methoddef_name);
	P(module_dict);
	P(interp_modules);
	P(tstate_dict);
	P(tstate_size);
	P(code_version);
	P(tstate_interp);
	P(runtime_interp_main);
	P(runtime_interp_next_id);
	P(interp_code_counter);
	P(runtime_size);
	P(interp_size);
	P(code_size);
	P(code_firstlineno);
	P(code_filename);
	printf("\t\t.async = {\n");
	printf("\t\t\t.yf_kind = %s,\n", yf_kind_name());
	PA(gen_suspended);
	PA(op_yield_from);
	PA(op_resume);
	PA(op_resume_alt);
	PA(gen_frame);
	PA(gen_frame_state);
	PA(gen_code);
	PA(gen_qualname);
	PA(frame_gen);
	PA(frame_stack);
	PA(frame_stackdepth);
	PA(frame_state);
	PA(asend_gen);
	PA(corowrapper_coro);
	PA(wakeup_task);
	PA(tstate_context);
	PA(frame_localsplus);
	printf("\t\t},\n");
	printf("\t},\n");
}

int main(void)
{
	fill_objects();
	fill_async();
	fill_contexts();
	fill_closures();
	fill_versions();
	print_objmodel();
	return 0;
}

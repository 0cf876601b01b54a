/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Prints the struct py_layout initializer of the CPython whose headers it is compiled
 * against (-DPy_BUILD_CORE -I<include/pythonX.Y> -I<include/pythonX.Y/internal>). Exits
 * non-zero when a value does not fit what the walker can read. Built and run by
 * tools/gen-layouts.sh. */
#include <stddef.h>

#include <Python.h>
#include <frameobject.h>
#if PY_VERSION_HEX < 0x03090000
#include "pycore_pystate.h"
#else
#include "pycore_runtime.h"
#include "pycore_interp.h"
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include "pycore_frame.h"
#include "pycore_code.h"
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/pylayout.h"

#ifndef READ_MAX
#define READ_MAX 128 /* PW_READ_MAX of bpf/pywalk.h */
#endif

static struct py_layout l;

static void die(const char *what, unsigned long v, const char *why)
{
	fprintf(stderr, "gen_layout: %s: %s = %lu %s\n", PY_VERSION, what, v, why);
	exit(1);
}

#define SET(f, v)                                                                                  \
	do {                                                                                       \
		unsigned long v_ = (v);                                                            \
		l.f = v_;                                                                          \
		if (l.f != v_)                                                                     \
			die(#f, v_, "does not fit struct py_layout");                              \
	} while (0)

/* Bit position of the lowest set bit of the unicode state word after setting one of its
 * bitfields: the layout of bitfields is the compiler's business, so ask it. */
#define STATE_BIT(field, val)                                                                      \
	({                                                                                         \
		PyASCIIObject o_;                                                                  \
		uint32_t w_ = 0;                                                                   \
		memset(&o_, 0, sizeof(o_));                                                        \
		o_.state.field = (val);                                                            \
		memcpy(&w_, (char *)&o_ + offsetof(PyASCIIObject, state), sizeof(w_));             \
		w_ ? __builtin_ctz(w_) : 255;                                                      \
	})

static unsigned long max_end;

static void frame_field(const char *what, unsigned long off, unsigned long size)
{
	if (off + size > READ_MAX)
		die(what, off, "lies beyond the bytes read per frame");
	if (off + size > max_end)
		max_end = off + size;
}

static void code_field(const char *what, unsigned long off, unsigned long size)
{
	/* pw_code_fp reads READ_MAX bytes of the code object starting at ob_type */
	if (off < l.object_type || off - l.object_type + size > READ_MAX)
		die(what, off, "lies beyond the bytes read per code object");
}

static void fill(void)
{
	SET(py_version, PY_VERSION_HEX);
	SET(object_type, offsetof(PyObject, ob_type));

	SET(runtime_interp_head, offsetof(_PyRuntimeState, interpreters.head));
	SET(interp_next, offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX < 0x030b0000
	SET(interp_tstate_head, offsetof(PyInterpreterState, tstate_head));
#else
	SET(interp_tstate_head, offsetof(PyInterpreterState, threads.head));
#endif
	SET(tstate_next, offsetof(PyThreadState, next));
	SET(tstate_thread_id, offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030b0000
	SET(tstate_native_id, offsetof(PyThreadState, native_thread_id));
#endif

#if PY_VERSION_HEX < 0x030b0000
	SET(frame_kind, PY_FRAMES_OBJECT);
	SET(tstate_frame, offsetof(PyThreadState, frame));
	SET(frame_back, offsetof(PyFrameObject, f_back));
	SET(frame_code, offsetof(PyFrameObject, f_code));
	SET(frame_lasti, offsetof(PyFrameObject, f_lasti));
	frame_field("f_back", l.frame_back, sizeof(void *));
	frame_field("f_code", l.frame_code, sizeof(void *));
	frame_field("f_lasti", l.frame_lasti, sizeof(int));
	SET(owner_cstack, PY_NO_OWNER);
#else
	_PyInterpreterFrame *f = NULL;
#if PY_VERSION_HEX < 0x030d0000
	SET(frame_kind, PY_FRAMES_CFRAME);
	SET(tstate_frame, offsetof(PyThreadState, cframe));
	SET(cframe_current, offsetof(_PyCFrame, current_frame));
	SET(frame_code, offsetof(_PyInterpreterFrame, f_code));
	SET(frame_lasti, offsetof(_PyInterpreterFrame, prev_instr));
	frame_field("f_code", l.frame_code, sizeof(f->f_code));
	frame_field("prev_instr", l.frame_lasti, sizeof(f->prev_instr));
#else
	SET(frame_kind, PY_FRAMES_DIRECT);
	SET(tstate_frame, offsetof(PyThreadState, current_frame));
	SET(frame_code, offsetof(_PyInterpreterFrame, f_executable));
	SET(frame_lasti, offsetof(_PyInterpreterFrame, instr_ptr));
	frame_field("f_executable", l.frame_code, sizeof(f->f_executable));
	frame_field("instr_ptr", l.frame_lasti, sizeof(f->instr_ptr));
#endif
	SET(frame_back, offsetof(_PyInterpreterFrame, previous));
	SET(frame_owner, offsetof(_PyInterpreterFrame, owner));
	frame_field("previous", l.frame_back, sizeof(f->previous));
	frame_field("owner", l.frame_owner, sizeof(f->owner));
#if PY_VERSION_HEX >= 0x030c0000
	SET(owner_cstack, FRAME_OWNED_BY_CSTACK);
#else
	SET(owner_cstack, PY_NO_OWNER);
	SET(frame_entry, offsetof(_PyInterpreterFrame, is_entry));
	frame_field("is_entry", l.frame_entry, sizeof(f->is_entry));
#endif
#endif
	SET(frame_read, max_end);
#if PY_VERSION_HEX < 0x030b0000
	SET(lasti_kind, PY_VERSION_HEX < 0x030a0000 ? PY_LASTI_BYTES : PY_LASTI_UNITS);
#else
	SET(lasti_kind, PY_LASTI_PTR);
#endif

	SET(code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	SET(code_filename, offsetof(PyCodeObject, co_filename));
	SET(code_name, offsetof(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030b0000
	SET(code_qualname, offsetof(PyCodeObject, co_qualname));
	SET(code_code, offsetof(PyCodeObject, co_code_adaptive));
#else
	SET(code_code, offsetof(PyCodeObject, co_code));
#endif
#if PY_VERSION_HEX >= 0x030a0000
	SET(code_linetable, offsetof(PyCodeObject, co_linetable));
#else
	SET(code_linetable, offsetof(PyCodeObject, co_lnotab));
#endif
	SET(code_size, sizeof(PyCodeObject));
	code_field("co_firstlineno", l.code_firstlineno, sizeof(int));
	code_field("co_filename", l.code_filename, sizeof(void *));
	code_field("co_name", l.code_name, sizeof(void *));

	SET(unicode_state, offsetof(PyASCIIObject, state));
	SET(unicode_length, offsetof(PyASCIIObject, length));
	SET(unicode_ascii_size, sizeof(PyASCIIObject));
	SET(unicode_compact_size, sizeof(PyCompactUnicodeObject));
	SET(unicode_kind_shift, STATE_BIT(kind, 7));
	SET(unicode_compact_bit, STATE_BIT(compact, 1));
	SET(unicode_ascii_bit, STATE_BIT(ascii, 1));
	if (l.unicode_kind_shift > 29 || l.unicode_compact_bit > 31 || l.unicode_ascii_bit > 31)
		die("unicode state bits", 255, "not found");

	SET(bytes_size, offsetof(PyVarObject, ob_size));
	SET(bytes_sval, offsetof(PyBytesObject, ob_sval));
}

#define P(f) printf("\t\t." #f " = %u,\n", (unsigned)l.f)

static void print_layout(void)
{
	printf("\t{\n\t\t/* %s headers */\n", PY_VERSION);
	printf("\t\t.py_version = 0x%08x,\n", (unsigned)l.py_version);
	printf("\t\t.frame_kind = %s,\n", l.frame_kind == PY_FRAMES_OBJECT   ? "PY_FRAMES_OBJECT"
					  : l.frame_kind == PY_FRAMES_CFRAME ? "PY_FRAMES_CFRAME"
									     : "PY_FRAMES_DIRECT");
	printf("\t\t.lasti_kind = %s,\n", l.lasti_kind == PY_LASTI_BYTES   ? "PY_LASTI_BYTES"
					  : l.lasti_kind == PY_LASTI_UNITS ? "PY_LASTI_UNITS"
									   : "PY_LASTI_PTR");
	if (l.owner_cstack == PY_NO_OWNER)
		printf("\t\t.owner_cstack = PY_NO_OWNER,\n");
	else
		P(owner_cstack);
	P(runtime_interp_head);
	P(interp_next);
	P(interp_tstate_head);
	P(tstate_next);
	P(tstate_thread_id);
	P(tstate_native_id);
	P(tstate_frame);
	P(cframe_current);
	P(frame_back);
	P(frame_code);
	P(frame_lasti);
	P(frame_owner);
	if (l.frame_entry)
		P(frame_entry);
	P(frame_read);
	P(object_type);
	P(code_firstlineno);
	P(code_filename);
	P(code_name);
	P(code_qualname);
	P(code_linetable);
	P(code_code);
	P(code_size);
	P(unicode_state);
	P(unicode_length);
	P(unicode_ascii_size);
	P(unicode_compact_size);
	P(unicode_kind_shift);
	P(unicode_compact_bit);
	P(unicode_ascii_bit);
	P(bytes_size);
	P(bytes_sval);
	printf("\t},\n");
}

int main(void)
{
	fill();
	print_layout();
	return 0;
}

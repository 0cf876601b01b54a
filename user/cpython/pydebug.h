/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* CPython 3.13+ describes its own layout: _Py_DebugOffsets, at the start of _PyRuntime,
 * holds the offsets of the thread, frame, code, string and generator fields a reader
 * needs, as the running binary was compiled. Its own layout changes between release
 * lines, so a table says, for each line, which field each of its uint64_t slots is
 * (pydebug.c), and the few facts the runtime does not describe (generator states, tag
 * bits). A line without a table is refused, never guessed. */
#ifndef ASYNCBPF_PYDEBUG_H
#define ASYNCBPF_PYDEBUG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/asyncbpf.h"
#include "cpython/py_objmodel.h"

/* The fields of _Py_DebugOffsets asyncbpf reads (whatever slot each line keeps them in). */
enum pydbg_field {
	PD_RUNTIME_SIZE,
	PD_INTERPRETERS_HEAD,
	PD_INTERP_SIZE,
	PD_INTERP_NEXT,
	PD_INTERP_THREADS_HEAD,
	PD_INTERP_IMPORTS_MODULES,
	PD_TSTATE_SIZE,
	PD_TSTATE_NEXT,
	PD_TSTATE_CURRENT_FRAME,
	PD_TSTATE_BASE_FRAME,
	PD_TSTATE_THREAD_ID,
	PD_TSTATE_NATIVE_THREAD_ID,
	PD_FRAME_PREVIOUS,
	PD_FRAME_EXECUTABLE,
	PD_FRAME_INSTR_PTR,
	PD_FRAME_LOCALSPLUS,
	PD_FRAME_OWNER,
	PD_FRAME_STACKPOINTER,
	PD_CODE_SIZE,
	PD_CODE_FILENAME,
	PD_CODE_NAME,
	PD_CODE_QUALNAME,
	PD_CODE_LINETABLE,
	PD_CODE_FIRSTLINENO,
	PD_CODE_ADAPTIVE,
	PD_CODE_LOCALSPLUSNAMES,
	PD_CODE_LOCALSPLUSKINDS,
	PD_OB_TYPE,
	PD_TYPE_NAME,
	PD_TYPE_FLAGS,
	PD_TYPE_BASICSIZE,
	PD_TYPE_DICTOFFSET,
	PD_HEAPTYPE_CACHED_KEYS,
	PD_TUPLE_ITEM,
	PD_LIST_ITEM,
	PD_SET_USED,
	PD_SET_TABLE,
	PD_SET_MASK,
	PD_DICT_KEYS,
	PD_DICT_VALUES,
	PD_LONG_TAG,
	PD_LONG_DIGIT,
	PD_BYTES_SIZE,
	PD_BYTES_SVAL,
	PD_UNICODE_STATE,
	PD_UNICODE_LENGTH,
	PD_UNICODE_ASCII_SIZE,
	PD_UNICODE_COMPACT_SIZE,
	PD_GEN_IFRAME,
	PD_GEN_FRAME_STATE,
	PD_LLIST_NEXT,
	PD_NFIELDS
};

/* What a release line's _Py_DebugOffsets does not say, from its headers. */
struct pydbg_facts {
	int8_t gen_executing;  /* FRAME_EXECUTING */
	int8_t gen_yield_from; /* FRAME_SUSPENDED_YIELD_FROM */
	uint8_t yf_kind;       /* enum py_yf_kind */
	uint8_t yf_slots;      /* PY_YF_STACKPTR: the awaited object is stackpointer[-yf_slots] */
	uint8_t tag_bits;      /* low bits of a _PyStackRef that are tags */
	uint8_t owner_shim;    /* lowest frame owner of entry and C-stack shim frames */
	uint8_t task_lists;    /* _asyncio keeps tasks in per-thread lists and names each
				* task's awaiters (fut_awaited_by): .AsyncioDebug describes both */
	uint8_t unicode_kind_shift, unicode_compact_bit, unicode_ascii_bit;
	/* used where _Py_DebugOffsets lacks the field, 0 for none */
	uint16_t gen_iframe, gen_frame_state;
	uint16_t frame_stacktop; /* 3.13: int index of the top of the value stack */
	uint16_t compact_extra;	 /* sizeof(PyCompactUnicodeObject) - sizeof(PyASCIIObject) */
};

/* One release line: its _Py_DebugOffsets as a list of the names of its uint64_t slots
 * in order (the cookie takes the first), and its facts. */
struct pydbg_table {
	uint32_t minor; /* PYV(major, minor) */
	const char *const *slots;
	unsigned int nslots;
	struct pydbg_facts facts;
};

extern const struct pydbg_table pydbg_tables[];
extern const unsigned int pydbg_tables_len;

#define PYDBG_HEAD 24 /* cookie, version, free_threaded: the same in every line */

struct pydbg {
	uint32_t version; /* PY_VERSION_HEX, as _Py_DebugOffsets.version says */
	const struct pydbg_table *table;
	uint64_t v[PD_NFIELDS];
	uint8_t has[PD_NFIELDS]; /* the line's _Py_DebugOffsets has the field */
};

/* The table of a release line (PYV_MINOR_OF of a version), NULL if none. */
const struct pydbg_table *pydbg_table_find(uint32_t version_hex);
/* Position of a slot in a table's _Py_DebugOffsets, -1 if it has none of that name. */
int pydbg_slot(const struct pydbg_table *t, const char *name);
/* Bytes of _Py_DebugOffsets a table describes. */
size_t pydbg_size(const struct pydbg_table *t);

/* Decodes len bytes of _Py_DebugOffsets. expect is the interpreter's PY_VERSION_HEX (from
 * Py_Version or its version string), which the description must carry. 0, or -1 with a
 * one-line reason: no cookie, another version, free-threaded, a line without a table,
 * too short. With len == PYDBG_HEAD only the head is checked (d->table is set). */
int pydbg_decode(const void *buf, size_t len, uint32_t expect, struct pydbg *d, char *why,
		 size_t whylen);

/* Reads and decodes the _Py_DebugOffsets at runtime in pid (the head first, then as many
 * bytes as its table says). 0, -1 with a reason (naming no pid). */
int pydbg_read(pid_t pid, uint64_t runtime, uint32_t expect, struct pydbg *d, char *why,
	       size_t whylen);

/* Builds the walker's layouts from a decoded description: all of l, and the generator and
 * frame part of a (the caller adds _asyncio's objects). 0, -1 with a reason. */
int pydbg_layout(const struct pydbg *d, struct py_layout *l, struct py_async_layout *a, char *why,
		 size_t whylen);

/* Whether the runtime is laid out as the headers the object model's code-version fields
 * came from (they are not in _Py_DebugOffsets): the runtime, interpreter and code structs
 * of the same sizes, co_version's neighbours in place. 0, or -1 with a one-line why. */
int pydbg_check_versions(const struct pydbg *d, const struct py_objmodel *om, char *why,
			 size_t whylen);

/* Checks an object model (generated from the headers of one micro of the line) against
 * what the runtime says of the same object fields (sizeof(PyThreadState) may change within
 * a line, 3.13.0's 304 is 3.13.18's 312, and the model does not use it). 0, -1 with a
 * reason naming the first field that differs. */
int pydbg_check_objmodel(const struct pydbg *d, const struct py_objmodel *om, char *why,
			 size_t whylen);

/* "3.13, 3.14, 3.15": the lines with a table. */
void pydbg_known(char *buf, size_t len);

/* "3.15.2", "3.14.0rc1": a PY_VERSION_HEX as CPython writes it. */
void pydbg_version_str(uint32_t v, char *buf, size_t len);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Between the generated table (user/cpython/py_layouts.c) and the hand-written code that uses
 * it (user/cpython/py_runtime_check.c); no one else needs it. */
#ifndef ASYNCBPF_PY_LAYOUTS_TABLE_H
#define ASYNCBPF_PY_LAYOUTS_TABLE_H

#include <stddef.h>

#include "py_layouts.h"

/* One value of _Py_DebugOffsets and the layout field it must equal. */
struct py_debug_field {
	const char *name; /* path inside _Py_DebugOffsets, "thread_state.current_frame" */
	__u16 pos;	  /* offset of that uint64_t inside _Py_DebugOffsets */
	__u16 field;	  /* offsetof(struct py_layout, ...) */
	__u8 width;	  /* sizeof that layout field */
};

#define PY_DEBUG_FIELD(name, pos, f)                                                               \
	{                                                                                          \
		name, pos, offsetof(struct py_layout, f), sizeof(((struct py_layout *)0)->f)       \
	}

/* _Py_DebugOffsets of one release line (3.13+) as its headers declare it. */
struct py_debug_desc {
	__u32 minor; /* PYV(major, minor) */
	__u16 size;  /* sizeof(_Py_DebugOffsets) */
	__u16 cookie_pos;
	__u16 version_pos;
	__u16 free_threaded_pos;
	__u32 nfields;
	const struct py_debug_field *fields;
};

extern const struct py_layout py_layout_table[];
extern const unsigned int py_layout_table_len;
extern const struct py_debug_desc py_debug_descs[];
extern const unsigned int py_debug_descs_len;

#endif

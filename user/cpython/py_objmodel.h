/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Offsets of CPython's object model that userspace needs to read objects of another
 * process (types, dicts, instance attributes, containers, functions): one per release
 * line 3.8-3.13, generated with offsetof by tools/gen-layouts, plus the struct layouts
 * of _asyncio (transcribed, see bpf/pyasync.h). Userspace only; BPF gets bpf/pyasync.h. */
#ifndef ASYNCBPF_PY_OBJMODEL_H
#define ASYNCBPF_PY_OBJMODEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/pyasync.h"

enum py_dict_model {
	PY_DICT_38 = 1,	 /* 3.8-3.10: dk_size, dk_indices sized by dk_size, entries of 24 bytes,
			  * split tables keep values in ma_values[] */
	PY_DICT_311 = 2, /* 3.11+: dk_log2_size, dk_log2_index_bytes, dk_kind (unicode keys
			  * have 16-byte entries), ma_values->values[] */
};

enum py_instdict_model {
	PY_INSTDICT_OFFSET = 1,	 /* 3.8-3.10: dict pointer at obj + tp_dictoffset */
	PY_INSTDICT_MANAGED = 2, /* 3.11: Py_TPFLAGS_MANAGED_DICT: dict at obj - 3 words, values
				  * at obj - 4 words with keys in the heap type's ht_cached_keys */
	PY_INSTDICT_TAGGED = 3,	 /* 3.12: obj - 3 words holds the dict, or the values pointer
				  * minus one (bit 0 set); keys in ht_cached_keys */
	PY_INSTDICT_INLINE = 4,	 /* 3.13: obj - 3 words holds the dict; else values inline after
				  * the object (tp_basicsize) when Py_TPFLAGS_INLINE_VALUES */
};

struct py_objmodel {
	uint32_t py_version; /* PY_VERSION_HEX of the headers */

	/* PyVarObject / PyTypeObject / PyHeapTypeObject */
	uint16_t var_size;		/* ob_size */
	uint16_t type_name;		/* tp_name (const char *) */
	uint16_t type_basicsize;	/* tp_basicsize */
	uint16_t type_flags;		/* tp_flags (unsigned long) */
	uint16_t type_base;		/* tp_base */
	uint16_t type_dict;		/* tp_dict */
	uint16_t type_dictoffset;	/* tp_dictoffset */
	uint16_t type_init;		/* tp_init */
	uint16_t type_dealloc;		/* tp_dealloc */
	uint16_t type_methods;		/* tp_methods (PyMethodDef *) */
	uint16_t type_members;		/* tp_members (PyMemberDef *) */
	uint16_t heaptype_cached_keys;	/* ht_cached_keys */
	uint16_t memberdef_size;	/* sizeof(PyMemberDef) */
	uint16_t memberdef_name;	/* name */
	uint16_t memberdef_offset;	/* offset (Py_ssize_t) */
	uint64_t flag_managed_dict;	/* Py_TPFLAGS_MANAGED_DICT (3.11+), else 0 */
	uint64_t flag_inline_values;	/* Py_TPFLAGS_INLINE_VALUES (3.13+), else 0 */
	uint64_t flag_long_subclass;	/* Py_TPFLAGS_LONG_SUBCLASS */
	uint64_t flag_unicode_subclass; /* Py_TPFLAGS_UNICODE_SUBCLASS */

	/* dict */
	uint8_t dict_model;	/* enum py_dict_model */
	uint8_t instdict_model; /* enum py_instdict_model */
	uint16_t dict_used;	/* ma_used */
	uint16_t dict_keys;	/* ma_keys */
	uint16_t dict_values;	/* ma_values */
	uint16_t keys_size;	/* 3.8-3.10: dk_size (Py_ssize_t); 3.11+: dk_log2_size (uint8) */
	uint16_t keys_log2_index_bytes; /* 3.11+: dk_log2_index_bytes (uint8) */
	uint16_t keys_kind;		/* 3.11+: dk_kind (uint8; 0 general, else unicode keys) */
	uint16_t keys_nentries;		/* dk_nentries */
	uint16_t keys_indices;		/* dk_indices */
	uint16_t entry_size;		/* sizeof(PyDictKeyEntry): hash, key, value */
	uint16_t entry_key, entry_value;
	uint16_t uentry_size; /* 3.11+: sizeof(PyDictUnicodeEntry): key, value */
	uint16_t uentry_key, uentry_value;
	uint16_t values_values; /* offset of the values array in PyDictValues (3.11+; 0 before) */

	/* containers */
	uint16_t tuple_items;			/* ob_item */
	uint16_t list_items;			/* ob_item (PyObject **) */
	uint16_t set_table, set_mask, set_used; /* PySetObject */
	uint16_t setentry_size, setentry_key;
	uint16_t weakref_object; /* PyWeakReference.wr_object */
	uint16_t cell_ref;	 /* PyCellObject.ob_ref */
	uint16_t long_size;	 /* 3.8-3.11: ob_size (sign and digit count); 3.12+: lv_tag */
	uint16_t long_digits;	 /* ob_digit */
	uint8_t long_digit_bits; /* PyLong_SHIFT */
	uint8_t long_tagged;	 /* 3.12+: lv_tag encoding (count << 3 | sign bits) */

	/* functions and methods */
	uint16_t func_code, func_closure, func_qualname, func_name;
	uint16_t code_varnames; /* PyCodeObject.co_varnames (3.8-3.10), co_localsplusnames
				 * (3.11+): a tuple of str naming the frame's local slots */
	uint16_t code_consts;	/* PyCodeObject.co_consts: a tuple (nested functions' code) */
	uint16_t code_freevars; /* 3.8-3.10: co_freevars, a tuple of str in closure order;
				 * 0 from 3.11 (code_localspluskinds says which names are free) */
	uint16_t code_localspluskinds; /* 3.11+: co_localspluskinds, a bytes object of one kind
					* byte per co_localsplusnames entry; 0 before */
	uint8_t fast_free; /* 3.11+: CO_FAST_FREE, the kind bit of a free variable (its entries
			    * in co_localsplusnames, in order, are the closure's); 0 before */
	uint16_t method_func, method_self; /* PyMethodObject im_func, im_self */
	uint16_t cfunc_ml, cfunc_self;	   /* PyCFunctionObject m_ml, m_self */
	uint16_t methoddef_name;	   /* PyMethodDef.ml_name */
	uint16_t partial_fn, partial_args; /* functools.partial (transcribed) */
	uint16_t module_dict;		   /* PyModuleObject.md_dict */

	/* where sys.modules lives */
	uint16_t interp_modules; /* PyInterpreterState.modules (3.8-3.11), .imports.modules (3.12+)
				  */
	uint16_t tstate_dict;	 /* PyThreadState.dict */
	uint16_t tstate_size; /* sizeof(PyThreadState): 3.13 keeps the running loop right after */

	/* code versions (3.12+; 0 before): PyCodeObject.co_version, given at creation from a
	 * counter that only grows (_Py_next_func_version, a global, in 3.12; the interpreter's
	 * func_state.next_version from 3.13, interp_code_counter its offset); the main
	 * interpreter and the count of interpreters ever made in _PyRuntime.interpreters */
	uint16_t code_version;
	uint16_t tstate_interp; /* PyThreadState.interp */
	uint16_t runtime_interp_main;
	uint16_t runtime_interp_next_id;
	uint32_t interp_code_counter;
	/* what a 3.13+ runtime's _Py_DebugOffsets must agree with before they are used: the
	 * sizes of the three structs and co_version's neighbours */
	uint32_t runtime_size, interp_size;
	uint16_t code_size, code_firstlineno, code_filename;

	struct py_async_layout async;
};

/* Object model for a release, NULL when unsupported. */
const struct py_objmodel *py_objmodel_find(uint32_t version_hex);

/* Checks the transcribed _asyncio layout against the live _asyncio.Future and
 * _asyncio.Task type objects of pid (their tp_basicsize against fut_size and task_size).
 * 0 when they agree; -1 with a one-line reason in why on mismatch or read failure. */
int py_objmodel_check_asyncio(const struct py_objmodel *om, pid_t pid, uint64_t future_type,
			      uint64_t task_type, char *why, size_t len);

#endif

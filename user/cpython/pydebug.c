// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "process/memread.h"
#include "cpython/py_layouts.h"
#include "cpython/pydebug.h"

#define COOKIE "xdebugpy"

/* Where each release line keeps what: the uint64_t slots of its _Py_DebugOffsets in
 * order, as Include/internal/pycore_runtime.h (3.13) and pycore_debug_offsets.h (3.14+)
 * declare them. Every slot is 8 bytes and the cookie is 8 chars, so slot i is at 8 * i. */
static const char *const slots_3_13[] = {
	"cookie",
	"version",
	"free_threaded",
	"runtime_state.size",
	"runtime_state.finalizing",
	"runtime_state.interpreters_head",
	"interpreter_state.size",
	"interpreter_state.id",
	"interpreter_state.next",
	"interpreter_state.threads_head",
	"interpreter_state.gc",
	"interpreter_state.imports_modules",
	"interpreter_state.sysdict",
	"interpreter_state.builtins",
	"interpreter_state.ceval_gil",
	"interpreter_state.gil_runtime_state",
	"interpreter_state.gil_runtime_state_enabled",
	"interpreter_state.gil_runtime_state_locked",
	"interpreter_state.gil_runtime_state_holder",
	"thread_state.size",
	"thread_state.prev",
	"thread_state.next",
	"thread_state.interp",
	"thread_state.current_frame",
	"thread_state.thread_id",
	"thread_state.native_thread_id",
	"thread_state.datastack_chunk",
	"thread_state.status",
	"interpreter_frame.size",
	"interpreter_frame.previous",
	"interpreter_frame.executable",
	"interpreter_frame.instr_ptr",
	"interpreter_frame.localsplus",
	"interpreter_frame.owner",
	"code_object.size",
	"code_object.filename",
	"code_object.name",
	"code_object.qualname",
	"code_object.linetable",
	"code_object.firstlineno",
	"code_object.argcount",
	"code_object.localsplusnames",
	"code_object.localspluskinds",
	"code_object.co_code_adaptive",
	"pyobject.size",
	"pyobject.ob_type",
	"type_object.size",
	"type_object.tp_name",
	"type_object.tp_repr",
	"type_object.tp_flags",
	"tuple_object.size",
	"tuple_object.ob_item",
	"tuple_object.ob_size",
	"list_object.size",
	"list_object.ob_item",
	"list_object.ob_size",
	"dict_object.size",
	"dict_object.ma_keys",
	"dict_object.ma_values",
	"float_object.size",
	"float_object.ob_fval",
	"long_object.size",
	"long_object.lv_tag",
	"long_object.ob_digit",
	"bytes_object.size",
	"bytes_object.ob_size",
	"bytes_object.ob_sval",
	"unicode_object.size",
	"unicode_object.state",
	"unicode_object.length",
	"unicode_object.asciiobject_size",
	"gc.size",
	"gc.collecting",
};

static const char *const slots_3_14[] = {
	"cookie",
	"version",
	"free_threaded",
	"runtime_state.size",
	"runtime_state.finalizing",
	"runtime_state.interpreters_head",
	"interpreter_state.size",
	"interpreter_state.id",
	"interpreter_state.next",
	"interpreter_state.threads_head",
	"interpreter_state.threads_main",
	"interpreter_state.gc",
	"interpreter_state.imports_modules",
	"interpreter_state.sysdict",
	"interpreter_state.builtins",
	"interpreter_state.ceval_gil",
	"interpreter_state.gil_runtime_state",
	"interpreter_state.gil_runtime_state_enabled",
	"interpreter_state.gil_runtime_state_locked",
	"interpreter_state.gil_runtime_state_holder",
	"interpreter_state.code_object_generation",
	"interpreter_state.tlbc_generation",
	"thread_state.size",
	"thread_state.prev",
	"thread_state.next",
	"thread_state.interp",
	"thread_state.current_frame",
	"thread_state.thread_id",
	"thread_state.native_thread_id",
	"thread_state.datastack_chunk",
	"thread_state.status",
	"interpreter_frame.size",
	"interpreter_frame.previous",
	"interpreter_frame.executable",
	"interpreter_frame.instr_ptr",
	"interpreter_frame.localsplus",
	"interpreter_frame.owner",
	"interpreter_frame.stackpointer",
	"interpreter_frame.tlbc_index",
	"code_object.size",
	"code_object.filename",
	"code_object.name",
	"code_object.qualname",
	"code_object.linetable",
	"code_object.firstlineno",
	"code_object.argcount",
	"code_object.localsplusnames",
	"code_object.localspluskinds",
	"code_object.co_code_adaptive",
	"code_object.co_tlbc",
	"pyobject.size",
	"pyobject.ob_type",
	"type_object.size",
	"type_object.tp_name",
	"type_object.tp_repr",
	"type_object.tp_flags",
	"tuple_object.size",
	"tuple_object.ob_item",
	"tuple_object.ob_size",
	"list_object.size",
	"list_object.ob_item",
	"list_object.ob_size",
	"set_object.size",
	"set_object.used",
	"set_object.table",
	"set_object.mask",
	"dict_object.size",
	"dict_object.ma_keys",
	"dict_object.ma_values",
	"float_object.size",
	"float_object.ob_fval",
	"long_object.size",
	"long_object.lv_tag",
	"long_object.ob_digit",
	"bytes_object.size",
	"bytes_object.ob_size",
	"bytes_object.ob_sval",
	"unicode_object.size",
	"unicode_object.state",
	"unicode_object.length",
	"unicode_object.asciiobject_size",
	"gc.size",
	"gc.collecting",
	"gen_object.size",
	"gen_object.gi_name",
	"gen_object.gi_iframe",
	"gen_object.gi_frame_state",
	"llist_node.next",
	"llist_node.prev",
	"debugger_support.eval_breaker",
	"debugger_support.remote_debugger_support",
	"debugger_support.remote_debugging_enabled",
	"debugger_support.debugger_pending_call",
	"debugger_support.debugger_script_path",
	"debugger_support.debugger_script_path_size",
};

static const char *const slots_3_15[] = {
	"cookie",
	"version",
	"free_threaded",
	"runtime_state.size",
	"runtime_state.finalizing",
	"runtime_state.interpreters_head",
	"interpreter_state.size",
	"interpreter_state.id",
	"interpreter_state.next",
	"interpreter_state.threads_head",
	"interpreter_state.threads_main",
	"interpreter_state.gc",
	"interpreter_state.imports_modules",
	"interpreter_state.sysdict",
	"interpreter_state.builtins",
	"interpreter_state.ceval_gil",
	"interpreter_state.gil_runtime_state",
	"interpreter_state.gil_runtime_state_enabled",
	"interpreter_state.gil_runtime_state_locked",
	"interpreter_state.gil_runtime_state_holder",
	"interpreter_state.code_object_generation",
	"interpreter_state.tlbc_generation",
	"thread_state.size",
	"thread_state.prev",
	"thread_state.next",
	"thread_state.interp",
	"thread_state.current_frame",
	"thread_state.base_frame",
	"thread_state.last_profiled_frame",
	"thread_state.last_profiled_frame_seq",
	"thread_state.thread_id",
	"thread_state.native_thread_id",
	"thread_state.datastack_chunk",
	"thread_state.status",
	"thread_state.holds_gil",
	"thread_state.gil_requested",
	"thread_state.current_exception",
	"thread_state.exc_state",
	"err_stackitem.exc_value",
	"interpreter_frame.size",
	"interpreter_frame.previous",
	"interpreter_frame.executable",
	"interpreter_frame.instr_ptr",
	"interpreter_frame.localsplus",
	"interpreter_frame.owner",
	"interpreter_frame.stackpointer",
	"interpreter_frame.tlbc_index",
	"code_object.size",
	"code_object.filename",
	"code_object.name",
	"code_object.qualname",
	"code_object.linetable",
	"code_object.firstlineno",
	"code_object.argcount",
	"code_object.localsplusnames",
	"code_object.localspluskinds",
	"code_object.co_code_adaptive",
	"code_object.co_tlbc",
	"pyobject.size",
	"pyobject.ob_type",
	"type_object.size",
	"type_object.tp_name",
	"type_object.tp_repr",
	"type_object.tp_flags",
	"type_object.tp_basicsize",
	"type_object.tp_dictoffset",
	"heap_type_object.size",
	"heap_type_object.ht_cached_keys",
	"tuple_object.size",
	"tuple_object.ob_item",
	"tuple_object.ob_size",
	"list_object.size",
	"list_object.ob_item",
	"list_object.ob_size",
	"set_object.size",
	"set_object.used",
	"set_object.table",
	"set_object.mask",
	"dict_object.size",
	"dict_object.ma_keys",
	"dict_object.ma_values",
	"float_object.size",
	"float_object.ob_fval",
	"long_object.size",
	"long_object.lv_tag",
	"long_object.ob_digit",
	"bytes_object.size",
	"bytes_object.ob_size",
	"bytes_object.ob_sval",
	"unicode_object.size",
	"unicode_object.state",
	"unicode_object.length",
	"unicode_object.asciiobject_size",
	"unicode_object.compactunicodeobject_size",
	"gc.size",
	"gc.collecting",
	"gc.frame",
	"gc.generation_stats_size",
	"gc.generation_stats",
	"gen_object.size",
	"gen_object.gi_name",
	"gen_object.gi_iframe",
	"gen_object.gi_frame_state",
	"llist_node.next",
	"llist_node.prev",
	"debugger_support.eval_breaker",
	"debugger_support.remote_debugger_support",
	"debugger_support.remote_debugging_enabled",
	"debugger_support.debugger_pending_call",
	"debugger_support.debugger_script_path",
	"debugger_support.debugger_script_path_size",
};

#define SLOTS(s) s, sizeof(s) / sizeof(s[0])

/* The PyASCIIObject state bitfield (interned:2, kind:3, compact:1, ascii:1) is the same
 * in 3.13-3.15. */
const struct pydbg_table pydbg_tables[] = {
	{
		.minor = PYV(3, 13),
		SLOTS(slots_3_13),
		.facts = {
			.gen_executing = 0,
			.gen_yield_from = -1,
			.yf_kind = PY_YF_STATE,
			.owner_shim = 3, /* FRAME_OWNED_BY_CSTACK */
			.unicode_kind_shift = 2,
			.unicode_compact_bit = 5,
			.unicode_ascii_bit = 6,
			.gen_iframe = 72,
			.gen_frame_state = 67,
			.frame_stacktop = 64,
			.compact_extra = 16,
		},
	},
	{
		.minor = PYV(3, 14),
		SLOTS(slots_3_14),
		.facts = {
			.gen_executing = 0,
			.gen_yield_from = -1,
			.yf_kind = PY_YF_STACKPTR,
			.yf_slots = 1,
			.tag_bits = 2, /* Py_TAG_BITS of the default build */
			.owner_shim = 3, /* FRAME_OWNED_BY_INTERPRETER, then CSTACK */
			.task_lists = 1,
			.unicode_kind_shift = 2,
			.unicode_compact_bit = 5,
			.unicode_ascii_bit = 6,
			.compact_extra = 16,
		},
	},
	{
		.minor = PYV(3, 15),
		SLOTS(slots_3_15),
		.facts = {
			/* renumbered: CREATED 0, SUSPENDED 1, YIELD_FROM 2, EXECUTING 4, CLEARED 5 */
			.gen_executing = 4,
			.gen_yield_from = 2,
			.yf_kind = PY_YF_STACKPTR,
			.yf_slots = 2,
			.tag_bits = 2,
			.owner_shim = 3, /* FRAME_OWNED_BY_INTERPRETER */
			.task_lists = 1,
			.unicode_kind_shift = 2,
			.unicode_compact_bit = 5,
			.unicode_ascii_bit = 6,
		},
	},
};

const unsigned int pydbg_tables_len = sizeof(pydbg_tables) / sizeof(pydbg_tables[0]);

static const char *const field_names[PD_NFIELDS] = {
	[PD_RUNTIME_SIZE] = "runtime_state.size",
	[PD_INTERP_SIZE] = "interpreter_state.size",
	[PD_INTERPRETERS_HEAD] = "runtime_state.interpreters_head",
	[PD_INTERP_NEXT] = "interpreter_state.next",
	[PD_INTERP_THREADS_HEAD] = "interpreter_state.threads_head",
	[PD_INTERP_IMPORTS_MODULES] = "interpreter_state.imports_modules",
	[PD_TSTATE_SIZE] = "thread_state.size",
	[PD_TSTATE_NEXT] = "thread_state.next",
	[PD_TSTATE_CURRENT_FRAME] = "thread_state.current_frame",
	[PD_TSTATE_BASE_FRAME] = "thread_state.base_frame",
	[PD_TSTATE_THREAD_ID] = "thread_state.thread_id",
	[PD_TSTATE_NATIVE_THREAD_ID] = "thread_state.native_thread_id",
	[PD_FRAME_PREVIOUS] = "interpreter_frame.previous",
	[PD_FRAME_EXECUTABLE] = "interpreter_frame.executable",
	[PD_FRAME_INSTR_PTR] = "interpreter_frame.instr_ptr",
	[PD_FRAME_LOCALSPLUS] = "interpreter_frame.localsplus",
	[PD_FRAME_OWNER] = "interpreter_frame.owner",
	[PD_FRAME_STACKPOINTER] = "interpreter_frame.stackpointer",
	[PD_CODE_SIZE] = "code_object.size",
	[PD_CODE_FILENAME] = "code_object.filename",
	[PD_CODE_NAME] = "code_object.name",
	[PD_CODE_QUALNAME] = "code_object.qualname",
	[PD_CODE_LINETABLE] = "code_object.linetable",
	[PD_CODE_FIRSTLINENO] = "code_object.firstlineno",
	[PD_CODE_ADAPTIVE] = "code_object.co_code_adaptive",
	[PD_CODE_LOCALSPLUSNAMES] = "code_object.localsplusnames",
	[PD_CODE_LOCALSPLUSKINDS] = "code_object.localspluskinds",
	[PD_OB_TYPE] = "pyobject.ob_type",
	[PD_TYPE_NAME] = "type_object.tp_name",
	[PD_TYPE_FLAGS] = "type_object.tp_flags",
	[PD_TYPE_BASICSIZE] = "type_object.tp_basicsize",
	[PD_TYPE_DICTOFFSET] = "type_object.tp_dictoffset",
	[PD_HEAPTYPE_CACHED_KEYS] = "heap_type_object.ht_cached_keys",
	[PD_TUPLE_ITEM] = "tuple_object.ob_item",
	[PD_LIST_ITEM] = "list_object.ob_item",
	[PD_SET_USED] = "set_object.used",
	[PD_SET_TABLE] = "set_object.table",
	[PD_SET_MASK] = "set_object.mask",
	[PD_DICT_KEYS] = "dict_object.ma_keys",
	[PD_DICT_VALUES] = "dict_object.ma_values",
	[PD_LONG_TAG] = "long_object.lv_tag",
	[PD_LONG_DIGIT] = "long_object.ob_digit",
	[PD_BYTES_SIZE] = "bytes_object.ob_size",
	[PD_BYTES_SVAL] = "bytes_object.ob_sval",
	[PD_UNICODE_STATE] = "unicode_object.state",
	[PD_UNICODE_LENGTH] = "unicode_object.length",
	[PD_UNICODE_ASCII_SIZE] = "unicode_object.asciiobject_size",
	[PD_UNICODE_COMPACT_SIZE] = "unicode_object.compactunicodeobject_size",
	[PD_GEN_IFRAME] = "gen_object.gi_iframe",
	[PD_GEN_FRAME_STATE] = "gen_object.gi_frame_state",
	[PD_LLIST_NEXT] = "llist_node.next",
};

/* Every field that every line describes; the others are looked for, and facts stand in. */
static const enum pydbg_field required[] = {
	PD_INTERPRETERS_HEAD,
	PD_INTERP_NEXT,
	PD_INTERP_THREADS_HEAD,
	PD_INTERP_IMPORTS_MODULES,
	PD_TSTATE_SIZE,
	PD_TSTATE_NEXT,
	PD_TSTATE_CURRENT_FRAME,
	PD_TSTATE_THREAD_ID,
	PD_TSTATE_NATIVE_THREAD_ID,
	PD_FRAME_PREVIOUS,
	PD_FRAME_EXECUTABLE,
	PD_FRAME_INSTR_PTR,
	PD_FRAME_LOCALSPLUS,
	PD_FRAME_OWNER,
	PD_CODE_SIZE,
	PD_CODE_FILENAME,
	PD_CODE_NAME,
	PD_CODE_QUALNAME,
	PD_CODE_LINETABLE,
	PD_CODE_FIRSTLINENO,
	PD_CODE_ADAPTIVE,
	PD_OB_TYPE,
	PD_TYPE_NAME,
	PD_TYPE_FLAGS,
	PD_TUPLE_ITEM,
	PD_LIST_ITEM,
	PD_DICT_KEYS,
	PD_DICT_VALUES,
	PD_LONG_TAG,
	PD_LONG_DIGIT,
	PD_BYTES_SIZE,
	PD_BYTES_SVAL,
	PD_UNICODE_STATE,
	PD_UNICODE_LENGTH,
	PD_UNICODE_ASCII_SIZE,
};

void pydbg_version_str(uint32_t v, char *buf, size_t len)
{
	static const char *const level[16] = { [0xA] = "a", [0xB] = "b", [0xC] = "rc" };
	unsigned int lv = PYV_LEVEL(v);

	if (lv == 0xF || !level[lv])
		snprintf(buf, len, "%u.%u.%u", PYV_MAJOR(v), PYV_MINOR(v), PYV_MICRO(v));
	else
		snprintf(buf, len, "%u.%u.%u%s%u", PYV_MAJOR(v), PYV_MINOR(v), PYV_MICRO(v),
			 level[lv], v & 0xf);
}

const struct pydbg_table *pydbg_table_find(uint32_t version_hex)
{
	for (unsigned int i = 0; i < pydbg_tables_len; i++)
		if (pydbg_tables[i].minor == PYV_MINOR_OF(version_hex))
			return &pydbg_tables[i];
	return NULL;
}

int pydbg_slot(const struct pydbg_table *t, const char *name)
{
	for (unsigned int i = 0; i < t->nslots; i++)
		if (!strcmp(t->slots[i], name))
			return (int)i * 8;
	return -1;
}

size_t pydbg_size(const struct pydbg_table *t)
{
	return (size_t)t->nslots * 8;
}

void pydbg_known(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < pydbg_tables_len && n < len; i++) {
		int k = snprintf(buf + n, len - n, "%s%u.%u", i ? ", " : "",
				 PYV_MAJOR(pydbg_tables[i].minor),
				 PYV_MINOR(pydbg_tables[i].minor));

		if (k < 0)
			break;
		n += (size_t)k;
	}
}

static uint64_t u64_at(const unsigned char *buf, size_t pos)
{
	uint64_t v;

	memcpy(&v, buf + pos, sizeof(v));
	return v;
}

int pydbg_decode(const void *buf, size_t len, uint32_t expect, struct pydbg *d, char *why,
		 size_t whylen)
{
	const unsigned char *b = buf;
	char ver[32], known[64];
	uint64_t found;

	memset(d, 0, sizeof(*d));
	pydbg_version_str(expect, ver, sizeof(ver));
	if (len < PYDBG_HEAD || memcmp(b, COOKIE, 8)) {
		snprintf(why, whylen,
			 "Python %s without _Py_DebugOffsets at _PyRuntime, not supported", ver);
		return -1;
	}
	found = u64_at(b, 8);
	if (found != expect) {
		snprintf(why, whylen,
			 "Python %s: _Py_DebugOffsets.version is 0x%llx, expected 0x%08x", ver,
			 (unsigned long long)found, expect);
		return -1;
	}
	d->version = expect;
	if (u64_at(b, 16)) {
		snprintf(why, whylen, "Python %s is a free-threaded build, not supported", ver);
		return -1;
	}
	d->table = pydbg_table_find(expect);
	if (!d->table) {
		pydbg_known(known, sizeof(known));
		snprintf(why, whylen,
			 "Python %s is not supported: no table for its _Py_DebugOffsets (version "
			 "0x%08x; tables for %s)",
			 ver, expect, known);
		return -1;
	}
	if (len == PYDBG_HEAD)
		return 0;
	if (len < pydbg_size(d->table)) {
		snprintf(why, whylen, "Python %s: _Py_DebugOffsets cut short (%zu of %zu bytes)",
			 ver, len, pydbg_size(d->table));
		return -1;
	}
	for (int f = 0; f < PD_NFIELDS; f++) {
		int pos = pydbg_slot(d->table, field_names[f]);

		if (pos < 0)
			continue;
		d->v[f] = u64_at(b, (size_t)pos);
		d->has[f] = 1;
	}
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		if (!d->has[required[i]]) {
			snprintf(why, whylen,
				 "Python %s: the table of its _Py_DebugOffsets has no %s", ver,
				 field_names[required[i]]);
			return -1;
		}
	return 0;
}

int pydbg_read(pid_t pid, uint64_t runtime, uint32_t expect, struct pydbg *d, char *why,
	       size_t whylen)
{
	unsigned char buf[2048];
	size_t len = PYDBG_HEAD;
	int err;

	err = mem_read(pid, runtime, buf, len);
	if (!err && pydbg_decode(buf, len, expect, d, why, whylen))
		return -1;
	if (!err) {
		len = pydbg_size(d->table);
		if (len > sizeof(buf))
			len = sizeof(buf); /* decode says it is cut short */
		err = mem_read(pid, runtime, buf, len);
	}
	if (err) {
		snprintf(why, whylen, "cannot read _Py_DebugOffsets: %s", strerror(-err));
		return -1;
	}
	return pydbg_decode(buf, len, expect, d, why, whylen);
}

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a > b ? a : b;

	return m > c ? m : c;
}

/* Stores v into a 16-bit layout field; a value out of range fails the whole layout. */
#define PUT(dst, v)                                                                                \
	do {                                                                                       \
		uint64_t v_ = (v);                                                                 \
		if (v_ > 0xffff && !bad)                                                           \
			bad = #dst;                                                                \
		(dst) = (__u16)v_;                                                                 \
	} while (0)

int pydbg_layout(const struct pydbg *d, struct py_layout *l, struct py_async_layout *a, char *why,
		 size_t whylen)
{
	const struct pydbg_facts *f = &d->table->facts;
	const uint64_t *v = d->v;
	const char *bad = NULL;
	uint64_t end;
	char ver[32];

	pydbg_version_str(d->version, ver, sizeof(ver));
	memset(l, 0, sizeof(*l));
	l->py_version = d->version;
	l->frame_kind = PY_FRAMES_DIRECT;
	l->lasti_kind = PY_LASTI_PTR;
	l->owner_cstack = f->owner_shim;
	l->ref_tag_bits = f->tag_bits;
	PUT(l->runtime_interp_head, v[PD_INTERPRETERS_HEAD]);
	PUT(l->interp_next, v[PD_INTERP_NEXT]);
	PUT(l->interp_tstate_head, v[PD_INTERP_THREADS_HEAD]);
	PUT(l->tstate_next, v[PD_TSTATE_NEXT]);
	PUT(l->tstate_thread_id, v[PD_TSTATE_THREAD_ID]);
	PUT(l->tstate_native_id, v[PD_TSTATE_NATIVE_THREAD_ID]);
	PUT(l->tstate_frame, v[PD_TSTATE_CURRENT_FRAME]);
	if (d->has[PD_TSTATE_BASE_FRAME])
		PUT(l->tstate_base_frame, v[PD_TSTATE_BASE_FRAME]);
	PUT(l->frame_back, v[PD_FRAME_PREVIOUS]);
	PUT(l->frame_code, v[PD_FRAME_EXECUTABLE]);
	PUT(l->frame_lasti, v[PD_FRAME_INSTR_PTR]);
	PUT(l->frame_owner, v[PD_FRAME_OWNER]);
	PUT(l->object_type, v[PD_OB_TYPE]);
	PUT(l->code_firstlineno, v[PD_CODE_FIRSTLINENO]);
	PUT(l->code_filename, v[PD_CODE_FILENAME]);
	PUT(l->code_name, v[PD_CODE_NAME]);
	PUT(l->code_qualname, v[PD_CODE_QUALNAME]);
	PUT(l->code_linetable, v[PD_CODE_LINETABLE]);
	PUT(l->code_code, v[PD_CODE_ADAPTIVE]);
	PUT(l->code_size, v[PD_CODE_SIZE]);
	PUT(l->unicode_state, v[PD_UNICODE_STATE]);
	PUT(l->unicode_length, v[PD_UNICODE_LENGTH]);
	PUT(l->unicode_ascii_size, v[PD_UNICODE_ASCII_SIZE]);
	PUT(l->unicode_compact_size, d->has[PD_UNICODE_COMPACT_SIZE]
					     ? v[PD_UNICODE_COMPACT_SIZE]
					     : v[PD_UNICODE_ASCII_SIZE] + f->compact_extra);
	if (!d->has[PD_UNICODE_COMPACT_SIZE] && !f->compact_extra)
		bad = "unicode_object.compactunicodeobject_size";
	l->unicode_kind_shift = f->unicode_kind_shift;
	l->unicode_compact_bit = f->unicode_compact_bit;
	l->unicode_ascii_bit = f->unicode_ascii_bit;
	PUT(l->bytes_size, v[PD_BYTES_SIZE]);
	PUT(l->bytes_sval, v[PD_BYTES_SVAL]);
	/* the walker reads each frame's pointers and its one-byte owner in one piece */
	end = max3(v[PD_FRAME_PREVIOUS], v[PD_FRAME_EXECUTABLE], v[PD_FRAME_INSTR_PTR]) + 8;
	if (v[PD_FRAME_OWNER] + 1 > end)
		end = v[PD_FRAME_OWNER] + 1;
	if (end > 128 && !bad)
		bad = "interpreter_frame";
	l->frame_read = (__u16)end;

	memset(a, 0, sizeof(*a));
	a->yf_kind = f->yf_kind;
	a->gen_suspended = f->gen_yield_from;
	a->gen_executing = f->gen_executing;
	a->yf_slots = f->yf_slots;
	PUT(a->gen_frame, d->has[PD_GEN_IFRAME] ? v[PD_GEN_IFRAME] : f->gen_iframe);
	PUT(a->gen_frame_state,
	    d->has[PD_GEN_FRAME_STATE] ? v[PD_GEN_FRAME_STATE] : f->gen_frame_state);
	if (!a->gen_frame || !a->gen_frame_state)
		bad = "gen_object";
	if (f->yf_kind == PY_YF_STACKPTR) {
		PUT(a->frame_stack, v[PD_FRAME_STACKPOINTER]);
		if (!d->has[PD_FRAME_STACKPOINTER] && !bad)
			bad = "interpreter_frame.stackpointer";
	} else {
		PUT(a->frame_stack, v[PD_FRAME_LOCALSPLUS]);
		PUT(a->frame_stackdepth, f->frame_stacktop);
	}
	/* pw_coro_step reads a frame in PW_READ_MAX (128) bytes and loads 8 from there */
	if ((a->frame_stack > 120 || a->frame_stackdepth > 120) && !bad)
		bad = "interpreter_frame";
	PUT(a->tuple_items, v[PD_TUPLE_ITEM]);
	/* the runtime's own; tstate_context it does not describe (the object model's) */
	PUT(a->frame_localsplus, v[PD_FRAME_LOCALSPLUS]);
	if (bad) {
		snprintf(why, whylen, "Python %s: _Py_DebugOffsets gives an implausible %s", ver,
			 bad);
		return -1;
	}
	return 0;
}

int pydbg_check_objmodel(const struct pydbg *d, const struct py_objmodel *om, char *why,
			 size_t whylen)
{
	static const struct {
		enum pydbg_field f;
		size_t om;
	} same[] = {
		{ PD_TYPE_NAME, offsetof(struct py_objmodel, type_name) },
		{ PD_TYPE_FLAGS, offsetof(struct py_objmodel, type_flags) },
		{ PD_TYPE_BASICSIZE, offsetof(struct py_objmodel, type_basicsize) },
		{ PD_TYPE_DICTOFFSET, offsetof(struct py_objmodel, type_dictoffset) },
		{ PD_HEAPTYPE_CACHED_KEYS, offsetof(struct py_objmodel, heaptype_cached_keys) },
		{ PD_TUPLE_ITEM, offsetof(struct py_objmodel, tuple_items) },
		{ PD_LIST_ITEM, offsetof(struct py_objmodel, list_items) },
		{ PD_SET_USED, offsetof(struct py_objmodel, set_used) },
		{ PD_SET_TABLE, offsetof(struct py_objmodel, set_table) },
		{ PD_SET_MASK, offsetof(struct py_objmodel, set_mask) },
		{ PD_DICT_KEYS, offsetof(struct py_objmodel, dict_keys) },
		{ PD_DICT_VALUES, offsetof(struct py_objmodel, dict_values) },
		{ PD_LONG_TAG, offsetof(struct py_objmodel, long_size) },
		{ PD_LONG_DIGIT, offsetof(struct py_objmodel, long_digits) },
		{ PD_INTERP_IMPORTS_MODULES, offsetof(struct py_objmodel, interp_modules) },
		{ PD_CODE_LOCALSPLUSNAMES, offsetof(struct py_objmodel, code_varnames) },
		{ PD_CODE_LOCALSPLUSKINDS, offsetof(struct py_objmodel, code_localspluskinds) },
		{ PD_FRAME_LOCALSPLUS, offsetof(struct py_objmodel, async.frame_localsplus) },
	};
	char ver[32];

	pydbg_version_str(d->version, ver, sizeof(ver));
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		uint16_t want;

		if (!d->has[same[i].f])
			continue;
		memcpy(&want, (const char *)om + same[i].om, sizeof(want));
		if (d->v[same[i].f] != want) {
			snprintf(why, whylen,
				 "Python %s: _Py_DebugOffsets.%s is %llu, the object model of its "
				 "headers has %u",
				 ver, field_names[same[i].f], (unsigned long long)d->v[same[i].f],
				 want);
			return -1;
		}
	}
	return 0;
}

int pydbg_check_versions(const struct pydbg *d, const struct py_objmodel *om, char *why,
			 size_t whylen)
{
	const struct {
		enum pydbg_field f;
		uint64_t want;
	} same[] = {
		{ PD_RUNTIME_SIZE, om->runtime_size },
		{ PD_INTERP_SIZE, om->interp_size },
		{ PD_CODE_SIZE, om->code_size },
		{ PD_CODE_FIRSTLINENO, om->code_firstlineno },
		{ PD_CODE_FILENAME, om->code_filename },
	};
	char ver[32];

	pydbg_version_str(d->version, ver, sizeof(ver));
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		if (!d->has[same[i].f] || d->v[same[i].f] != same[i].want) {
			snprintf(why, whylen,
				 "Python %s: _Py_DebugOffsets.%s is %llu, its headers had %llu",
				 ver, field_names[same[i].f],
				 d->has[same[i].f] ? (unsigned long long)d->v[same[i].f] : 0ULL,
				 (unsigned long long)same[i].want);
			return -1;
		}
	}
	return 0;
}

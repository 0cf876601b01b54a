// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "elfread.h"
#include "memread.h"
#include "procmaps.h"
#include "py314.h"
#include "py_layouts.h"
#include "pyproc.h"

/* _Py_DebugOffsets as 3.14 lays it out (Include/internal/pycore_debug_offsets.h): every
 * field a uint64_t, so its shape is the format and the values are the process's own. */
struct dbg314 {
	char cookie[8];
	uint64_t version, free_threaded;
	struct {
		uint64_t size, finalizing, interpreters_head;
	} runtime_state;
	struct {
		uint64_t size, id, next, threads_head, threads_main, gc, imports_modules, sysdict,
			builtins, ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
			gil_runtime_state_locked, gil_runtime_state_holder, code_object_generation,
			tlbc_generation;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
			datastack_chunk, status;
	} thread_state;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus, owner, stackpointer,
			tlbc_index;
	} interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
			localsplusnames, localspluskinds, co_code_adaptive, co_tlbc;
	} code_object;
	struct {
		uint64_t size, ob_type;
	} pyobject;
	struct {
		uint64_t size, tp_name, tp_repr, tp_flags;
	} type_object;
	struct {
		uint64_t size, ob_item, ob_size;
	} tuple_object, list_object;
	struct {
		uint64_t size, used, table, mask;
	} set_object;
	struct {
		uint64_t size, ma_keys, ma_values;
	} dict_object;
	struct {
		uint64_t size, ob_fval;
	} float_object;
	struct {
		uint64_t size, lv_tag, ob_digit;
	} long_object;
	struct {
		uint64_t size, ob_size, ob_sval;
	} bytes_object;
	struct {
		uint64_t size, state, length, asciiobject_size;
	} unicode_object;
	struct {
		uint64_t size, collecting;
	} gc;
	struct {
		uint64_t size, gi_name, gi_iframe, gi_frame_state;
	} gen_object;
	struct {
		uint64_t next, prev;
	} llist_node;
	struct {
		uint64_t eval_breaker, remote_debugger_support, remote_debugging_enabled,
			debugger_pending_call, debugger_script_path, debugger_script_path_size;
	} debugger_support;
};

/* _Py_AsyncioModuleDebugOffsets (Modules/_asynciomodule.c, 3.14) */
struct aio314 {
	struct {
		uint64_t size, task_name, task_awaited_by, task_is_task, task_awaited_by_is_set,
			task_coro, task_node;
	} task;
	struct {
		uint64_t size, asyncio_tasks_head;
	} interp;
	struct {
		uint64_t size, asyncio_running_loop, asyncio_running_task, asyncio_tasks_head;
	} tstate;
};

/* Facts of 3.14 the runtime does not describe (default build, not free-threaded). */
enum {
	FRAME_OWNED_BY_INTERPRETER = 3, /* entry shims; 4 (C stack) is skipped with it */
	FRAME_SUSPENDED_YIELD_FROM = -1,
	STACKREF_TAG_BITS = 1,	/* _PyStackRef: bit 0 marks a deferred reference */
	COMPACT_EXTRA = 16,	/* PyCompactUnicodeObject: utf8_length, utf8 after the ASCII head */
	UNICODE_KIND_SHIFT = 2, /* state: interned:2, kind:3, compact:1, ascii:1 */
	UNICODE_COMPACT_BIT = 5,
	UNICODE_ASCII_BIT = 6,
	OBJECT_HEAD = 16, /* _PyAsyncGenASend.ags_gen, _PyCoroWrapper.cw_coroutine follow it */
};

/* _asyncio's FutureObj and TaskObj in 3.14 (transcribed like the other versions' in
 * py_objmodel.c). The BPF side needs them before _asyncio is loaded; once it is, its
 * .AsyncioDebug section must agree (py314_asyncio). */
enum {
	FUT_LOOP = 16,
	FUT_CALLBACK0 = 24,
	FUT_CALLBACKS = 40,
	FUT_AWAITED_BY = 96,
	FUT_STATE = 104,
	FUT_IS_TASK = 108,
	FUT_SIZE = 112,
	TASK_FUT_WAITER = 120,
	TASK_CORO = 128,
	TASK_NAME = 136,
	TASK_NODE = 152,
	TASK_SIZE = 168,
};

/* Reads and checks the runtime's _Py_DebugOffsets; why names no pid (callers add it). */
static int read_debug(pid_t pid, uint64_t runtime, uint32_t version, struct dbg314 *d, char *why,
		      size_t len)
{
	int err = mem_read(pid, runtime, d, sizeof(*d));

	if (err) {
		snprintf(why, len, "cannot read _Py_DebugOffsets: %s", strerror(-err));
		return -1;
	}
	if (memcmp(d->cookie, "xdebugpy", 8)) {
		snprintf(why, len,
			 "Python 3.14.%u without _Py_DebugOffsets at _PyRuntime, not supported",
			 PYV_MICRO(version));
		return -1;
	}
	if (d->version != version) {
		snprintf(why, len, "_Py_DebugOffsets.version is 0x%llx, expected 0x%08x",
			 (unsigned long long)d->version, version);
		return -1;
	}
	if (d->free_threaded) {
		snprintf(why, len, "free-threaded Python 3.14.%u is not supported",
			 PYV_MICRO(version));
		return -1;
	}
	return 0;
}

/* Stores v into a 16-bit layout field; a value out of range fails the whole layout. */
#define PUT(dst, v)                                                                                \
	do {                                                                                       \
		uint64_t v_ = (v);                                                                 \
		if (v_ > 0xffff)                                                                   \
			bad = #dst;                                                                \
		(dst) = (__u16)v_;                                                                 \
	} while (0)

int py314_layout(pid_t pid, uint32_t version, struct py_proc *proc, char *why, size_t len)
{
	struct py_layout *l = &proc->layout;
	struct py_async_layout *a = &proc->async;
	const char *bad = NULL;
	struct dbg314 d;
	uint64_t end = 0;

	if (read_debug(pid, proc->runtime, version, &d, why, len))
		return -1;
	memset(l, 0, sizeof(*l));
	memset(a, 0, sizeof(*a));
	l->py_version = version;
	l->frame_kind = PY_FRAMES_DIRECT;
	l->lasti_kind = PY_LASTI_PTR;
	l->owner_cstack = FRAME_OWNED_BY_INTERPRETER;
	l->ref_tag_bits = STACKREF_TAG_BITS;
	PUT(l->runtime_interp_head, d.runtime_state.interpreters_head);
	PUT(l->interp_next, d.interpreter_state.next);
	PUT(l->interp_tstate_head, d.interpreter_state.threads_head);
	PUT(l->tstate_next, d.thread_state.next);
	PUT(l->tstate_thread_id, d.thread_state.thread_id);
	PUT(l->tstate_native_id, d.thread_state.native_thread_id);
	PUT(l->tstate_frame, d.thread_state.current_frame);
	PUT(l->frame_back, d.interpreter_frame.previous);
	PUT(l->frame_code, d.interpreter_frame.executable);
	PUT(l->frame_lasti, d.interpreter_frame.instr_ptr);
	PUT(l->frame_owner, d.interpreter_frame.owner);
	PUT(l->object_type, d.pyobject.ob_type);
	PUT(l->code_firstlineno, d.code_object.firstlineno);
	PUT(l->code_filename, d.code_object.filename);
	PUT(l->code_name, d.code_object.name);
	PUT(l->code_qualname, d.code_object.qualname);
	PUT(l->code_linetable, d.code_object.linetable);
	PUT(l->code_code, d.code_object.co_code_adaptive);
	PUT(l->code_size, d.code_object.size);
	PUT(l->unicode_state, d.unicode_object.state);
	PUT(l->unicode_length, d.unicode_object.length);
	PUT(l->unicode_ascii_size, d.unicode_object.asciiobject_size);
	PUT(l->unicode_compact_size, d.unicode_object.asciiobject_size + COMPACT_EXTRA);
	l->unicode_kind_shift = UNICODE_KIND_SHIFT;
	l->unicode_compact_bit = UNICODE_COMPACT_BIT;
	l->unicode_ascii_bit = UNICODE_ASCII_BIT;
	PUT(l->bytes_size, d.bytes_object.ob_size);
	PUT(l->bytes_sval, d.bytes_object.ob_sval);

	a->yf_kind = PY_YF_STACKPTR;
	a->gen_suspended = FRAME_SUSPENDED_YIELD_FROM;
	PUT(a->gen_frame, d.gen_object.gi_iframe);
	PUT(a->gen_frame_state, d.gen_object.gi_frame_state);
	PUT(a->frame_stack, d.interpreter_frame.stackpointer);
	PUT(a->tuple_items, d.tuple_object.ob_item);
	a->asend_gen = OBJECT_HEAD;
	a->corowrapper_coro = OBJECT_HEAD;
	a->fut_loop = FUT_LOOP;
	a->fut_callback0 = FUT_CALLBACK0;
	a->fut_callbacks = FUT_CALLBACKS;
	a->fut_state = FUT_STATE;
	a->fut_size = FUT_SIZE;
	a->task_fut_waiter = TASK_FUT_WAITER;
	a->task_coro = TASK_CORO;
	a->task_name = TASK_NAME;
	a->task_size = TASK_SIZE;

	/* the walker reads each frame in one piece of at most PW_READ_MAX (128) bytes */
	end = d.interpreter_frame.previous;
	if (d.interpreter_frame.executable > end)
		end = d.interpreter_frame.executable;
	if (d.interpreter_frame.instr_ptr > end)
		end = d.interpreter_frame.instr_ptr;
	if (d.interpreter_frame.stackpointer > end)
		end = d.interpreter_frame.stackpointer;
	if (d.interpreter_frame.owner > end)
		end = d.interpreter_frame.owner;
	if (end + 8 > 128)
		bad = "interpreter_frame";
	l->frame_read = (__u16)(end + 8);
	if (bad) {
		snprintf(why, len, "_Py_DebugOffsets gives an implausible %s", bad);
		return -1;
	}
	return 0;
}

/* Reads the .AsyncioDebug section of one mapped file; -ENOENT when it has none. */
static int section_of(pid_t pid, const struct procmap *m, struct aio314 *out)
{
	struct elf_file *e;
	uint64_t addr, size;
	char path[4200];
	int err;

	if ((err = procmap_file(pid, m, path, sizeof(path))) || (err = elf_open(path, &e)))
		return err;
	err = elf_section(e, ".AsyncioDebug", &addr, &size);
	if (!err && size < sizeof(*out))
		err = -EINVAL;
	if (!err)
		err = elf_read_vaddr(e, addr, out, sizeof(*out));
	elf_close(e);
	return err;
}

/* The first mapping of the file the process maps at path (t->binary), or NULL. */
static const struct procmap *mapping_of(const struct procmaps *maps, const char *path)
{
	for (size_t i = 0; i < maps->n; i++)
		if (!strcmp(maps->v[i].path, path))
			return &maps->v[i];
	return NULL;
}

static int find_section(const struct py_target *t, struct aio314 *out)
{
	const struct procmap *bin;
	struct procmaps maps;
	const char *prev = "";
	int err;

	err = procmaps_read(t->pid, &maps);
	if (err)
		return err;
	err = -ENOENT;
	for (size_t i = 0; i < maps.n && err == -ENOENT; i++) {
		const char *p = maps.v[i].path, *base = strrchr(p, '/');

		if (!base || strncmp(base + 1, "_asyncio.", 9) || !strcmp(p, prev))
			continue;
		prev = p;
		err = section_of(t->pid, &maps.v[i], out);
	}
	/* a build with _asyncio compiled in keeps the section in the runtime's binary, and
	 * then it is there before asyncio is imported: tasks are simply none yet */
	if (err == -ENOENT && (bin = mapping_of(&maps, t->binary)))
		err = section_of(t->pid, bin, out);
	procmaps_free(&maps);
	return err;
}

int py314_asyncio(const struct py_target *t, struct py314_asyncio *out, char *why, size_t len)
{
	struct dbg314 d;
	struct aio314 s;
	char msg[128];
	int err;

	err = find_section(t, &s);
	if (err) {
		snprintf(why, len, "pid %d: cannot read _asyncio's .AsyncioDebug: %s", t->pid,
			 strerror(-err));
		return err;
	}
	if (read_debug(t->pid, t->proc.runtime, t->version, &d, msg, sizeof(msg))) {
		snprintf(why, len, "pid %d: %s", t->pid, msg);
		return -EINVAL;
	}
	if (s.task.task_coro != TASK_CORO || s.task.task_name != TASK_NAME ||
	    s.task.task_node != TASK_NODE || s.task.task_awaited_by != FUT_AWAITED_BY ||
	    s.task.task_is_task != FUT_IS_TASK || s.task.size != TASK_SIZE) {
		snprintf(why, len,
			 "pid %d: _asyncio's .AsyncioDebug (task size %llu, coro at %llu) does not "
			 "match the 3.14 TaskObj asyncbpf knows",
			 t->pid, (unsigned long long)s.task.size,
			 (unsigned long long)s.task.task_coro);
		return -EPROTO;
	}
	*out = (struct py314_asyncio){
		.task_name = s.task.task_name,
		.task_coro = s.task.task_coro,
		.task_node = s.task.task_node,
		.task_awaited_by = s.task.task_awaited_by,
		.task_awaited_by_is_set = s.task.task_awaited_by_is_set,
		.task_is_task = s.task.task_is_task,
		.task_size = s.task.size,
		.interp_tasks_head = s.interp.asyncio_tasks_head,
		.tstate_tasks_head = s.tstate.asyncio_tasks_head,
		.tstate_running_task = s.tstate.asyncio_running_task,
		.llist_next = d.llist_node.next,
		.set_used = d.set_object.used,
		.set_table = d.set_object.table,
		.set_mask = d.set_object.mask,
	};
	return 0;
}

int py314_task_init(const struct py_target *t, char *path, size_t len, uint64_t *offset)
{
	const struct procmap *file = NULL;
	struct procmaps maps;
	struct elf_file *e;
	uint64_t addr, size;
	int err;

	err = procmaps_read(t->pid, &maps);
	if (err)
		return err;
	for (size_t i = 0; i < maps.n && !file; i++) {
		const char *base = strrchr(maps.v[i].path, '/');

		if (base && !strncmp(base + 1, "_asyncio.", 9))
			file = &maps.v[i];
	}
	if (!file)
		file = mapping_of(&maps, t->binary);
	err = file ? procmap_file(t->pid, file, path, len) : -ENOENT;
	procmaps_free(&maps);
	if (err || (err = elf_open(path, &e)))
		return err;
	err = elf_symbol(e, "_asyncio_Task___init__", ELF_SYMTAB, &addr, &size);
	if (!err)
		err = elf_vaddr_to_offset(e, addr, offset);
	elf_close(e);
	return err;
}

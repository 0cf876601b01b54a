// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "process/elfread.h"
#include "process/memread.h"
#include "process/procmaps.h"
#include "cpython/aiodebug.h"
#include "cpython/py_layouts.h"
#include "cpython/pydebug.h"
#include "cpython/pyproc.h"

/* _Py_AsyncioModuleDebugOffsets (Modules/_asynciomodule.c): the same in 3.14 and 3.15 */
struct aio_section {
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

/* Reads the .AsyncioDebug section of one mapped file; -ENODATA when it has none. */
static int section_of(pid_t pid, const struct procmap *m, struct aio_section *out)
{
	struct elf_file *e;
	uint64_t addr, size;
	char path[4200];
	int err;

	if ((err = procmap_file(pid, m, path, sizeof(path))) || (err = elf_open(path, &e)))
		return err;
	err = elf_section(e, ".AsyncioDebug", &addr, &size);
	if (err == -ENOENT)
		err = -ENODATA;
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

/* 0 with the section, 1 when the process has no _asyncio mapped and its runtime's binary no
 * section (asyncio not imported), else -errno: a file that cannot be read is not "no
 * tasks". *file gets the file looked at last. */
static int find_section(const struct py_target *t, struct aio_section *out, char *file, size_t flen)
{
	const struct procmap *bin;
	struct procmaps maps;
	const char *prev = "";
	int err;

	err = procmaps_read(t->pid, &maps);
	if (err)
		return err;
	err = 1;
	for (size_t i = 0; i < maps.n && err; i++) {
		const char *p = maps.v[i].path, *base = strrchr(p, '/');

		if (!base || strncmp(base + 1, "_asyncio.", 9) || !strcmp(p, prev))
			continue;
		prev = p;
		snprintf(file, flen, "%s", p);
		err = section_of(t->pid, &maps.v[i], out);
	}
	/* a build with _asyncio compiled in keeps the section in the runtime's binary */
	if (err == 1) {
		snprintf(file, flen, "%s", t->binary);
		bin = mapping_of(&maps, t->binary);
		err = bin ? section_of(t->pid, bin, out) : -ENOENT;
		if (err == -ENODATA)
			err = 1;
	}
	procmaps_free(&maps);
	return err;
}

int aiodebug_read(const struct py_target *t, struct aiodebug *out, char *why, size_t len)
{
	const struct py_async_layout *a = &t->proc.async;
	struct aio_section s;
	struct pydbg d;
	char msg[256], file[PATH_MAX];
	int err;

	file[0] = '\0';
	err = find_section(t, &s, file, sizeof(file));
	if (err == 1) {
		snprintf(why, len, "pid %d: no .AsyncioDebug section in %s or an _asyncio module",
			 t->pid, t->binary);
		return -ENOENT;
	}
	if (err) {
		snprintf(why, len, "pid %d: cannot read the .AsyncioDebug section of %s: %s",
			 t->pid, file, strerror(-err));
		return err;
	}
	if (pydbg_read(t->pid, t->proc.runtime, t->version, &d, msg, sizeof(msg))) {
		snprintf(why, len, "pid %d: %s", t->pid, msg);
		return -EINVAL;
	}
	if (!d.has[PD_LLIST_NEXT] || !d.has[PD_SET_TABLE] || !d.has[PD_SET_MASK]) {
		snprintf(why, len,
			 "pid %d: _Py_DebugOffsets of Python %s has no llist_node or set_object",
			 t->pid, t->version_str);
		return -EPROTO;
	}
	/* BPF was given the object model's task fields before _asyncio was loaded */
	if (s.task.task_coro != a->task_coro || s.task.task_name != a->task_name ||
	    s.task.size != a->task_size) {
		snprintf(why, len,
			 "pid %d: _asyncio's .AsyncioDebug (task size %llu, coro at %llu, name at "
			 "%llu) does not match the Python %s TaskObj asyncbpf knows (%u, %u, %u)",
			 t->pid, (unsigned long long)s.task.size,
			 (unsigned long long)s.task.task_coro, (unsigned long long)s.task.task_name,
			 t->version_str, a->task_size, a->task_coro, a->task_name);
		return -EPROTO;
	}
	*out = (struct aiodebug){
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
		.llist_next = d.v[PD_LLIST_NEXT],
		.set_used = d.v[PD_SET_USED],
		.set_table = d.v[PD_SET_TABLE],
		.set_mask = d.v[PD_SET_MASK],
	};
	return 0;
}

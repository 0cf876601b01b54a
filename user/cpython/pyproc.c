// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/elfread.h"
#include "process/memread.h"
#include "process/procfs.h"
#include "process/procmaps.h"
#include "cpython/py_layouts.h"
#include "cpython/pydebug.h"
#include "cpython/pyproc.h"

#define PF_EXITING 0x00000004 /* task flags: getting shut down */
#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */

struct inspect {
	pid_t pid;
	char state;
	unsigned long long start_time;
	struct procmaps maps;
	char exe[PATH_MAX];
	char *why;
	size_t whylen;
};

/* The ELF chosen as holding the runtime. */
struct pyelf {
	struct elf_file *e;
	const struct procmap *map; /* first mapping of the file */
	uint64_t runtime;	   /* vaddr of _PyRuntime, 0 for none (older CPython) */
};

static enum pyproc_status say(struct inspect *in, enum pyproc_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum pyproc_status say(struct inspect *in, enum pyproc_status st, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!in->whylen)
		return st;
	n = snprintf(in->why, in->whylen, "pid %d: ", (int)in->pid);
	if (n < 0 || (size_t)n >= in->whylen)
		return st;
	va_start(ap, fmt);
	vsnprintf(in->why + n, in->whylen - (size_t)n, fmt, ap);
	va_end(ap);
	return st;
}

/* State, flags and start time from /proc/PID/stat. */
static int read_stat(pid_t pid, char *state, unsigned long *flags, unsigned long long *start)
{
	char path[64], buf[1024], *p, *end;
	unsigned long long v = 0;
	ssize_t n;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = proc_read(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	/* comm may hold spaces and parentheses: fields resume after the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	*state = p[2];
	p += 2;
	for (field = 3; field <= 22; field++) {
		errno = 0;
		v = strtoull(p, &end, 10);
		if (field > 3 && (end == p || errno))
			return -EINVAL;
		if (field == 9)
			*flags = (unsigned long)v;
		p = field == 3 ? p + 1 : end;
		if (*p != ' ' && field < 22)
			return -EINVAL;
	}
	*start = v;
	return 0;
}

static bool is_gone_err(int err)
{
	return err == -ENOENT || err == -ESRCH;
}

/* Whether the process inspected has exited, exec'd (or its pid was reused) since we
 * started. */
static bool vanished(const struct inspect *in)
{
	unsigned long long start;
	unsigned long flags;
	char state;
	int err = read_stat(in->pid, &state, &flags, &start);

	/* an exiting process has lost its memory before it is a zombie */
	return is_gone_err(err) ||
	       (!err && (start != in->start_time || state == 'Z' || state == 'X' ||
			 (flags & PF_EXITING))) ||
	       (!err && in->maps.n && procmaps_exec_since(in->pid, &in->maps) == 1);
}

/* An error from the process' files: GONE when it has exited, else ERROR. */
static enum pyproc_status fail(struct inspect *in, int err, const char *what)
{
	if (is_gone_err(err) || vanished(in))
		return say(in, PYPROC_GONE, "exited or exec'd while being inspected");
	return say(in, PYPROC_ERROR, "%s: %s", what, strerror(-err));
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* "python3.10", "libpython3.7m.so.1.0" -> 3, 10. */
static bool name_version(const char *path, int *major, int *minor)
{
	const char *s = basename_of(path);
	char *end;

	if (!strncmp(s, "lib", 3))
		s += 3;
	if (strncmp(s, "python", 6) || s[6] < '0' || s[6] > '9')
		return false;
	*major = (int)strtol(s + 6, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return false;
	*minor = (int)strtol(end + 1, NULL, 10);
	return *major < 256 && *minor < 256;
}

static int open_mapped(struct inspect *in, const struct procmap *m, struct elf_file **e)
{
	char path[PATH_MAX + 64];
	int err = procmap_file(in->pid, m, path, sizeof(path));

	return err ? err : elf_open(path, e);
}

/* vaddr of _PyRuntime in e, 0 when absent. Without full, only the section and .dynsym
 * (a static CPython exports its C API there): no long .symtab scans for every program. */
static uint64_t runtime_vaddr(struct elf_file *e, bool full)
{
	uint64_t v, size;

	if (!elf_symbol(e, "_PyRuntime", full ? ELF_DYNSYM | ELF_SYMTAB : ELF_DYNSYM, &v, &size))
		return v;
	/* Stripped 3.10+ builds: _PyRuntime is the whole .PyRuntime section. */
	if (!elf_section(e, ".PyRuntime", &v, &size) && v && size)
		return v;
	return 0;
}

static bool defines(struct elf_file *e, const char *sym)
{
	uint64_t v, size;

	return !elf_symbol(e, sym, ELF_DYNSYM | ELF_SYMTAB, &v, &size);
}

static bool same_file(const struct procmap *a, const struct procmap *b)
{
	return a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && !strcmp(a->path, b->path);
}

static bool seen_before(const struct inspect *in, const struct procmap *m)
{
	const struct procmap *p;

	for (p = in->maps.v; p < m; p++)
		if (same_file(p, m))
			return true;
	return false;
}

/*
 * Opens the file of m: 1 with *py filled when it holds a runtime, else 0 or -errno. A
 * python-named ELF without _PyRuntime that defines Py_GetVersion is a CPython too old
 * for it (< 3.7): kept in *old. Renamed executables get the cheap tests only.
 */
static int probe(struct inspect *in, const struct procmap *m, bool named, struct pyelf *py,
		 struct pyelf *old)
{
	struct elf_file *e;
	int err = open_mapped(in, m, &e);

	/* a vanished file is judged by the caller, which checks whether the pid is gone */
	if (err == -ENOEXEC || err == -ENOENT)
		return 0;
	if (err)
		return err;
	py->runtime = runtime_vaddr(e, named);
	if (py->runtime) {
		py->e = e;
		py->map = m;
		return 1;
	}
	if (named && !old->e && defines(e, "Py_GetVersion")) {
		old->e = e;
		old->map = m;
		return 0;
	}
	elf_close(e);
	return 0;
}

/* The ELF holding the runtime: a python* executable, a libpython*, a renamed executable. */
static int find_pyelf(struct inspect *in, struct pyelf *py, struct pyelf *old)
{
	const struct procmap *m, *exe = NULL;
	bool named, libpython = false;
	struct elf_file *e;
	size_t i;
	int err;

	for (i = 0; i < in->maps.n && !exe; i++)
		if (in->maps.v[i].inode && !strcmp(in->maps.v[i].path, in->exe))
			exe = &in->maps.v[i];
	named = exe && !strncmp(basename_of(in->exe), "python", 6);
	if (named && (err = probe(in, exe, true, py, old)))
		return err < 0 ? err : 0;
	for (i = 0; i < in->maps.n; i++) {
		m = &in->maps.v[i];
		if (!m->inode || strncmp(basename_of(m->path), "libpython", 9) ||
		    seen_before(in, m))
			continue;
		libpython = true;
		err = probe(in, m, true, py, old);
		if (err)
			return err < 0 ? err : 0;
	}
	if (exe && !named && (err = probe(in, exe, false, py, old)))
		return err < 0 ? err : 0;
	/* a CPython linked to its libpython, caught before the loader mapped it */
	if (exe && !libpython && !open_mapped(in, exe, &e)) {
		err = elf_needs(e, "libpython") ? -EAGAIN : -ENOENT;
		elf_close(e);
		return err;
	}
	return -ENOENT;
}

/*
 * Address of vaddr of e in the process: through the mapping of e's file that holds the
 * file offset of vaddr, or for .bss (not file-backed) the last file byte of its segment.
 */
static int map_vaddr(struct inspect *in, struct pyelf *py, uint64_t vaddr, uint64_t *addr)
{
	const struct procmap *m, *best = NULL;
	struct elf_segment s;
	uint64_t anchor;
	size_t i;

	if (elf_segment_of(py->e, vaddr, &s))
		return -ENOENT;
	if (vaddr - s.vaddr < s.filesz)
		anchor = s.offset + (vaddr - s.vaddr);
	else if (s.filesz)
		anchor = s.offset + s.filesz - 1;
	else
		return -ENOENT;
	for (i = 0; i < in->maps.n; i++) {
		m = &in->maps.v[i];
		if (!same_file(m, py->map) || anchor < m->offset ||
		    anchor - m->offset >= m->end - m->start)
			continue;
		/* Pages shared by two segments are mapped twice: take the one of this segment. */
		if (!best || (m->perms[2] == 'x') == !!(s.flags & PF_X))
			best = m;
	}
	if (!best)
		return -ENOENT;
	*addr = best->start - best->offset + s.offset - s.vaddr + vaddr;
	return procmaps_find(&in->maps, *addr) ? 0 : -ENOENT;
}

/* PY_VERSION_HEX: the Py_Version constant (3.11+), else the PY_VERSION string. */
static int py_version(struct pyelf *py, uint32_t *hex, char *str, size_t len)
{
	uint64_t v, size;
	int major, minor, n = 0, err;
	char buf[32];

	if (!elf_symbol(py->e, "Py_Version", ELF_DYNSYM | ELF_SYMTAB, &v, &size) &&
	    !elf_read_uint(py->e, v, size == 8 ? 8 : 4, &v) && v >> 24 >= 3 && v >> 32 == 0) {
		*hex = (uint32_t)v;
		pydbg_version_str(*hex, str, len);
		return 0;
	}
	if (name_version(py->map->path, &major, &minor)) {
		err = elf_py_version_string(py->e, major, minor, str, len);
	} else {
		/* Renamed build without Py_Version: 3.7-3.10 (no _PyRuntime before 3.7). */
		err = -ENOENT;
		for (minor = 7; minor <= 10; minor++) {
			if (elf_py_version_string(py->e, 3, minor, buf, sizeof(buf)))
				continue;
			n++;
			snprintf(str, len, "%s", buf);
		}
		if (n)
			err = n == 1 ? 0 : -ENOTUNIQ;
	}
	return err ? err : py_version_parse(str, hex);
}

/* Address of a data symbol of the runtime's ELF in the process, 0 when absent. */
static uint64_t symbol_addr(struct inspect *in, struct pyelf *py, const char *name)
{
	uint64_t addr, size;

	if (elf_symbol(py->e, name, ELF_DYNSYM | ELF_SYMTAB, &addr, &size) ||
	    map_vaddr(in, py, addr, &addr))
		return 0;
	return addr;
}

/* 3.12+: the counter code objects take their co_version from, for the CPU sampler
 * (user/cpython/codever.c): _Py_DebugOffsets does not describe it, so on 3.13+ the
 * runtime must agree with the headers it was measured in (describe()). */
static void find_code_counter(struct inspect *in, struct pyelf *py, struct py_target *t,
			      bool described)
{
	const struct py_objmodel *om = t->om;
	uint64_t main;
	int err;

	t->proc.code_counter = 0;
	if (!om || !om->code_version) {
		if (PYV_MINOR_OF(t->version) >= PYV(3, 12) && !t->code_why[0])
			snprintf(t->code_why, sizeof(t->code_why), "no object model for Python %s",
				 t->version_str);
		return;
	}
	if (described && !t->versions_checked)
		return;
	/* what a check tells a code object by */
	if (!t->proc.code_type) {
		snprintf(t->code_why, sizeof(t->code_why), "%s has no symbol PyCode_Type",
			 py->map->path);
		return;
	}
	/* 3.12: a global of the runtime, in .symtab only (stripped builds lack it) */
	err = mem_read(in->pid, t->proc.runtime + om->runtime_interp_main, &main, sizeof(main));
	if (err || !main) {
		snprintf(t->code_why, sizeof(t->code_why), "cannot read the main interpreter: %s",
			 err ? strerror(-err) : "none yet");
		return;
	}
	t->proc.main_interp = main;
	t->proc.tstate_interp = om->tstate_interp;
	t->proc.code_version = om->code_version;
	t->proc.interp_next_id = om->runtime_interp_next_id;
	if (om->interp_code_counter)
		t->proc.code_counter = main + om->interp_code_counter;
	else
		t->proc.code_counter = symbol_addr(in, py, "_Py_next_func_version");
	if (!t->proc.code_counter)
		snprintf(t->code_why, sizeof(t->code_why), "%s has no symbol _Py_next_func_version",
			 py->map->path);
}

/* 3.13+: the layout from the runtime's own _Py_DebugOffsets; the object model (dicts, types,
 * _asyncio) from the line's headers, checked against what the runtime says of it. */
static enum pyproc_status describe(struct inspect *in, struct py_target *t)
{
	struct py_async_layout gen;
	struct pydbg d;
	char why[256];

	if (pydbg_read(in->pid, t->proc.runtime, t->version, &d, why, sizeof(why)) ||
	    pydbg_layout(&d, &t->proc.layout, &gen, why, sizeof(why)))
		return vanished(in) ? say(in, PYPROC_GONE, "exited or exec'd while being inspected")
				    : say(in, PYPROC_UNSUPPORTED, "%s", why);
	t->task_lists = d.table->facts.task_lists;
	t->om = py_objmodel_find(t->version);
	/* without a model that fits, stacks only: nothing to read tasks with */
	if (!t->om) {
		snprintf(t->om_why, sizeof(t->om_why), "no object model for Python %s",
			 t->version_str);
		return PYPROC_OK;
	}
	if (pydbg_check_objmodel(&d, t->om, t->om_why, sizeof(t->om_why))) {
		t->om = NULL;
		return PYPROC_OK;
	}
	t->versions_checked = !pydbg_check_versions(&d, t->om, t->code_why, sizeof(t->code_why));
	t->proc.async = t->om->async;
	t->proc.async.yf_kind = gen.yf_kind;
	t->proc.async.gen_suspended = gen.gen_suspended;
	t->proc.async.gen_executing = gen.gen_executing;
	t->proc.async.yf_slots = gen.yf_slots;
	t->proc.async.gen_frame = gen.gen_frame;
	t->proc.async.gen_frame_state = gen.gen_frame_state;
	t->proc.async.frame_stack = gen.frame_stack;
	t->proc.async.frame_stackdepth = gen.frame_stackdepth;
	t->proc.async.tuple_items = gen.tuple_items;
	t->proc.async.frame_localsplus = gen.frame_localsplus;
	return PYPROC_OK;
}

static enum pyproc_status inspect_runtime(struct inspect *in, struct pyelf *py, struct py_target *t)
{
	const struct py_layout *l;
	enum pyproc_status st;
	bool described;
	char lwhy[256];
	uint64_t addr, head;
	int err;

	err = py_version(py, &t->version, t->version_str, sizeof(t->version_str));
	if (err)
		return say(in, PYPROC_UNSUPPORTED, "CPython in %s, but its version is unknown (%s)",
			   py->map->path, strerror(-err));
	described = PYV_MINOR_OF(t->version) >= PYV(3, 13) && PYV_LEVEL(t->version) == 0xF;
	l = described ? NULL : py_layout_find(t->version, lwhy, sizeof(lwhy));
	if (!l && !described)
		return say(in, PYPROC_UNSUPPORTED, "%s", lwhy);
	if (map_vaddr(in, py, py->runtime, &addr))
		return say(in, PYPROC_ERROR, "_PyRuntime of %s is not mapped", py->map->path);
	t->proc.runtime = addr;
	t->proc.code_type = symbol_addr(in, py, "PyCode_Type");
	t->proc.coro_type = symbol_addr(in, py, "PyCoro_Type");
	t->proc.gen_type = symbol_addr(in, py, "PyGen_Type");
	/* 3.13 keeps _PyCoroWrapper_Type static: found in .symtab only */
	t->proc.asend_type = symbol_addr(in, py, "_PyAsyncGenASend_Type");
	t->proc.corowrapper_type = symbol_addr(in, py, "_PyCoroWrapper_Type");
	t->proc.str_type = symbol_addr(in, py, "PyUnicode_Type");
	t->proc.long_type = symbol_addr(in, py, "PyLong_Type");
	if (described) {
		st = describe(in, t);
		if (st != PYPROC_OK)
			return st;
		l = &t->proc.layout;
	} else {
		t->proc.layout = *l;
		t->om = py_objmodel_find(t->version);
		if (t->om)
			t->proc.async = t->om->async;
	}
	err = mem_read(in->pid, t->proc.runtime + l->runtime_interp_head, &head, sizeof(head));
	if (err)
		return fail(in, err, "reading _PyRuntime");
	if (!head)
		return say(in, PYPROC_NOT_READY, "Python %s runtime not initialised yet",
			   t->version_str);
	snprintf(t->binary, sizeof(t->binary), "%s", py->map->path);
	find_code_counter(in, py, t, described);
	return PYPROC_OK;
}

static enum pyproc_status inspect_old(struct inspect *in, struct pyelf *old)
{
	char ver[32], lwhy[256];
	int major, minor;
	uint32_t hex;

	if (!name_version(old->map->path, &major, &minor))
		major = minor = -1;
	if (elf_py_version_string(old->e, major, minor, ver, sizeof(ver)) ||
	    py_version_parse(ver, &hex))
		return say(in, PYPROC_UNSUPPORTED, "CPython without _PyRuntime in %s",
			   old->map->path);
	if (py_layout_find(hex, lwhy, sizeof(lwhy)))
		return say(in, PYPROC_UNSUPPORTED, "Python %s without _PyRuntime in %s", ver,
			   old->map->path);
	return say(in, PYPROC_UNSUPPORTED, "%s", lwhy);
}

static enum pyproc_status inspect(struct inspect *in, struct py_target *t)
{
	struct pyelf py = { 0 }, old = { 0 };
	enum pyproc_status st;
	unsigned long flags = 0;
	char path[64];
	ssize_t n;
	int err;

	err = read_stat(in->pid, &in->state, &flags, &in->start_time);
	if (is_gone_err(err))
		return say(in, PYPROC_GONE, "no such process");
	if (err)
		return say(in, PYPROC_ERROR, "/proc/%d/stat: %s", (int)in->pid, strerror(-err));
	if (in->state == 'Z' || in->state == 'X')
		return say(in, PYPROC_GONE, "exited (zombie)");
	if (flags & PF_KTHREAD)
		return say(in, PYPROC_NOT_PYTHON, "kernel thread");
	err = proc_comm(in->pid, t->comm, sizeof(t->comm));
	if (err)
		return fail(in, err, "comm");
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)in->pid);
	n = readlink(path, in->exe, sizeof(in->exe) - 1);
	if (n < 0)
		return fail(in, -errno, "exe");
	in->exe[n] = '\0';
	/* as in maps, a replaced executable is marked " (deleted)" */
	if (n > 10 && !strcmp(in->exe + n - 10, " (deleted)"))
		in->exe[n - 10] = '\0';
	err = procmaps_read(in->pid, &in->maps);
	if (err)
		return fail(in, err, "maps");
	if (in->maps.n == 0)
		return vanished(in) ? say(in, PYPROC_GONE, "exited or exec'd while being inspected")
				    : say(in, PYPROC_NOT_PYTHON, "no memory mappings");
	err = find_pyelf(in, &py, &old);
	if (err == -ENOENT && old.e)
		st = inspect_old(in, &old);
	else if (err == -ENOENT)
		st = say(in, PYPROC_NOT_PYTHON, "no CPython runtime in %s or its libraries",
			 in->exe);
	else if (err == -EAGAIN)
		st = say(in, PYPROC_NOT_READY, "%s needs a libpython that is not mapped yet",
			 in->exe);
	else if (err)
		st = fail(in, err, "opening its ELF files");
	else
		st = inspect_runtime(in, &py, t);
	elf_close(py.e);
	elf_close(old.e);
	/* the answer may describe a new process under the same pid */
	if (st != PYPROC_GONE && vanished(in))
		return say(in, PYPROC_GONE, "exited or exec'd while being inspected");
	t->start_time = in->start_time;
	return st;
}

enum pyproc_status pyproc_inspect(pid_t pid, struct py_target *t, char *why, size_t whylen)
{
	struct inspect in = { .pid = pid, .why = why, .whylen = whylen };
	enum pyproc_status st;

	if (whylen)
		why[0] = '\0';
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	if (pid <= 0)
		return say(&in, PYPROC_GONE, "no such process");
	st = inspect(&in, t);
	procmaps_free(&in.maps);
	return st;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "cpython/linetable.h"
#include "process/memread.h"
#include "cpython/pystr.h"
#include "cpython/symbolize.h"

#include "cpython/vmwalk.h"

#define CODE_READ_MAX 1024

struct entry {
	pid_t pid;
	uint32_t fp;
	uint64_t code;
	struct py_code c;
	struct entry *newer, *older; /* the process's entries, most recently used first */
	size_t bytes;
};

/* A process's entries, for its memory cap and for forgetting it. */
struct owner {
	pid_t pid;
	size_t bytes;
	struct entry *newest, *oldest;
};

/* Open addressing with linear probing; entries are allocated one by one so that the
 * pointers handed out stay put when the table grows. */
struct symtab {
	struct entry **slot;
	size_t cap; /* power of two */
	size_t n;
	struct owner *owners;
	size_t nowners, owners_cap;
	size_t limit; /* bytes per process, 0: none */
	size_t bytes;
	uint64_t evicted;
};

static const struct py_code unknown_code;

static size_t slot_of(const struct symtab *st, pid_t pid, uint64_t code, uint32_t fp)
{
	return hash_u64(code ^ (uint64_t)(uint32_t)pid << 32 ^ hash_u64(fp)) & (st->cap - 1);
}

struct symtab *symtab_new(void)
{
	struct symtab *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->cap = 256;
	st->slot = calloc(st->cap, sizeof(*st->slot));
	if (!st->slot) {
		free(st);
		return NULL;
	}
	return st;
}

static void entry_free(struct entry *e)
{
	free(e->c.qualname);
	free(e->c.filename);
	free(e->c.linetable);
	free(e);
}

void symtab_free(struct symtab *st)
{
	size_t i;

	if (!st)
		return;
	for (i = 0; i < st->cap; i++)
		if (st->slot[i])
			entry_free(st->slot[i]);
	free(st->slot);
	free(st->owners);
	free(st);
}

static struct owner *owner_of(struct symtab *st, pid_t pid, int add)
{
	struct owner *o;

	for (size_t i = 0; i < st->nowners; i++)
		if (st->owners[i].pid == pid)
			return &st->owners[i];
	if (!add)
		return NULL;
	if (st->nowners == st->owners_cap) {
		size_t cap = st->owners_cap ? st->owners_cap * 2 : 16;

		o = realloc(st->owners, cap * sizeof(*o));
		if (!o)
			return NULL;
		st->owners = o;
		st->owners_cap = cap;
	}
	o = &st->owners[st->nowners++];
	*o = (struct owner){ .pid = pid };
	return o;
}

static void unlink_entry(struct owner *o, struct entry *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		o->newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		o->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void push_newest(struct owner *o, struct entry *e)
{
	e->older = o->newest;
	e->newer = NULL;
	if (o->newest)
		o->newest->newer = e;
	o->newest = e;
	if (!o->oldest)
		o->oldest = e;
}

void symtab_set_limit(struct symtab *st, size_t bytes_per_process)
{
	st->limit = bytes_per_process;
}

size_t symtab_bytes(const struct symtab *st)
{
	return st->bytes;
}

uint64_t symtab_evicted(const struct symtab *st)
{
	return st->evicted;
}

static void place(struct symtab *st, struct entry *e)
{
	size_t i = slot_of(st, e->pid, e->code, e->fp);

	while (st->slot[i])
		i = (i + 1) & (st->cap - 1);
	st->slot[i] = e;
}

/* Re-inserts every entry into a table of cap slots. */
static int grow(struct symtab *st, size_t cap)
{
	struct entry **old = st->slot;
	size_t oldcap = st->cap, i;

	st->slot = calloc(cap, sizeof(*st->slot));
	if (!st->slot) {
		st->slot = old;
		return -ENOMEM;
	}
	st->cap = cap;
	for (i = 0; i < oldcap; i++) {
		struct entry *e = old[i];

		if (e)
			place(st, e);
	}
	free(old);
	return 0;
}

static uint64_t load_u64(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

static size_t max_sz(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* Is the code object at code still the one of fingerprint fp? A freed one keeps its
 * fields until its memory is reused, while the objects they point to may be reused
 * already (a new function's name in the old name's place): a live object has a
 * plausible reference count (a freed block holds an allocator's pointer there). */
static bool code_alive(const struct py_target *t, uint64_t code, uint32_t fp)
{
	struct pw_scratch scratch;
	uint64_t refcnt;

	if (t->proc.layout.object_type != 8 || mem_read(t->pid, code, &refcnt, 8) || refcnt == 0 ||
	    refcnt > UINT32_MAX)
		return false;
	vmwalk_target(t->pid);
	return pw_code_fp(NULL, &t->proc, code, &scratch) == fp;
}

static void code_read(struct py_code *c, const struct py_target *t, uint64_t code, uint32_t fp)
{
	const struct py_layout *l = &t->proc.layout;
	uint8_t buf[CODE_READ_MAX];
	uint64_t name, file, table;
	size_t need;
	int32_t first;
	int err;

	/* Same computation as the sampler's, PyCode_Type check included. */
	if (fp == FP_INVALID || !code_alive(t, code, fp))
		return;
	need = max_sz(l->code_firstlineno + 4u, l->code_filename + 8u);
	need = max_sz(need, l->code_name + 8u);
	need = max_sz(need, l->code_qualname + 8u);
	need = max_sz(need, l->code_linetable + 8u);
	if (need > sizeof(buf) || mem_read(t->pid, code, buf, need))
		return;
	/* The object may have changed since the first read: check what this read saw. */
	memcpy(&first, buf + l->code_firstlineno, 4);
	file = load_u64(buf, l->code_filename);
	name = load_u64(buf, l->code_qualname ? l->code_qualname : l->code_name);
	if (pw_code_fingerprint((__u32)first, file, load_u64(buf, l->code_name)) != fp)
		return;
	if (py_str_read(t->pid, l, name, &c->qualname) ||
	    py_str_read(t->pid, l, file, &c->filename))
		goto fail;
	table = load_u64(buf, l->code_linetable);
	err = py_bytes_read(t->pid, l, table, PYBYTES_MAX, &c->linetable, &c->linetable_len);
	/* A table too large to read costs the line, not the name. */
	if (err && err != -E2BIG)
		goto fail;
	/* freed while it was read: what was read may belong to others */
	if (!code_alive(t, code, fp)) {
		free(c->linetable);
		goto fail;
	}
	c->firstlineno = first;
	c->valid = 1;
	return;
fail:
	free(c->qualname);
	free(c->filename);
	memset(c, 0, sizeof(*c));
}

static void slot_delete(struct symtab *st, size_t i);

/* Takes e out of the table and its owner's list, and frees it. */
static void remove_entry(struct symtab *st, struct owner *o, struct entry *e)
{
	size_t i = slot_of(st, e->pid, e->code, e->fp);

	while (st->slot[i] != e)
		i = (i + 1) & (st->cap - 1);
	slot_delete(st, i);
	unlink_entry(o, e);
	o->bytes -= e->bytes;
	st->bytes -= e->bytes;
	st->n--;
	entry_free(e);
}

const struct py_code *symtab_code(struct symtab *st, const struct py_target *t, uint64_t code,
				  uint32_t fp)
{
	size_t i = slot_of(st, t->pid, code, fp);
	struct entry *e;

	struct owner *o = owner_of(st, t->pid, 1);

	if (!o)
		return &unknown_code;
	for (; st->slot[i]; i = (i + 1) & (st->cap - 1)) {
		e = st->slot[i];
		if (e->pid == t->pid && e->code == code && e->fp == fp) {
			unlink_entry(o, e);
			push_newest(o, e);
			return &e->c;
		}
	}
	if ((st->n + 1) * 2 > st->cap && grow(st, st->cap * 2))
		return &unknown_code;
	e = calloc(1, sizeof(*e));
	if (!e)
		return &unknown_code;
	e->pid = t->pid;
	e->code = code;
	e->fp = fp;
	code_read(&e->c, t, code, fp);
	e->bytes = sizeof(*e) + 2 * sizeof(*st->slot) + e->c.linetable_len +
		   (e->c.qualname ? strlen(e->c.qualname) + 1 : 0) +
		   (e->c.filename ? strlen(e->c.filename) + 1 : 0);
	/* the least recently used entries of the process make room: read again if needed */
	while (st->limit && o->oldest && o->bytes + e->bytes > st->limit) {
		remove_entry(st, o, o->oldest);
		st->evicted++;
	}
	place(st, e);
	push_newest(o, e);
	o->bytes += e->bytes;
	st->bytes += e->bytes;
	st->n++;
	return &e->c;
}

/* An instruction without a line (3.10+) shows as the function's first line. */
int py_code_line(const struct py_code *c, uint32_t version, int32_t instr)
{
	int line;

	if (!c->valid)
		return -1;
	if (instr < 0)
		return c->firstlineno;
	line = linetable_line(version, c->linetable, c->linetable_len, c->firstlineno, instr);
	return line < 0 ? c->firstlineno : line;
}

/* Backward-shift deletion: moves later entries of the probe run into the hole unless
 * that would put one before its home slot. */
static void slot_delete(struct symtab *st, size_t i)
{
	size_t mask = st->cap - 1, j = i, h;

	for (;;) {
		struct entry *e;

		j = (j + 1) & mask;
		e = st->slot[j];
		if (!e)
			break;
		h = slot_of(st, e->pid, e->code, e->fp);
		if (((j - h) & mask) >= ((j - i) & mask)) {
			st->slot[i] = e;
			i = j;
		}
	}
	st->slot[i] = NULL;
}

void symtab_forget(struct symtab *st, pid_t pid)
{
	struct owner *o = owner_of(st, pid, 0);

	if (!o)
		return;
	while (o->oldest)
		remove_entry(st, o, o->oldest);
	*o = st->owners[--st->nowners];
}

size_t symtab_size(const struct symtab *st)
{
	return st->n;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "hash.h"
#include "process/memread.h"
#include "cpython/objread.h"
#include "cpython/pystr.h"
#include "asyncio/tasknames.h"

struct seen_ent {
	pid_t pid; /* 0 = empty, -1 = deleted */
	int root;
	uint64_t addr, coro;
};

/* A sampled task's name in UTF-8, by (pid, task, serial, name object). */
struct text_ent {
	pid_t pid; /* 0 = empty, -1 = deleted */
	uint32_t gen;
	uint64_t addr, serial, name_obj;
	char *text;
};

#define TEXT_SLOTS (1u << 15) /* all are dropped when half are used */

struct tasknames {
	struct seen_ent *tab;
	size_t cap, used;
	struct text_ent *text;
	size_t text_used;
	int map_fd;
	uint64_t unreadable, unreadable_gone, unreadable_copy;
};

struct tasknames *tasknames_new(void)
{
	struct tasknames *tn = calloc(1, sizeof(struct tasknames));

	if (tn)
		tn->map_fd = -1;
	return tn;
}

static void drop_texts(struct tasknames *tn, pid_t pid)
{
	for (size_t i = 0; tn->text && i < TEXT_SLOTS; i++) {
		struct text_ent *e = &tn->text[i];

		if (e->pid > 0 && (!pid || e->pid == pid)) {
			free(e->text);
			*e = (struct text_ent){ .pid = pid ? -1 : 0 };
		}
	}
	if (!pid && tn->text) {
		memset(tn->text, 0, TEXT_SLOTS * sizeof(*tn->text));
		tn->text_used = 0;
	}
}

void tasknames_free(struct tasknames *tn)
{
	if (!tn)
		return;
	drop_texts(tn, 0);
	free(tn->text);
	free(tn->tab);
	free(tn);
}

/* Written whole at once: slots taken at random would grow the heap for hours. Not by
 * memset: the compiler turns malloc and memset into calloc, which touches nothing. */
static bool make_texts(struct tasknames *tn)
{
	if (!tn->text && (tn->text = malloc(TEXT_SLOTS * sizeof(*tn->text))))
		explicit_bzero(tn->text, TEXT_SLOTS * sizeof(*tn->text));
	return tn->text;
}

void tasknames_set_map(struct tasknames *tn, int fd)
{
	tn->map_fd = fd;
	/* made with the map, not at a first lookup minutes later: the recorder's memory
	 * is what it will be from its start */
	if (fd >= 0)
		make_texts(tn);
}

uint64_t tasknames_unreadable(const struct tasknames *tn, uint64_t *gone, uint64_t *copy)
{
	if (gone)
		*gone = tn->unreadable_gone;
	if (copy)
		*copy = tn->unreadable_copy;
	return tn->unreadable;
}

static uint64_t key_hash(pid_t pid, uint64_t addr, uint64_t coro)
{
	return hash_u64(addr ^ hash_u64(coro ^ (uint64_t)pid << 40));
}

static int grow(struct tasknames *tn)
{
	size_t cap = tn->cap ? tn->cap * 2 : 256, live = 0;
	struct seen_ent *tab;

	/* entries of exited processes are tombstones: when they are most of the table,
	 * rehash in place rather than double */
	for (size_t i = 0; i < tn->cap; i++)
		live += tn->tab[i].pid > 0;
	if (tn->cap && live * 4 < tn->cap)
		cap = tn->cap;
	tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	tn->used = 0;
	for (size_t i = 0; i < tn->cap; i++) {
		struct seen_ent *e = &tn->tab[i];
		size_t j;

		if (e->pid <= 0)
			continue;
		j = key_hash(e->pid, e->addr, e->coro) & (cap - 1);
		while (tab[j].pid)
			j = (j + 1) & (cap - 1);
		tab[j] = *e;
		tn->used++;
	}
	free(tn->tab);
	tn->tab = tab;
	tn->cap = cap;
	return 0;
}

/* The entry of a task identity, made on first sight; NULL on ENOMEM. */
static struct seen_ent *entry(struct tasknames *tn, pid_t pid, uint64_t addr, uint64_t coro)
{
	struct seen_ent *free_slot = NULL;
	size_t j;

	if ((tn->used + 1) * 2 > tn->cap && grow(tn))
		return NULL;
	for (j = key_hash(pid, addr, coro) & (tn->cap - 1); tn->tab[j].pid;
	     j = (j + 1) & (tn->cap - 1)) {
		struct seen_ent *e = &tn->tab[j];

		if (e->pid == pid && e->addr == addr && e->coro == coro)
			return e;
		if (e->pid < 0 && !free_slot)
			free_slot = e;
	}
	if (!free_slot) {
		free_slot = &tn->tab[j];
		tn->used++;
	}
	*free_slot = (struct seen_ent){ .pid = pid, .addr = addr, .coro = coro };
	return free_slot;
}

/* 3.12+ lv_tag: digit count << 3 | sign bits; 30-bit digits */
static int long_name(const char *raw, char *buf, size_t len)
{
	uint64_t tag, value = 0;
	uint32_t digits[2];

	memcpy(&tag, raw, sizeof(tag));
	memcpy(digits, raw + 8, sizeof(digits));
	if ((tag & 3) || (tag >> 3) > 2)
		return -1;
	for (uint64_t i = tag >> 3; i-- > 0;)
		value = value << 30 | (digits[i] & 0x3fffffff);
	snprintf(buf, len, "Task-%llu", (unsigned long long)value);
	return 0;
}

/* Without an object model (a release none was generated for, or one whose
 * _Py_DebugOffsets disagree with it: pyproc.c): a str or an int, told apart by exact type. */
static void name_by_type(const struct py_target *t, uint64_t obj, char *buf, size_t len)
{
	uint64_t type;
	char raw[24], *s;

	if (mem_read(t->pid, obj + t->proc.layout.object_type, &type, sizeof(type)))
		return;
	if (type && type == t->proc.str_type &&
	    !py_str_read_max(t->pid, &t->proc.layout, obj, TASK_NAME_MAX, TASK_NAME_CUT, &s)) {
		snprintf(buf, len, "%s", s);
		free(s);
	} else if (type && type == t->proc.long_type &&
		   !mem_read(t->pid, obj + t->proc.layout.object_type + 8, raw, sizeof(raw))) {
		long_name(raw, buf, len);
	}
}

/* s into buf, cut after TASK_NAME_MAX characters */
static void cut_name(const char *s, char *buf, size_t len)
{
	size_t chars = 0, i = 0;

	for (; s[i]; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && chars++ == TASK_NAME_MAX)
			break;
	snprintf(buf, len, "%.*s%s", (int)i, s, s[i] ? TASK_NAME_CUT : "");
}

/* The name object still held by the task at addr, before and after its text was read:
 * what a userspace reader's sample names is read late, and the task may have let it go. */
static int still_named(const struct py_target *t, uint64_t addr, uint64_t name_obj)
{
	uint64_t now;

	return !mem_read(t->pid, addr + t->proc.async.task_name, &now, sizeof(now)) &&
	       now == name_obj;
}

void task_name(const struct py_target *t, const struct task_rec *task, char *buf, size_t len)
{
	struct objread r;
	int64_t num;
	char *s = NULL;

	if (task->name_kind == NAME_ASCII) {
		snprintf(buf, len, "%.*s", TASK_NAME_LEN, task->name);
		return;
	}
	if (task->name_kind == NAME_LONG && !long_name(task->name, buf, len))
		return;
	snprintf(buf, len, "?");
	/* NAME_CACHED: a copy in the sampler's map, of a task that may be gone */
	if (!task->name_obj || task->name_kind == NAME_CACHED)
		return;
	if (objread_init(&r, t)) {
		name_by_type(t, task->name_obj, buf, len);
		return;
	}
	if (!obj_str(&r, task->name_obj, &s)) {
		cut_name(s, buf, len);
		free(s);
	} else if (!obj_long(&r, task->name_obj, &num)) {
		snprintf(buf, len, "Task-%" PRId64, num);
	}
}

void name_ent_text(const struct name_ent *e, char *buf, size_t len)
{
	char text[TASK_NAME_TEXT];
	size_t n = e->nchars, o;

	if (n > TASK_NAME_MAX || n * e->width > NAME_BYTES ||
	    (e->width != 1 && e->width != 2 && e->width != 4)) {
		snprintf(buf, len, "?");
		return;
	}
	o = py_chars_utf8(e->chars, n, e->width, 0, text);
	if (e->length > n)
		snprintf(text + o, sizeof(text) - o, "%s", TASK_NAME_CUT);
	snprintf(buf, len, "%s", text);
}

int name_ent_read(const struct py_target *t, uint64_t name_obj, struct name_ent *e)
{
	uint64_t type;
	size_t n;
	int64_t len;
	int width, ascii, err;

	memset(e, 0, sizeof(*e));
	if (mem_read(t->pid, name_obj + t->proc.layout.object_type, &type, sizeof(type)))
		return -EFAULT;
	if (!type || type != t->proc.str_type)
		return -EINVAL;
	err = py_str_chars(t->pid, &t->proc.layout, name_obj, TASK_NAME_MAX, e->chars, &width,
			   &ascii, &n, &len);
	if (err)
		return err;
	e->kind = NAME_CACHED;
	e->name_obj = name_obj;
	e->width = width;
	e->nchars = n;
	e->length = len > UINT32_MAX ? UINT32_MAX : len;
	return 0;
}

/* The name generation of a NAME_CACHED task_rec or link (see NAME_STAMP). */
static uint32_t name_gen(const char *name)
{
	uint32_t gen;

	memcpy(&gen, name, sizeof(gen));
	return gen;
}

static uint64_t text_hash(pid_t pid, uint32_t gen, uint64_t addr, uint64_t serial,
			  uint64_t name_obj)
{
	return hash_u64(addr ^ hash_u64(serial ^ hash_u64(name_obj ^ (uint64_t)pid << 40 ^ gen)));
}

static struct text_ent *text_find(struct tasknames *tn, pid_t pid, const struct task_rec *t,
				  bool add)
{
	struct text_ent *free_slot = NULL;
	uint32_t gen = name_gen(t->name);
	size_t j;

	if (!make_texts(tn))
		return NULL;
	if (add && (tn->text_used + 1) * 2 > TEXT_SLOTS)
		drop_texts(tn, 0);
	for (j = text_hash(pid, gen, t->addr, t->serial, t->name_obj) & (TEXT_SLOTS - 1);
	     tn->text[j].pid; j = (j + 1) & (TEXT_SLOTS - 1)) {
		struct text_ent *e = &tn->text[j];

		if (e->pid == pid && e->gen == gen && e->addr == t->addr &&
		    e->serial == t->serial && e->name_obj == t->name_obj)
			return e;
		if (e->pid < 0 && !free_slot)
			free_slot = e;
	}
	if (!add)
		return NULL;
	if (!free_slot) {
		free_slot = &tn->text[j];
		tn->text_used++;
	}
	*free_slot = (struct text_ent){ .pid = pid,
					.gen = gen,
					.addr = t->addr,
					.serial = t->serial,
					.name_obj = t->name_obj };
	return free_slot;
}

/* A NAME_CACHED name from the BPF task_names map, if it is still the one of the sample. */
static int from_map(struct tasknames *tn, const struct py_target *t, const struct task_rec *task,
		    char *buf, size_t len)
{
	struct name_key key = { .pid = t->pid,
				.gen = name_gen(task->name),
				.task = task->addr,
				.name_obj = task->name_obj,
				.serial = task->serial };
	struct name_ent e;

	if (tn->map_fd < 0 || bpf_map_lookup_elem(tn->map_fd, &key, &e) || e.kind != NAME_CACHED ||
	    e.serial != task->serial || e.name_obj != task->name_obj || e.gen != key.gen)
		return -1;
	name_ent_text(&e, buf, len);
	return 0;
}

int tasknames_sample(struct tasknames *tn, const struct py_target *t, const struct task_rec *task,
		     char *buf, size_t len)
{
	struct text_ent *e;
	bool keep;

	switch (task->name_kind) {
	case NAME_ASCII:
	case NAME_LONG:
		task_name(t, task, buf, len);
		return 0;
	case NAME_CACHED:
		/* a stamped copy (or one without a serial) is the sample's own, kept by nothing
		 * else */
		keep = task->serial && name_gen(task->name) < NAME_STAMP;
		e = keep ? text_find(tn, t->pid, task, false) : NULL;
		if (e && e->text) {
			snprintf(buf, len, "%s", e->text);
			return 0;
		}
		if (!from_map(tn, t, task, buf, len)) {
			e = keep ? text_find(tn, t->pid, task, true) : NULL;
			if (e && !e->text)
				e->text = strdup(buf);
			return 0;
		}
		tn->unreadable_gone++;
		break;
	default:
		/* the userspace readers copy no long name: read it now, if the task still
		 * holds it */
		if (tn->map_fd < 0 && task->name_obj &&
		    still_named(t, task->addr, task->name_obj)) {
			char *s = NULL;

			if (!py_str_read_max(t->pid, &t->proc.layout, task->name_obj, TASK_NAME_MAX,
					     TASK_NAME_CUT, &s) &&
			    still_named(t, task->addr, task->name_obj)) {
				snprintf(buf, len, "%s", s);
				free(s);
				tn->unreadable_copy--;
				return 0;
			}
			free(s);
		}
		break;
	}
	tn->unreadable++;
	snprintf(buf, len, "?");
	return -1;
}

int tasknames_root(struct tasknames *tn, const struct py_target *t, const struct task_rec *task)
{
	/* the serial tells apart tasks that reuse an address and coroutine address */
	struct seen_ent *e =
		entry(tn, t->pid, task->addr, task->serial ? task->serial : task->coro);

	if (!e || e->root)
		return 0;
	e->root = 1;
	return 1;
}

void tasknames_forget(struct tasknames *tn, pid_t pid)
{
	drop_texts(tn, pid);
	for (size_t i = 0; i < tn->cap; i++) {
		if (tn->tab[i].pid == pid)
			tn->tab[i] = (struct seen_ent){ .pid = -1 };
	}
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "memread.h"
#include "objread.h"
#include "pystr.h"
#include "tasknames.h"

struct name_ent {
	pid_t pid; /* 0 = empty, -1 = deleted */
	int root;
	uint64_t addr, coro;
};

struct tasknames {
	struct name_ent *tab;
	size_t cap, used;
};

struct tasknames *tasknames_new(void)
{
	return calloc(1, sizeof(struct tasknames));
}

void tasknames_free(struct tasknames *tn)
{
	if (!tn)
		return;
	free(tn->tab);
	free(tn);
}

static uint64_t key_hash(pid_t pid, uint64_t addr, uint64_t coro)
{
	return hash_u64(addr ^ hash_u64(coro ^ (uint64_t)pid << 40));
}

static int grow(struct tasknames *tn)
{
	size_t cap = tn->cap ? tn->cap * 2 : 256, live = 0;
	struct name_ent *tab;

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
		struct name_ent *e = &tn->tab[i];
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
static struct name_ent *entry(struct tasknames *tn, pid_t pid, uint64_t addr, uint64_t coro)
{
	struct name_ent *free_slot = NULL;
	size_t j;

	if ((tn->used + 1) * 2 > tn->cap && grow(tn))
		return NULL;
	for (j = key_hash(pid, addr, coro) & (tn->cap - 1); tn->tab[j].pid;
	     j = (j + 1) & (tn->cap - 1)) {
		struct name_ent *e = &tn->tab[j];

		if (e->pid == pid && e->addr == addr && e->coro == coro)
			return e;
		if (e->pid < 0 && !free_slot)
			free_slot = e;
	}
	if (!free_slot) {
		free_slot = &tn->tab[j];
		tn->used++;
	}
	*free_slot = (struct name_ent){ .pid = pid, .addr = addr, .coro = coro };
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

/* Without an object model (3.14): a str or an int, told apart by exact type. */
static void name_by_type(const struct py_target *t, uint64_t obj, char *buf, size_t len)
{
	uint64_t type;
	char raw[24], *s;

	if (mem_read(t->pid, obj + t->proc.layout.object_type, &type, sizeof(type)))
		return;
	if (type && type == t->proc.str_type && !py_str_read(t->pid, &t->proc.layout, obj, &s)) {
		snprintf(buf, len, "%s", s);
		free(s);
	} else if (type && type == t->proc.long_type &&
		   !mem_read(t->pid, obj + t->proc.layout.object_type + 8, raw, sizeof(raw))) {
		long_name(raw, buf, len);
	}
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
	if (!task->name_obj)
		return;
	if (objread_init(&r, t)) {
		name_by_type(t, task->name_obj, buf, len);
		return;
	}
	if (!obj_str(&r, task->name_obj, &s)) {
		snprintf(buf, len, "%s", s);
		free(s);
	} else if (!obj_long(&r, task->name_obj, &num)) {
		snprintf(buf, len, "Task-%" PRId64, num);
	}
}

int tasknames_root(struct tasknames *tn, const struct py_target *t, const struct task_rec *task)
{
	/* the serial tells apart tasks that reuse an address and coroutine address */
	struct name_ent *e =
		entry(tn, t->pid, task->addr, task->serial ? task->serial : task->coro);

	if (!e || e->root)
		return 0;
	e->root = 1;
	return 1;
}

void tasknames_forget(struct tasknames *tn, pid_t pid)
{
	for (size_t i = 0; i < tn->cap; i++) {
		if (tn->tab[i].pid == pid)
			tn->tab[i] = (struct name_ent){ .pid = -1 };
	}
}

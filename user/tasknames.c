// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "objread.h"
#include "tasknames.h"

struct name_ent {
	pid_t pid; /* 0 = empty, -1 = deleted */
	int root;
	uint64_t addr, coro, name_obj;
	char *name;
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
	for (size_t i = 0; i < tn->cap; i++)
		free(tn->tab[i].name);
	free(tn->tab);
	free(tn);
}

static uint64_t key_hash(pid_t pid, uint64_t addr, uint64_t coro)
{
	return hash_u64(addr ^ hash_u64(coro ^ (uint64_t)pid << 40));
}

static int grow(struct tasknames *tn)
{
	size_t cap = tn->cap ? tn->cap * 2 : 256;
	struct name_ent *tab = calloc(cap, sizeof(*tab));

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

/* The entry of a task identity, made empty (name NULL) on first sight; NULL on ENOMEM. */
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

static char *read_name(const struct py_target *t, uint64_t obj)
{
	struct objread r;
	int64_t num;
	char *s = NULL;

	if (!obj || objread_init(&r, t))
		return NULL;
	if (!obj_str(&r, obj, &s))
		return s;
	/* 3.12+ keeps only the counter of an unnamed task until its name is asked for */
	if (!obj_long(&r, obj, &num) && asprintf(&s, "Task-%" PRId64, num) > 0)
		return s;
	return NULL;
}

const char *tasknames_get(struct tasknames *tn, const struct py_target *t,
			  const struct task_rec *task)
{
	struct name_ent *e = entry(tn, t->pid, task->addr, task->coro);
	char *s;

	if (!e)
		return "?";
	if (task->name && task->name != e->name_obj && (s = read_name(t, task->name))) {
		free(e->name);
		e->name = s;
		e->name_obj = task->name;
	}
	return e->name ? e->name : "?";
}

void tasknames_learn(struct tasknames *tn, pid_t pid, uint64_t addr, uint64_t coro,
		     const char *name)
{
	struct name_ent *e = entry(tn, pid, addr, coro);
	char *s;

	if (!e || (e->name && !strcmp(e->name, name)) || !(s = strdup(name)))
		return;
	free(e->name);
	e->name = s;
}

int tasknames_root(struct tasknames *tn, const struct py_target *t, const struct task_rec *task)
{
	struct name_ent *e = entry(tn, t->pid, task->addr, task->coro);

	if (!e || e->root)
		return 0;
	e->root = 1;
	return 1;
}

void tasknames_forget(struct tasknames *tn, pid_t pid)
{
	for (size_t i = 0; i < tn->cap; i++) {
		if (tn->tab[i].pid != pid)
			continue;
		free(tn->tab[i].name);
		tn->tab[i] = (struct name_ent){ .pid = -1 };
	}
}

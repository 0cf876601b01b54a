/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Names of asyncio tasks seen in samples, read once per task identity. */
#ifndef ASYNCBPF_TASKNAMES_H
#define ASYNCBPF_TASKNAMES_H

#include <stdint.h>
#include <sys/types.h>

#include "../bpf/asyncbpf.h"
#include "pyproc.h"

struct tasknames;

struct tasknames *tasknames_new(void);
void tasknames_free(struct tasknames *tn);

/* The task's name ("Task-3" for unnamed tasks on 3.12+, which keep only the number);
 * "?" when it cannot be read. Never NULL. */
const char *tasknames_get(struct tasknames *tn, const struct py_target *t,
			  const struct task_rec *task);

/* Remembers a name learnt elsewhere (a snapshot), for tasks that end before a sample
 * shows them. */
void tasknames_learn(struct tasknames *tn, pid_t pid, uint64_t addr, uint64_t coro,
		     const char *name);

/* 1 the first time this task heads a chain (has no known parent), else 0. */
int tasknames_root(struct tasknames *tn, const struct py_target *t, const struct task_rec *task);

void tasknames_forget(struct tasknames *tn, pid_t pid);

#endif

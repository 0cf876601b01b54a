/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Task names of samples, and which tasks have been seen heading a chain. */
#ifndef ASYNCBPF_TASKNAMES_H
#define ASYNCBPF_TASKNAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../bpf/asyncbpf.h"
#include "pyproc.h"

/* The name of a sampled task into buf: the copy BPF made, else read from the task_name
 * object now ("Task-N" for 3.12+'s numbered names); "?" when neither works. */
void task_name(const struct py_target *t, const struct task_rec *task, char *buf, size_t len);

struct tasknames;

struct tasknames *tasknames_new(void);
void tasknames_free(struct tasknames *tn);

/* 1 the first time this task identity heads a chain (no known parent), else 0. */
int tasknames_root(struct tasknames *tn, const struct py_target *t, const struct task_rec *task);

void tasknames_forget(struct tasknames *tn, pid_t pid);

#endif

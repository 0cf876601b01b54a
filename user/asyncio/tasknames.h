/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Task names of samples, and which tasks have been seen heading a chain. */
#ifndef ASYNCBPF_TASKNAMES_H
#define ASYNCBPF_TASKNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/asyncbpf.h"
#include "cpython/pyproc.h"

#define TASK_NAME_CUT  "\u2026" /* after the first TASK_NAME_MAX characters of a longer name */
#define TASK_NAME_TEXT (TASK_NAME_MAX * 4 + sizeof(TASK_NAME_CUT)) /* a name in UTF-8 */

/* The name of a live task into buf: the copy in task, else read from its task_name object
 * now ("Task-N" for 3.12+'s numbered names); "?" when neither works. For a snapshot of
 * the tasks, not a sample: a sample's task may be gone (tasknames_sample). */
void task_name(const struct py_target *t, const struct task_rec *task, char *buf, size_t len);

/* A name as the BPF walk keeps it (NAME_CACHED), in UTF-8. */
void name_ent_text(const struct name_ent *e, char *buf, size_t len);
/* The userspace twin of pw_copy_name's copy: the str at name_obj into e (kind
 * NAME_CACHED; serial left 0). 0, -EINVAL (not a compact str) or -EFAULT. */
int name_ent_read(const struct py_target *t, uint64_t name_obj, struct name_ent *e);

struct tasknames;

struct tasknames *tasknames_new(void);
void tasknames_free(struct tasknames *tn);

/* The BPF sampler's task_names map (its fd), where NAME_CACHED names are; -1 (the
 * default) for samples of the userspace readers, whose long names are read late, and
 * only while the task still holds them. */
void tasknames_set_map(struct tasknames *tn, int fd);

/* The name of a sampled task into buf (TASK_NAME_TEXT bytes): 0, or -1 when it cannot be
 * proven the task's (the task let it go, the copy was replaced): then "?", counted. */
int tasknames_sample(struct tasknames *tn, const struct py_target *t, const struct task_rec *task,
		     char *buf, size_t len);
/* Sampled names that were "?"; of them *gone had a copy that was replaced or evicted
 * before it was read, *copy none (the walk could not read the name). */
uint64_t tasknames_unreadable(const struct tasknames *tn, uint64_t *gone, uint64_t *copy);

/* 1 the first time this task identity heads a chain (no known parent), else 0. */
int tasknames_root(struct tasknames *tn, const struct py_target *t, const struct task_rec *task);

void tasknames_forget(struct tasknames *tn, pid_t pid);

#endif

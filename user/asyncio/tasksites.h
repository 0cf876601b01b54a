/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Where tasks were created: the creator's frames the creation probe kept (task_sites),
 * cached, for samples that show a task under its creator. */
#ifndef ASYNCBPF_TASKSITES_H
#define ASYNCBPF_TASKSITES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/asyncbpf.h"

struct tasksites;
struct codever;

struct tasksites *tasksites_new(void);
void tasksites_free(struct tasksites *ts);
/* The sampler's task_sites map (its fd); -1 (the default): no sites known. */
void tasksites_set_map(struct tasksites *ts, int fd);
/* What proves a site's frames whose code objects the probe left unread (3.12+): the
 * sampler's, used on the thread that drains it. NULL (the default): they are shown
 * [unknown]. */
void tasksites_set_codever(struct tasksites *ts, struct codever *cv);
/* Copies to out the creation site of the task at addr in pid that is numbered serial;
 * false if unknown. A copy: the next lookup may reuse the cache's slot. */
bool tasksites_get(struct tasksites *ts, pid_t pid, uint64_t addr, uint64_t serial,
		   struct task_site *out);

/* Sites looked up and not there (evicted, or never made), or another task's. */
void tasksites_misses(const struct tasksites *ts, uint64_t *absent, uint64_t *replaced);

#endif

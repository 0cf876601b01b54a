/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The tasks a process's wall ticks walk: the leaves of its last task snapshot, plus the
 * tasks created since (the creation probe's TASK_BORN), less the tasks freed since
 * (TASK_FREED). A task that lives a few milliseconds between two snapshots is walked at
 * every tick of its life. */
#ifndef ASYNCBPF_READERS_WALLTASKS_H
#define ASYNCBPF_READERS_WALLTASKS_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/wallsample.h"

struct walltasks;

struct walltasks *walltasks_new(void);
void walltasks_free(struct walltasks *wt);

/* A task created (its serial from the probe), or freed (serial 0: never numbered) at ns
 * (CLOCK_MONOTONIC: a free before a snapshot began is not of the snapshot's task).
 * 0 or -ENOMEM. */
int walltasks_born(struct walltasks *wt, uint64_t task, uint64_t coro, uint64_t serial);
int walltasks_freed(struct walltasks *wt, uint64_t task, uint64_t serial, uint64_t ns);

/* A new snapshot, begun at read_ns: add each of its tasks (leaf: it awaits no other
 * task), then end. Its leaves replace the old ones; a task created since and not in it
 * stays; a task in it freed since it began is left out. */
void walltasks_snapshot_begin(struct walltasks *wt);
void walltasks_snapshot_task(struct walltasks *wt, uint64_t task, uint64_t coro, uint64_t serial,
			     int leaf);
int walltasks_snapshot_end(struct walltasks *wt, uint64_t read_ns);

/* Forgets the frees older than ns: no snapshot still being read can list them. */
void walltasks_expire(struct walltasks *wt, uint64_t ns);

/* The tasks to walk now; `fresh` counts those created since the last snapshot. */
const struct wall_task *walltasks_list(const struct walltasks *wt, size_t *n, size_t *fresh);

/* k of the n tasks of list into out, each k-subset equally likely, rnd giving uniform
 * 64-bit values; without a copy of the whole list (Floyd's algorithm). set holds
 * WALLTASKS_PICK_SLOTS(k) entries. */
#define WALLTASKS_PICK_SLOTS(k) (2 * (size_t)(k))
void walltasks_sample(const struct wall_task *list, size_t n, size_t k, struct wall_task *out,
		      uint32_t *set, uint64_t (*rnd)(void *), void *ctx);

#endif

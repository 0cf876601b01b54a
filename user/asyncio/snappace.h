/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Pacing of asyncio task snapshots: often while a process is sampled, rarely while it
 * is idle, never more than a share of a core per process, and all of them within a
 * global CPU budget. */
#ifndef ASYNCBPF_SNAPPACE_H
#define ASYNCBPF_SNAPPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* When one process's tasks are read: kept with the process (struct target). */
struct snapplan {
	double next_refresh;			   /* when to read its asyncio tasks again */
	double last_refresh, interval, snap_floor; /* see snappace.c */
	uint64_t samples_seen;			   /* samples at the last snapshot */
};

struct snappace {
	double budget;	       /* share of a core for all snapshots together */
	double tokens, filled; /* CPU seconds left in the budget, when last refilled */
	size_t next;	       /* target to look at first */
	uint64_t taken;	       /* snapshots taken */
	double cpu;	       /* CPU seconds they used */
};

#define SNAPSHOT_BUDGET 0.005 /* the default share */

void snapshot_init(struct snappace *sp, double now, double budget);
/* Refills the budget for the time since the last call. */
void snapshot_budget_fill(struct snappace *sp, double now);
/* Whether the tasks of a process planned by p, with samples taken so far, should be read
 * now. */
bool snapshot_due(const struct snapplan *p, uint64_t samples, double now);
/* Whether it was never read (its first snapshot is not held back by the budget). */
bool snapshot_first(const struct snapplan *p);
/* Records a snapshot of it that used cpu seconds, and plans the next one. */
void snapshot_done(struct snappace *sp, struct snapplan *p, uint64_t samples, double now,
		   double cpu);

/* CPU time of this thread, s. */
double cpu_s(void);

#endif

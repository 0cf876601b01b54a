/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Process lifecycle from the kernel: exec, fork and exit events, the examination of new
 * processes (retried with backoff until their runtime is initialised), and freeing the
 * BPF map entries of processes that ended. */
#ifndef ASYNCBPF_LIFECYCLE_H
#define ASYNCBPF_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/examine.h"

struct lifecycle_ops {
	/* Examine pid and start profiling it if it qualifies; the verdict decides retries */
	examine_fn examine;
	/* pid exited or exec'd: drop everything userspace keeps for it */
	void (*ended)(void *ctx, pid_t pid, bool exec);
	/* whether pid is profiled now (for counting stale map entries) */
	bool (*tracked)(void *ctx, pid_t pid);
	void *ctx;
};

/* BPF maps holding per-process entries, in the order of lifecycle_stats' counts. */
enum lc_map { LCM_PROCS, LCM_TSTATES, LCM_CORO_TASK, LCM_TASK_SERIALS, LCM_TASK_LINKS, LCM_MAX };

struct lifecycle_stats {
	uint64_t execs, forks, exits; /* events seen */
	uint64_t examined, retries;   /* examinations, of which retries */
	uint64_t gave_up;	      /* never initialised a runtime within the retry window */
	uint64_t lost;		      /* events the ring buffer had no room for */
	uint64_t swept;		      /* map entries of ended processes removed */
	uint64_t sweep_errors;	      /* map walks that failed (entries left in place) */
	size_t pending;		      /* processes waiting to be examined again */
	size_t entries[LCM_MAX];      /* map entries now */
	size_t stale[LCM_MAX];	      /* of which belong to no profiled process */
};

struct lifecycle;

/* Loads and attaches the tracepoints, sharing the sampler's maps: map_fd(maps, name) is
 * the fd of each, or -ENOENT. */
int lifecycle_open(struct lifecycle **out, int (*map_fd)(void *maps, const char *name), void *maps,
		   const struct lifecycle_ops *ops, char *err, size_t errlen);
void lifecycle_close(struct lifecycle *lc);

/* Handles pending events, examines the processes that are due, and frees the map entries
 * of processes that ended. Returns true when events were lost since the last call (the
 * caller should rescan /proc). */
bool lifecycle_run(struct lifecycle *lc);

/* pid should be examined (found by a scan, or seen in a sample while unknown). */
void lifecycle_examine(struct lifecycle *lc, pid_t pid);

/* pid stopped being profiled for a reason userspace found (e.g. a scan saw it gone): its
 * map entries are freed at the next sweep, before it can be examined again. */
void lifecycle_ended(struct lifecycle *lc, pid_t pid);

/* Sweeps now if pid ended and its entries are still there: before it is profiled again. */
void lifecycle_settle(struct lifecycle *lc, pid_t pid);

/* Processes waiting to be examined (again). */
size_t lifecycle_pending(const struct lifecycle *lc);

/* Counts (walks every map: for --stats and tests, not for the hot path). */
void lifecycle_stats(struct lifecycle *lc, struct lifecycle_stats *st);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loads the wall-clock sampler (a sleepable BPF task iterator) sharing the CPU sampler's
 * maps, and runs it over one process's threads and listed suspended tasks on demand. */
#ifndef ASYNCBPF_WALL_SAMPLER_H
#define ASYNCBPF_WALL_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/wallsample.h"
#include "readers/sampler.h"

typedef void (*wall_cb)(void *ctx, const struct wall_sample *w, size_t size);
/* a task created or freed (the sampler's task_lives ring buffer) */
typedef void (*wall_life_cb)(void *ctx, const struct task_life *e);

struct wall;

/* Loads the program with the maps of s. NULL with a one-line reason in err. */
struct wall *wall_open(struct sampler *s, bool run_stats, wall_cb cb, wall_life_cb life, void *ctx,
		       char *err, size_t errlen);
void wall_close(struct wall *w);

int wall_add_proc(struct wall *w, pid_t pid);
void wall_del_proc(struct wall *w, pid_t pid);

/* One tick of pid: every thread, then the n suspended tasks (n <= WALL_MAX_TASKS), then the
 * tasks created at or after born_after (CLOCK_MONOTONIC: when the list was made), each
 * with probability keep / 2^32 (1 << 32: all). The records reach the callback before it
 * returns. 0, or -errno. */
int wall_run(struct wall *w, pid_t pid, const struct wall_task *tasks, uint32_t n,
	     uint64_t born_after, uint64_t keep);
/* Hands the task creations and frees sent since the last call to the life callback. */
int wall_drain_lives(struct wall *w);

struct wall_stats {
	uint64_t stat[WSTAT_MAX];
	uint64_t run_ns, run_cnt; /* bpf_stats of the program, 0 when not enabled */
	uint64_t bad_records, bad_lives;
};

int wall_read_stats(struct wall *w, struct wall_stats *st);

#endif

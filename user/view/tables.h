/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What a profile shows: which stacks a filter keeps, and the tables built from them —
 * functions by self and total weight, task paths (outermost task to the running task,
 * and the function running in it), processes. A stack weighs its wall time in a weighted
 * (wall-clock) profile, else its count. */
#ifndef ASYNCBPF_TABLES_H
#define ASYNCBPF_TABLES_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* Every condition given must hold. */
struct stack_filter {
	int pid;	       /* 0: any; else a frame of this process */
	const char *task;      /* a task of this name runs or awaits */
	const char *task_path; /* exactly this task path (in the path_style given) */
	const regex_t *re;     /* a frame's text (as the writers print it) matches */
};

/* How task paths are written: tasks as "<task NAME>" or bare names, joined by arrow. */
struct path_style {
	const char *arrow; /* between two tasks, e.g. " -> " */
	bool bare;	   /* "NAME" instead of "<task NAME>" */
};

/* Adds the stacks of in that f keeps (all, with f NULL) to out, their frames interned in
 * out; out takes in's period when it has none. 0, or -ENOMEM. */
int profile_merge(struct profile *out, const struct profile *in, const struct stack_filter *f,
		  const struct path_style *ps);

/* A function: Python frames of one (qualname, file) at any line; other frames as such. */
struct func_row {
	char *key;		     /* "qualname (file)", or the frame's text */
	const struct frame_sym *sym; /* one of its frames (start_line is the function's) */
	uint64_t self, total;	     /* weight as the leaf; of stacks it is in */
};

struct path_row {
	char *key; /* "A -> B: function" */
	uint64_t weight;
};

struct proc_row {
	int pid;
	const struct frame_sym *sym; /* its process frame: name, container label */
	uint64_t weight, samples;
};

struct tables {
	struct func_row *funcs;
	struct path_row *paths;
	struct proc_row *procs;
	size_t nfuncs, npaths, nprocs;
	uint64_t total;	   /* weight of the stacks kept */
	uint64_t samples;  /* their count */
	uint64_t in_tasks; /* weight of those in a task */
	uint64_t unknown;  /* weight of those with an [unknown] frame */
};

/* Tables of p's stacks that f keeps (rows unsorted); the rows point into p, which must
 * outlive them. 0, or -ENOMEM (t is then empty). */
int tables_build(struct tables *t, const struct profile *p, const struct stack_filter *f,
		 const struct path_style *ps);
void tables_free(struct tables *t);

enum func_order { BY_SELF, BY_TOTAL, BY_NAME };
/* Heaviest first, ties by key; BY_NAME by key. */
void tables_sort_funcs(struct tables *t, enum func_order o);
void tables_sort_paths(struct tables *t, bool by_name);
enum proc_order { PROC_BY_WEIGHT, PROC_BY_PID, PROC_BY_NAME };
void tables_sort_procs(struct tables *t, enum proc_order o);

/* The weight of st: wall time in a weighted profile, else count. */
uint64_t stack_weight(const struct profile *p, const struct stack_ent *st);

#endif

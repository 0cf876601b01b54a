/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Aggregated profile: interned frames and stacks (root first) with sample counts. */
#ifndef ASYNCBPF_PROFILE_H
#define ASYNCBPF_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum frame_kind {
	FRAME_PROCESS, /* name = process name, line = pid, file = container label or NULL,
			* ns_pid = its pid in the container's namespace (0: the same) */
	FRAME_THREAD,  /* name = thread name, line = tid */
	FRAME_PYTHON,  /* name = qualname, file, line */
	FRAME_SPECIAL, /* name only: [truncated], [unknown], ... */
	FRAME_TASK,    /* name = task name: a task boundary in a stacked stack */
	FRAME_NATIVE,  /* name = "symbol" or "library+0xOFFSET" (--native) */
	FRAME_WORKER,  /* name = thread name: a pool worker, after the task awaiting its work */
};

struct frame_sym {
	enum frame_kind kind;
	const char *name;
	const char *file;
	int line;
	int start_line; /* FRAME_PYTHON: the code object's first line (0: unknown) */
	int ns_pid;	/* FRAME_PROCESS: the pid inside its pid namespace */
};

struct stack_ent {
	const uint32_t *ids; /* frame ids, root first */
	uint32_t n;
	uint64_t count;
	uint64_t wall_ns, cpu_ns; /* weights (wall-clock mode), 0 in a count-only profile */
};

struct profile;

struct profile *profile_new(void);
void profile_free(struct profile *p);

/* Id of a frame, interned; file may be NULL. UINT32_MAX when out of memory. */
uint32_t profile_frame(struct profile *p, enum frame_kind kind, const char *name, const char *file,
		       int line);
/* The process frame of pid: see FRAME_PROCESS. */
uint32_t profile_process_frame(struct profile *p, const char *comm, int pid, int ns_pid,
			       const char *container);
const struct frame_sym *profile_frame_sym(const struct profile *p, uint32_t id);
size_t profile_nframes(const struct profile *p);
/* Not part of a frame's identity: a function's first line is the same at every line. */
void profile_set_start_line(struct profile *p, uint32_t id, int start_line);

/* Time between two samples in nanoseconds (0: unknown). */
void profile_set_period(struct profile *p, uint64_t ns);
uint64_t profile_period(const struct profile *p);

/* Adds count samples of a stack; -ENOMEM on failure. */
int profile_add(struct profile *p, const uint32_t *ids, uint32_t n, uint64_t count);

/* Adds count samples of a stack that stand for wall_ns of wall-clock time and cpu_ns of
 * CPU time; the profile is then weighted (profile_weighted). -ENOMEM on failure. */
int profile_add_ns(struct profile *p, const uint32_t *ids, uint32_t n, uint64_t count,
		   uint64_t wall_ns, uint64_t cpu_ns);
int profile_weighted(const struct profile *p);
void profile_total_ns(const struct profile *p, uint64_t *wall_ns, uint64_t *cpu_ns);

/* Stacks, heaviest first (by wall time in a weighted profile, else by count; ties by
 * frame ids). Freezes the profile: no profile_add after. */
const struct stack_ent *profile_stacks(struct profile *p, size_t *n);
uint64_t profile_total(const struct profile *p);
/* The stacks in no particular order, without freezing the profile. */
const struct stack_ent *profile_stacks_unsorted(const struct profile *p, size_t *n);

/* A frame's new name, or NULL to keep it; *file (f->file on entry) its new file. */
typedef const char *(*profile_rename_fn)(void *ctx, const struct frame_sym *f, const char **file);
/* A copy of p in which each frame rename gives a new name is so named, stacks that
 * become the same are one, and frames no stack holds are left out. NULL: no memory. */
struct profile *profile_renamed(const struct profile *p, profile_rename_fn rename, void *ctx);

/* How alike two profiles are: over the stacks, the sum of the smaller of a stack's shares
 * of a's and of b's samples, stacks matched by what their frames say (each profile has
 * its own ids). 1: the same shares; 0: no stack in common. NAN when either is empty or
 * out of memory. */
double profile_overlap(const struct profile *a, const struct profile *b);

/* Distinct stacks and frames held, for --stats. */
void profile_size(const struct profile *p, size_t *nstacks, size_t *nframes);

/* Samples taken but not in the profile (ring buffer full, malformed records, no memory):
 * metadata every writer records. */
void profile_set_lost(struct profile *p, uint64_t n);
uint64_t profile_lost(const struct profile *p);

/* profile_add that lets a new stack in only while it fits in *budget bytes, which it
 * then uses up: -ENOSPC when it does not fit (nothing added). */
int profile_add_capped(struct profile *p, const uint32_t *ids, uint32_t n, uint64_t count,
		       size_t *budget);

/* Bytes a new stack of n frames takes in the table. */
size_t profile_stack_bytes(uint32_t n);

/* Memory the profile has allocated (its tables by capacity), and how many stacks there
 * are. */
size_t profile_bytes(const struct profile *p, size_t *nstacks);

/* The container label of a stack (its process frame's), NULL on the host. */
const char *profile_stack_container(const struct profile *p, const struct stack_ent *s);

/* Writes one frame as text ("qualname (file:line)", "python3.12 (pid 1)", ...). */
void profile_print_frame(FILE *f, const struct frame_sym *s);

#endif

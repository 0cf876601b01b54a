/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One interface over the three readers: the BPF sampler on cpu-clock, the BPF wall-clock
 * ticker, and the userspace readers (memcpy, vmreadv). A recording holds a struct reader
 * and calls it without asking which one it is. */
#ifndef ASYNCBPF_READER_H
#define ASYNCBPF_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "readers/sampler.h"

struct lifecycle;
struct lifecycle_ops;
struct py_target;
struct joiner;
struct tracker;

enum reader_kind { READER_BPF, READER_MEMCPY, READER_VMREADV };

int reader_parse(const char *name, enum reader_kind *out);
const char *reader_name(enum reader_kind k);

struct reader_opts {
	enum reader_kind kind;
	bool wall;		/* READER_BPF: wall-clock ticks instead of cpu-clock samples */
	unsigned int freq;	/* Hz */
	unsigned int max_tasks; /* wall: suspended tasks per process per tick, 0: all */
	bool origins;		/* load the task-creation probe */
	bool run_stats, verbose;
	unsigned int native_bytes; /* user stack bytes copied per sample, 0: none */
	/* the profile being recorded: its task names and sites read the BPF maps, and wall
	 * mode adds its weighted samples to it */
	struct joiner *jn;
	sampler_cb cb;
	void *ctx;
};

/* What a call returns when the reader cannot do it at all (no error happened). */
#define READER_UNSUPPORTED 1
/* What reader_add returns for a process this reader cannot read (why says why). */
#define READER_REFUSED 2

struct reader_totals {
	uint64_t taken; /* samples of Python threads taken */
	uint64_t lost;	/* of which the reader lost (ring buffer full, malformed records) */
};

/* What the recording adds to a reader's --stats report, printed where the reader says. */
struct reader_report {
	double elapsed;		 /* s, start to stop */
	uint64_t recorded, lost; /* samples in the profile; lost by the reader or the record */
	const struct joiner *jn;
	/* the native stacks' lines, given the stack bytes copied per native sample */
	void (*native)(void *ctx, FILE *f, double stack_bytes);
	/* the recording's own lines: all of them, or the few a userspace reader reports */
	void (*recording)(void *ctx, FILE *f, bool brief);
	void *ctx;
};

struct reader_ops {
	const char *name;
	/* 0, -1 or READER_REFUSED with a one-line reason in why */
	int (*add)(void *r, const struct py_target *t, char *why, size_t len);
	void (*del)(void *r, pid_t pid);
	/* NULL: sampling starts at the first poll */
	int (*start)(void *r, char *why, size_t len);
	int (*poll)(void *r, int timeout_ms);
	void (*stop)(void *r);
	/* NULL: no thread of the reader's own reads the record's targets or the tracker */
	void (*lock)(void *r);
	void (*unlock)(void *r);
	/* NULL: the reader does not care when the tracker has read pid's tasks */
	void (*tasks_read)(void *r, pid_t pid);
	/* NULL: not supported */
	int (*watch_creations)(void *r, const struct py_target *t);
	int (*lifecycle)(void *r, struct lifecycle **out, const struct lifecycle_ops *ops,
			 char *why, size_t len);
	void (*totals)(void *r, struct reader_totals *t);
	void (*print_stats)(void *r, FILE *f, const struct reader_report *rep);
	void (*free)(void *r);
};

struct reader {
	const struct reader_ops *ops;
	void *impl;
	struct tracker *tracker; /* the asyncio task maps this reader consults */
};

/* Privileges and kernel BTF when the kind needs them, checked before anything else. */
int reader_check_env(enum reader_kind kind, char *why, size_t len);

/* The reader o asks for, its tracker and, for the BPF readers, the record's task names
 * and sites reading their maps; NULL with a one-line reason. */
struct reader *reader_new(const struct reader_opts *o, char *why, size_t len);
void reader_free(struct reader *rd);

/* Starts reading t (0), or -1 or READER_REFUSED with a reason. */
int reader_add(struct reader *rd, const struct py_target *t, char *why, size_t len);
void reader_del(struct reader *rd, pid_t pid);
int reader_start(struct reader *rd, char *why, size_t len);
/* Delivers pending records to the callback, waiting up to timeout_ms; -errno on error. */
int reader_poll(struct reader *rd, int timeout_ms);
/* No sample is taken after it returns; the records pending are delivered. */
void reader_stop(struct reader *rd);
/* Between start and stop, whoever changes the record's targets or the tracker holds it. */
void reader_lock(struct reader *rd);
void reader_unlock(struct reader *rd);
void reader_tasks_read(struct reader *rd, pid_t pid);
/* Links the tasks t creates from now on to their creators: 0, -errno, or
 * READER_UNSUPPORTED. */
int reader_watch_creations(struct reader *rd, const struct py_target *t);
/* The kernel's exec, fork and exit events over the reader's maps: 0, -errno with a reason,
 * or READER_UNSUPPORTED. */
int reader_lifecycle(struct reader *rd, struct lifecycle **out, const struct lifecycle_ops *ops,
		     char *why, size_t len);
/* As of the stop once stopped. */
void reader_totals(struct reader *rd, struct reader_totals *t);
void reader_print_stats(struct reader *rd, FILE *f, const struct reader_report *rep);

/* For the kinds reader_new picks from (reader_bpf.c, reader_user.c): each fills rd or
 * returns -1 with a reason; and the median and p90 lines of a cost_bucket() histogram of
 * read times per sample, which both print. */
int reader_bpf_init(struct reader *rd, const struct reader_opts *o, char *why, size_t len);
int reader_user_init(struct reader *rd, const struct reader_opts *o, char *why, size_t len);
void reader_print_cost(FILE *f, const uint64_t *hist);

#endif

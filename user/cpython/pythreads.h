/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Python's own names of a process's threads (threading's Thread.name), read from its
 * threading._active and cached per thread. */
#ifndef ASYNCBPF_PYTHREADS_H
#define ASYNCBPF_PYTHREADS_H

#include <stdint.h>
#include <sys/types.h>

#include "cpython/pyproc.h"

#define PYTHREAD_NAME_CHARS 255 /* longer names are cut to this, the last one "…" */
#define PYTHREADS_REFRESH   1.0 /* seconds a process's names are used before read again */

struct pythreads;

struct pythreads_stats {
	uint64_t reads;	     /* reads of a process's threading._active */
	uint64_t read_fails; /* of those, failed (the last good names were kept) */
	uint64_t named;	     /* samples named by Python */
	uint64_t unread;     /* samples named by their OS name because a read failed */
	char first_why[256]; /* the first failure, "pid N: why" */
};

struct pythreads *pythreads_new(void);
void pythreads_free(struct pythreads *pt);

/* Python's name of thread tid of t, whose thread state at the sample was tstate (0:
 * none: the name it had, at a thread's end), or NULL when Python has none (not started by
 * threading, threading not imported, no thread state yet) or it could not be read
 * (counted). Valid until the next call. */
const char *pythreads_name(struct pythreads *pt, const struct py_target *t, pid_t tid,
			   uint64_t tstate);

void pythreads_forget(struct pythreads *pt, pid_t pid);
void pythreads_stats(const struct pythreads *pt, struct pythreads_stats *st);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Finds Python processes in /proc, examining each process incarnation once. */
#ifndef ASYNCBPF_DISCOVER_H
#define ASYNCBPF_DISCOVER_H

#include <sys/types.h>

#include "cpython/pyproc.h"

/* Called for each process seen for the first time with a final verdict: PYPROC_OK (t
 * filled), PYPROC_UNSUPPORTED or PYPROC_ERROR (why filled). Not-Python processes are
 * remembered silently; not-ready ones are retried at the next scan. */
typedef void (*discover_cb)(void *ctx, pid_t pid, enum pyproc_status st, const struct py_target *t,
			    const char *why);

struct discover;

struct discover *discover_new(pid_t self);
void discover_free(struct discover *d);
int discover_scan(struct discover *d, discover_cb cb, void *ctx);

#endif

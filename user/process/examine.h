/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Examining a process: the verdicts by which discovery, a command's scan and the
 * lifecycle decide whether to look at it again. The examiner is the caller's (the
 * recorder's, over cpython/pyproc.h), so that process/ knows no interpreter. */
#ifndef ASYNCBPF_EXAMINE_H
#define ASYNCBPF_EXAMINE_H

#include <sys/types.h>

enum pyproc_status {
	PYPROC_OK = 0,
	PYPROC_GONE,	    /* no such process (or it exited while being inspected) */
	PYPROC_NOT_PYTHON,  /* no CPython runtime mapped */
	PYPROC_UNSUPPORTED, /* CPython, but a version or build asyncbpf has no layout for */
	PYPROC_NOT_READY,   /* CPython, runtime not initialised yet: try again later */
	PYPROC_ERROR,	    /* anything else (permissions, unreadable files) */
};

/* Examines pid and acts on a final verdict (profiles it, or warns); the verdict decides
 * whether pid is examined again: PYPROC_NOT_READY and PYPROC_GONE are retried, the rest
 * are final. */
typedef enum pyproc_status (*examine_fn)(void *ctx, pid_t pid);

#endif

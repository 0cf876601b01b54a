/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The await tree of a task snapshot, printed like CPython 3.14's
 * `python -m asyncio pstree PID`. */
#ifndef ASYNCBPF_PSTREE_H
#define ASYNCBPF_PSTREE_H

#include <stdio.h>

#include "asyncio/atasks.h"
#include "asyncio/taskthreads.h"
#include "cpython/symbolize.h"

/* Prints the tree to out and returns 0; on a cycle prints the cycles to err, in
 * pstree's words, and returns 1; -1 when out of memory. tt (NULL: none): the threads
 * running work of a's tasks, each drawn under the task that awaits it. */
int pstree_print(FILE *out, FILE *err, struct atasks *a, const struct task_threads *tt,
		 const struct py_target *t, struct symtab *st);

#endif

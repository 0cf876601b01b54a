/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Finding the CPython runtime of a process: which ELF holds it, where _PyRuntime is,
 * which exact version runs, and the layout that goes with it. */
#ifndef ASYNCBPF_PYPROC_H
#define ASYNCBPF_PYPROC_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/asyncbpf.h"
#include "cpython/py_objmodel.h"
#include "process/examine.h"

struct py_target {
	pid_t pid;
	uint32_t version;	       /* PY_VERSION_HEX */
	char version_str[32];	       /* "3.12.1" */
	char binary[PATH_MAX];	       /* ELF holding _PyRuntime, as the process maps it */
	char comm[TASK_COMM_LEN];      /* process name */
	unsigned long long start_time; /* /proc/PID/stat field 22, tells pid reuse apart */
	struct py_proc proc;	      /* what the BPF side gets: runtime, type addresses, layouts */
	const struct py_objmodel *om; /* object model of the version, NULL if none */
	int task_lists;	  /* 3.14+: tasks are listed per thread, awaiters named by each task */
	char om_why[192]; /* 3.13+ without om: why (no model, or it disagrees with the runtime) */
	/* 3.12+: where proving code objects by version was refused (proc.code_counter 0) */
	char code_why[192];
	bool versions_checked; /* 3.13+: _Py_DebugOffsets agree with the code-version fields */
};

/* Inspects pid. On PYPROC_OK fills *t. Otherwise why gets a one-line reason (no
 * trailing newline) naming the pid. Never prints. */
enum pyproc_status pyproc_inspect(pid_t pid, struct py_target *t, char *why, size_t whylen);

#endif

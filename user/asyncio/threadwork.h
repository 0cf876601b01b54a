/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The pools whose workers' frames name the item they run, and so the task that awaits it
 * (see pw_first_task in bpf/pywalk.h), found in a process's modules. */
#ifndef ASYNCBPF_THREADWORK_H
#define ASYNCBPF_THREADWORK_H

#include "bpf/asyncbpf.h"
#include "cpython/pyproc.h"

/* Fills in w the pools of t not found in it yet (a code object 0): anyio's worker
 * (anyio.to_thread.run_sync: FastAPI's and Starlette's def endpoints, run_in_threadpool,
 * sync background tasks) once anyio's asyncio backend is imported, and concurrent.futures'
 * ThreadPoolExecutor as loop.run_in_executor and asyncio.to_thread use it, once asyncio
 * and concurrent.futures are imported and an item was made. Pools are imported at their
 * first use: the caller asks again, until all are found, when sys.modules grew, or at
 * once when this returns 1 (the executor is imported but has made no item yet, which
 * imports nothing). 0, 1, or -errno when t's objects cannot be read at all. */
int threadwork_find(const struct py_target *t, struct py_work *w);

#endif

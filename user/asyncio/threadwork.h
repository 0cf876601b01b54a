/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Pool workers whose frame names the work item they run, and so the task that awaits it
 * (see pw_work_link in bpf/pywalk.h), found in a process's modules. */
#ifndef ASYNCBPF_THREADWORK_H
#define ASYNCBPF_THREADWORK_H

#include "bpf/asyncbpf.h"
#include "cpython/pyproc.h"

/* anyio's worker (anyio.to_thread.run_sync: FastAPI's and Starlette's def endpoints,
 * run_in_threadpool, sync background tasks): its WorkerThread.run code object and the
 * slots of its future and context locals into out. 0 when found; -ENOENT when anyio's
 * asyncio backend is not imported (yet); another -errno when it cannot be read. */
int threadwork_find(const struct py_target *t, struct py_work *out);

#endif

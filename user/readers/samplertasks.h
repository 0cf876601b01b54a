/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The BPF sampler's side of asyncio's task tracking: its task maps as the tracker's
 * taskmaps_ops, and its task-creation probe placed at a process's _asyncio.Task
 * constructor. */
#ifndef ASYNCBPF_SAMPLERTASKS_H
#define ASYNCBPF_SAMPLERTASKS_H

#include "asyncio/tracker.h"
#include "cpython/pyproc.h"
#include "readers/sampler.h"

/* The sampler's asyncio maps (ctx: the struct sampler), for tracker_new_ops. */
extern const struct taskmaps_ops sampler_taskmaps_ops;

/* Attaches s's task-creation uprobe to t's _asyncio.Task constructor: tasks t's process
 * creates from now on are linked to their creators. 0, -ENOENT while asyncio is not
 * imported, or -errno. */
int sampler_watch_creations(struct sampler *s, const struct py_target *t);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Finds Python processes in /proc, examining each process incarnation once. */
#ifndef ASYNCBPF_DISCOVER_H
#define ASYNCBPF_DISCOVER_H

#include <sys/types.h>

#include "process/examine.h"

struct discover;

struct discover *discover_new(pid_t self);
void discover_free(struct discover *d);
/* Examines each process seen for the first time; one the verdict calls not ready (or
 * gone) is examined again at the next scan, any other is remembered. */
int discover_scan(struct discover *d, examine_fn examine, void *ctx);

#endif

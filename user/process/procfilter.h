/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Which processes to profile: --container, --cgroup and --comm. Values of one kind are
 * alternatives; kinds combine (all given kinds must match). */
#ifndef ASYNCBPF_PROCFILTER_H
#define ASYNCBPF_PROCFILTER_H

#include <stdbool.h>

#include "process/container.h"

#define FILTER_MAX 16

enum filter_kind { FILTER_CONTAINER, FILTER_CGROUP, FILTER_COMM, FILTER_KINDS };

struct procfilter {
	char *v[FILTER_KINDS][FILTER_MAX];
	int n[FILTER_KINDS];
};

/* Adds a value; -1 with a reason in why when it is malformed or one too many. */
int procfilter_add(struct procfilter *f, enum filter_kind kind, const char *arg, char *why,
		   size_t len);
bool procfilter_empty(const struct procfilter *f);
void procfilter_free(struct procfilter *f);

/* A --container value matches a container id by prefix, or a label exactly. */
bool procfilter_match(const struct procfilter *f, const char *comm, const struct proc_place *pl);

#endif

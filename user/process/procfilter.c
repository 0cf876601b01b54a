// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/asyncbpf.h"
#include "process/procfilter.h"

int procfilter_add(struct procfilter *f, enum filter_kind kind, const char *arg, char *why,
		   size_t len)
{
	static const char *const names[FILTER_KINDS] = { "--container", "--cgroup", "--comm" };
	char path[CGROUP_PATH_LEN];

	if (!*arg) {
		snprintf(why, len, "%s needs a non-empty value", names[kind]);
		return -1;
	}
	if (f->n[kind] == FILTER_MAX) {
		snprintf(why, len, "too many %s values (at most %d)", names[kind], FILTER_MAX);
		return -1;
	}
	if (kind == FILTER_CGROUP) {
		cgroup_normalize(arg, path, sizeof(path));
		arg = path;
	}
	f->v[kind][f->n[kind]] = strdup(arg);
	if (!f->v[kind][f->n[kind]]) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	f->n[kind]++;
	return 0;
}

bool procfilter_empty(const struct procfilter *f)
{
	for (int k = 0; k < FILTER_KINDS; k++)
		if (f->n[k])
			return false;
	return true;
}

void procfilter_free(struct procfilter *f)
{
	for (int k = 0; k < FILTER_KINDS; k++)
		for (int i = 0; i < f->n[k]; i++)
			free(f->v[k][i]);
	memset(f, 0, sizeof(*f));
}

static bool one(enum filter_kind k, const char *v, const char *comm, const struct proc_place *pl)
{
	switch (k) {
	case FILTER_CONTAINER:
		return (pl->id[0] && !strncmp(pl->id, v, strlen(v))) ||
		       (pl->label[0] && !strcmp(pl->label, v));
	case FILTER_CGROUP:
		return pl->cgroup[0] && cgroup_under(pl->cgroup, v);
	case FILTER_COMM:
		/* the kernel keeps TASK_COMM_LEN - 1 characters of the name */
		return !strncmp(comm, v, TASK_COMM_LEN - 1);
	default:
		return false;
	}
}

bool procfilter_match(const struct procfilter *f, const char *comm, const struct proc_place *pl)
{
	for (int k = 0; k < FILTER_KINDS; k++) {
		bool any = !f->n[k];

		for (int i = 0; i < f->n[k] && !any; i++)
			any = one(k, f->v[k][i], comm, pl);
		if (!any)
			return false;
	}
	return true;
}

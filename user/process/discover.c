// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "process/discover.h"
#include "hash.h"
#include "process/procfs.h"

struct seen {
	pid_t pid; /* 0 = empty */
	unsigned long long start;
	unsigned int scan; /* last scan that found it alive */
};

struct discover {
	pid_t self;
	struct seen *tab;
	size_t cap, used;
	unsigned int scan;
};

struct discover *discover_new(pid_t self)
{
	struct discover *d = calloc(1, sizeof(*d));

	if (d)
		d->self = self;
	return d;
}

void discover_free(struct discover *d)
{
	if (d)
		free(d->tab);
	free(d);
}

static struct seen *slot(struct seen *tab, size_t cap, pid_t pid)
{
	size_t j = hash_u64(pid) & (cap - 1);

	while (tab[j].pid && tab[j].pid != pid)
		j = (j + 1) & (cap - 1);
	return &tab[j];
}

/* Rebuilds the table keeping the processes alive at the current scan. */
static int rehash(struct discover *d, size_t cap)
{
	struct seen *tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	d->used = 0;
	for (size_t i = 0; i < d->cap; i++) {
		if (!d->tab[i].pid || d->tab[i].scan != d->scan)
			continue;
		*slot(tab, cap, d->tab[i].pid) = d->tab[i];
		d->used++;
	}
	free(d->tab);
	d->tab = tab;
	d->cap = cap;
	return 0;
}

int discover_scan(struct discover *d, examine_fn examine, void *ctx)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	size_t alive = 0;

	if (!dir)
		return -errno;
	d->scan++;
	while ((de = readdir(dir))) {
		unsigned long long start;
		enum pyproc_status st;
		struct seen *s;
		pid_t pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = atoi(de->d_name);
		if (pid <= 0 || pid == d->self || proc_start_time(pid, &start))
			continue;
		alive++;
		if ((d->used + 1) * 2 > d->cap && rehash(d, d->cap ? d->cap * 2 : 1024)) {
			closedir(dir);
			return -ENOMEM;
		}
		s = slot(d->tab, d->cap, pid);
		if (s->pid == pid && s->start == start) {
			s->scan = d->scan;
			continue;
		}
		st = examine(ctx, pid);
		if (st == PYPROC_NOT_READY || st == PYPROC_GONE)
			continue;
		if (!s->pid)
			d->used++;
		*s = (struct seen){ .pid = pid, .start = start, .scan = d->scan };
	}
	closedir(dir);
	/* forget exited processes once they would make up most of the table */
	if (d->used > 2 * alive + 1024)
		return rehash(d, d->cap);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "hash.h"
#include "asyncio/tasksites.h"
#include "cpython/codever.h"

/* Direct-mapped: a site is asked for at each sample of its task while the task lives,
 * and is written once, at the task's creation, so a miss is a map lookup at worst. */
#define SITE_SLOTS 4096

struct slot {
	pid_t pid; /* 0: empty */
	bool found;
	uint64_t addr, serial;
	struct task_site site;
};

struct tasksites {
	int fd;
	struct codever *cv; /* proves the frames whose code objects were left unread */
	struct slot *slots;
	uint64_t absent, replaced; /* lookups that found no site, another task's */
};

struct tasksites *tasksites_new(void)
{
	struct tasksites *ts = calloc(1, sizeof(*ts));

	if (ts)
		ts->fd = -1;
	return ts;
}

void tasksites_free(struct tasksites *ts)
{
	if (!ts)
		return;
	free(ts->slots);
	free(ts);
}

/* Written whole at once: slots taken at random would grow the heap for hours. Not by
 * memset: the compiler turns malloc and memset into calloc, which touches nothing. */
static bool make_slots(struct tasksites *ts)
{
	if (!ts->slots && (ts->slots = malloc(SITE_SLOTS * sizeof(*ts->slots))))
		explicit_bzero(ts->slots, SITE_SLOTS * sizeof(*ts->slots));
	return ts->slots;
}

void tasksites_set_map(struct tasksites *ts, int fd)
{
	ts->fd = fd;
	/* made with the map, not at a first lookup minutes later: the recorder's memory
	 * is what it will be from its start */
	if (fd >= 0)
		make_slots(ts);
}

void tasksites_set_codever(struct tasksites *ts, struct codever *cv)
{
	ts->cv = cv;
}

/* Only a site with FP_VERSIONED frames reaches the prover: the probe leaves code objects
 * unread only where CPU samples confirmed the counter, and wall mode, whose joins run on
 * its ticker's thread, takes none. */
static void prove(struct tasksites *ts, pid_t pid, struct task_site *site)
{
	uint32_t n = site->nframes < SITE_FRAMES ? site->nframes : SITE_FRAMES, i = 0;

	while (i < n && site->frames[i].fp != FP_VERSIONED)
		i++;
	if (i == n)
		return;
	if (ts->cv) {
		codever_prove_site(ts->cv, pid, site);
		return;
	}
	for (; i < n; i++)
		if (site->frames[i].fp == FP_VERSIONED)
			site->frames[i].fp = FP_INVALID;
}

bool tasksites_get(struct tasksites *ts, pid_t pid, uint64_t addr, uint64_t serial,
		   struct task_site *out)
{
	struct site_key key = { .pid = pid, .task = addr, .serial = serial };
	struct slot *e;

	if (ts->fd < 0 || !serial || !make_slots(ts))
		return false;
	e = &ts->slots[hash_u64(addr ^ hash_u64(serial ^ (uint64_t)pid << 40)) & (SITE_SLOTS - 1)];
	if (e->pid != pid || e->addr != addr || e->serial != serial) {
		e->pid = pid;
		e->addr = addr;
		e->serial = serial;
		/* the entry may be of an earlier task at that address: its serial tells */
		if (bpf_map_lookup_elem(ts->fd, &key, &e->site)) {
			ts->absent++;
			e->found = false;
		} else {
			e->found = e->site.serial == serial && e->site.nframes > 0 &&
				   e->site.nframes <= SITE_FRAMES;
			ts->replaced += !e->found;
			/* once, before the site is first shown: the proof's check comes after
			 * the walk, as the backward proof needs (codever.c) */
			if (e->found)
				prove(ts, pid, &e->site);
		}
	}
	if (e->found)
		*out = e->site;
	return e->found;
}

void tasksites_misses(const struct tasksites *ts, uint64_t *absent, uint64_t *replaced)
{
	*absent = ts->absent;
	*replaced = ts->replaced;
}

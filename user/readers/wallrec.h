/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Wall-clock recording: a timer at the wall rate runs the wall sampler over every target
 * and adds each sample to the profile with the time it stands for. */
#ifndef ASYNCBPF_WALLREC_H
#define ASYNCBPF_WALLREC_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/joiner.h"
#include "readers/sampler.h"
#include "asyncio/tracker.h"

struct wallrec_opts {
	unsigned int freq;	/* ticks per second */
	unsigned int max_tasks; /* suspended tasks sampled per process per tick, 0: all */
	bool run_stats;
};

struct wallrec;

struct wallrec *wallrec_new(struct sampler *s, struct joiner *jn, struct tracker *tr,
			    const struct wallrec_opts *o, char *err, size_t errlen);
void wallrec_free(struct wallrec *wr);

/* Ticks run on a thread of their own, so that a slow task snapshot (seconds with
 * thousands of tasks) does not stop them. Between start and stop, whoever changes the
 * record's targets or reads the tracker for the ticks holds the lock. */
int wallrec_start(struct wallrec *wr);
void wallrec_stop(struct wallrec *wr);
void wallrec_lock(struct wallrec *wr);
void wallrec_unlock(struct wallrec *wr);

/* Under the lock. */
int wallrec_add(struct wallrec *wr, pid_t pid);
void wallrec_del(struct wallrec *wr, pid_t pid);
/* The suspended tasks of pid the ticks sample from now on: the tracker's leaves. */
void wallrec_set_tasks(struct wallrec *wr, pid_t pid);

void wallrec_print_stats(struct wallrec *wr, FILE *f);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Wall-clock recording: a timer at the wall rate runs the wall sampler over every target
 * and adds each sample to the profile with the time it stands for. */
#ifndef ASYNCBPF_WALLREC_H
#define ASYNCBPF_WALLREC_H

#include <stdbool.h>
#include <stdio.h>

#include "record.h"
#include "sampler.h"
#include "tracker.h"

struct wallrec_opts {
	unsigned int freq;	/* ticks per second */
	unsigned int max_tasks; /* suspended tasks sampled per process per tick, 0: all */
	bool run_stats;
};

struct wallrec;

struct wallrec *wallrec_new(struct sampler *s, struct record *rec, struct tracker *tr,
			    const struct wallrec_opts *o, char *err, size_t errlen);
void wallrec_free(struct wallrec *wr);

int wallrec_add(struct wallrec *wr, pid_t pid);
void wallrec_del(struct wallrec *wr, pid_t pid);

/* Waits for the next tick, at most max_ms, and takes it when it is due. 0 or -errno. */
int wallrec_wait(struct wallrec *wr, int max_ms);

void wallrec_print_stats(struct wallrec *wr, FILE *f, double elapsed);

#endif

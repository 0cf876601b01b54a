/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Wall mode's chains that end at a task walked earlier in the same run (TASK_MEMO, see
 * bpf/wallsample.h): joined here to that walk's chain from the task on. */
#ifndef ASYNCBPF_WALLJOIN_H
#define ASYNCBPF_WALLJOIN_H

#include "bpf/wallsample.h"

struct walljoin;

struct walljoin *walljoin_new(void);
void walljoin_free(struct walljoin *j);
/* Forgets the run's chains: a new run begins. */
void walljoin_reset(struct walljoin *j);
/* Takes note of the tasks of s (an emitted suspended-task chain of this run, kept where it
 * is until the reset) that a later chain may end at, as BPF did. */
int walljoin_add(struct walljoin *j, const struct py_sample *s);
/* s whole: s itself when its chain ends at no earlier walk, else s joined to that walk's
 * chain (valid until the next call). When that walk is not known (its record lost), s
 * cut before the task it ended at and marked SAMPLE_READ_ERR, with *missing set. */
const struct py_sample *walljoin_resolve(struct walljoin *j, const struct py_sample *s,
					 int *missing);

#endif

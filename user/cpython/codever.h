/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Frames whose code object the CPU sampler did not read (3.12+, FP_VERSIONED), proven
 * from the code object's co_version: see codever.c for the argument. */
#ifndef ASYNCBPF_CODEVER_H
#define ASYNCBPF_CODEVER_H

#include <stdint.h>
#include <sys/types.h>

#include "bpf/asyncbpf.h"

struct codever;

struct codever_stats {
	uint64_t proven;   /* frames given their code object's fingerprint */
	uint64_t unproven; /* frames left FP_INVALID (shown [unknown]): not provably theirs */
	uint64_t checks;   /* checks made (three reads of the target each) */
	uint64_t confirms; /* counter values confirmed to the sampler */
};

struct codever *codever_new(void);
void codever_free(struct codever *cv);

/* Proves pid's frames from now on, reading as p says (its code_counter 0: none). */
int codever_add(struct codever *cv, pid_t pid, const struct py_proc *p);
void codever_del(struct codever *cv, pid_t pid);

/* Replaces the fp of every FP_VERSIONED frame of s by its code object's fingerprint, or
 * by FP_INVALID where the object at the address now cannot be proven the walk's. A
 * record of a process not added is left as it is. */
void codever_prove(struct codever *cv, struct py_sample *s);

/* The same for the frames of a creation site (task_sites), which the creation probe
 * walks as the sampler does: FP_VERSIONED ones of a process not added become FP_INVALID. */
void codever_prove_site(struct codever *cv, pid_t pid, struct task_site *site);

/* After any sample of a process the sampler reads the counter of: when the walk saw the
 * counter at another value than the one confirmed, checks the sample's code objects (not
 * more often than every few milliseconds a process) and returns 1 with the counter's
 * value in *confirmed, for the sampler's map: walks that see it leave code objects unread. */
int codever_confirm(struct codever *cv, const struct py_sample *s, uint32_t *confirmed);

void codever_stats(const struct codever *cv, struct codever_stats *st);

#endif

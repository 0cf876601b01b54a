/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef ASYNCBPF_AUTOGROUPS_H
#define ASYNCBPF_AUTOGROUPS_H

#include <stddef.h>

/* Automatic task names (anyio's and Starlette's module.qualname; a process's Task-N by
 * a key of its own) and the qualname each was seen to end with, for the samples where
 * that function is in no frame of the task. */
struct autogroups;

/* nslots: a power of two; a name whose slot another takes is forgotten */
struct autogroups *autogroups_new(size_t nslots);
void autogroups_free(struct autogroups *g);

/* name was seen to be module.qualname of a frame's code */
void autogroups_learn(struct autogroups *g, const char *name, const char *qualname);

/* The qualname name was learned with; NULL if none, or if it ended two (ambiguous). */
const char *autogroups_find(const struct autogroups *g, const char *name);

/* Forgets the names that begin with prefix. */
void autogroups_forget_prefix(struct autogroups *g, const char *prefix);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef ASYNCBPF_AUTOGROUPS_H
#define ASYNCBPF_AUTOGROUPS_H

/* Automatic task names (anyio's and Starlette's module.qualname) and the qualname each was
 * seen to end with, for the samples where that function is in no frame of the task. */
struct autogroups;

struct autogroups *autogroups_new(void);
void autogroups_free(struct autogroups *g);

/* name was seen to be module.qualname of a frame's code */
void autogroups_learn(struct autogroups *g, const char *name, const char *qualname);

/* The qualname name was learned with; NULL if none, or if it ended two (ambiguous). */
const char *autogroups_find(const struct autogroups *g, const char *name);

#endif

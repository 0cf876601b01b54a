// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "profile/autogroups.h"

/* Direct-mapped: a slot lost to a collision is learned again at the name's next sample
 * whose frames show its function. */
struct slot {
	char *name, *qualname;
	bool ambiguous;
};

struct autogroups {
	size_t nslots; /* a power of two */
	struct slot s[];
};

static struct slot *slot_of(const struct autogroups *g, const char *name)
{
	return (struct slot *)&g->s[hash_bytes(name, strlen(name), 0) & (g->nslots - 1)];
}

/* Written whole at once: slots taken at random would grow the heap for as long as new
 * names come (a Task-N per process of a churning host). Not by memset: the compiler
 * turns malloc and memset into calloc, which touches nothing. */
struct autogroups *autogroups_new(size_t nslots)
{
	size_t size = sizeof(struct autogroups) + nslots * sizeof(struct slot);
	struct autogroups *g = malloc(size);

	if (g) {
		explicit_bzero(g, size);
		g->nslots = nslots;
	}
	return g;
}

static void slot_clear(struct slot *s)
{
	free(s->name);
	free(s->qualname);
	*s = (struct slot){ 0 };
}

void autogroups_free(struct autogroups *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nslots; i++)
		slot_clear(&g->s[i]);
	free(g);
}

void autogroups_learn(struct autogroups *g, const char *name, const char *qualname)
{
	struct slot *s = slot_of(g, name);

	if (s->name && !strcmp(s->name, name)) {
		/* "a.b.f" is module a.b's f or module a's b.f: never pick one of two */
		if (strcmp(s->qualname, qualname))
			s->ambiguous = true;
		return;
	}
	slot_clear(s);
	s->name = strdup(name);
	s->qualname = strdup(qualname);
	if (!s->name || !s->qualname)
		slot_clear(s);
}

const char *autogroups_find(const struct autogroups *g, const char *name)
{
	const struct slot *s = slot_of(g, name);

	return s->name && !s->ambiguous && !strcmp(s->name, name) ? s->qualname : NULL;
}

void autogroups_forget_prefix(struct autogroups *g, const char *prefix)
{
	size_t n = strlen(prefix);

	for (size_t i = 0; i < g->nslots; i++)
		if (g->s[i].name && !strncmp(g->s[i].name, prefix, n))
			slot_clear(&g->s[i]);
}

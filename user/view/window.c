// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ring of cuts and what it merges into; see window.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view/tables.h"
#include "view/window.h"

struct cut {
	struct profile *p;
	uint64_t duration_ns, lost;
};

/* Cuts in order, the oldest dropped when full. */
struct ring {
	struct cut *c;
	unsigned int first, n;
};

struct window {
	unsigned int slots;
	struct ring shown, queued; /* queued: cuts pushed while held */
	struct profile *all;	   /* every cut shown so far, merged */
	struct window_span all_span;
	struct profile *queued_all; /* every cut queued, merged */
	struct window_span queued_span;
	struct profile *merged; /* shown's cuts, NULL until asked for again */
	bool held;
};

static int ring_init(struct ring *r, unsigned int slots)
{
	r->c = calloc(slots, sizeof(*r->c));
	r->first = r->n = 0;
	return r->c ? 0 : -ENOMEM;
}

static void ring_fini(struct ring *r, unsigned int slots)
{
	for (unsigned int i = 0; r->c && i < r->n; i++)
		profile_free(r->c[(r->first + i) % slots].p);
	free(r->c);
}

static void ring_push(struct ring *r, unsigned int slots, const struct cut *c)
{
	if (r->n == slots) {
		profile_free(r->c[r->first].p);
		r->first = (r->first + 1) % slots;
		r->n--;
	}
	r->c[(r->first + r->n++) % slots] = *c;
}

struct window *window_new(unsigned int slots)
{
	struct window *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->slots = slots ? slots : 1;
	w->all = profile_new();
	w->queued_all = profile_new();
	if (!w->all || !w->queued_all || ring_init(&w->shown, w->slots) ||
	    ring_init(&w->queued, w->slots)) {
		window_free(w);
		return NULL;
	}
	return w;
}

void window_free(struct window *w)
{
	if (!w)
		return;
	ring_fini(&w->shown, w->slots);
	ring_fini(&w->queued, w->slots);
	profile_free(w->all);
	profile_free(w->queued_all);
	profile_free(w->merged);
	free(w);
}

static void span_add(struct window_span *s, const struct cut *c)
{
	s->duration_ns += c->duration_ns;
	s->lost += c->lost;
	s->cuts++;
}

int window_push(struct window *w, struct profile *cut, uint64_t duration_ns, uint64_t lost)
{
	struct cut c = { cut, duration_ns, lost };

	/* a failed merge may have added part of the cut: what is shown stays whole, what
	 * waits may be short of it */
	if (profile_merge(w->held ? w->queued_all : w->all, cut, NULL, NULL)) {
		profile_free(cut);
		return -ENOMEM;
	}
	if (w->held) {
		span_add(&w->queued_span, &c);
		ring_push(&w->queued, w->slots, &c);
		return 0;
	}
	span_add(&w->all_span, &c);
	ring_push(&w->shown, w->slots, &c);
	profile_free(w->merged);
	w->merged = NULL;
	return 0;
}

void window_hold(struct window *w, bool hold)
{
	struct profile *fresh;

	if (hold || !w->held) {
		w->held = hold;
		return;
	}
	w->held = false;
	fresh = profile_new();
	if (fresh && !profile_merge(w->all, w->queued_all, NULL, NULL)) {
		w->all_span.duration_ns += w->queued_span.duration_ns;
		w->all_span.lost += w->queued_span.lost;
		w->all_span.cuts += w->queued_span.cuts;
		profile_free(w->queued_all);
		w->queued_all = fresh;
	} else {
		profile_free(fresh);
	}
	memset(&w->queued_span, 0, sizeof(w->queued_span));
	for (unsigned int i = 0; i < w->queued.n; i++)
		ring_push(&w->shown, w->slots, &w->queued.c[(w->queued.first + i) % w->slots]);
	w->queued.first = w->queued.n = 0;
	profile_free(w->merged);
	w->merged = NULL;
}

bool window_held(const struct window *w)
{
	return w->held;
}

const struct profile *window_recent(struct window *w, struct window_span *span)
{
	memset(span, 0, sizeof(*span));
	if (!w->merged) {
		w->merged = profile_new();
		for (unsigned int i = 0; w->merged && i < w->shown.n; i++)
			if (profile_merge(w->merged, w->shown.c[(w->shown.first + i) % w->slots].p,
					  NULL, NULL)) {
				profile_free(w->merged);
				w->merged = NULL;
			}
	}
	for (unsigned int i = 0; i < w->shown.n; i++)
		span_add(span, &w->shown.c[(w->shown.first + i) % w->slots]);
	return w->merged;
}

const struct profile *window_all(struct window *w, struct window_span *span)
{
	*span = w->all_span;
	return w->all;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A sliding window over the cuts of a recording: the last few cuts merged, and all of
 * them since the start. While held (paused), new cuts wait, and what the window shows
 * stays as it was; released, they go in as if they had come in their time. */
#ifndef ASYNCBPF_WINDOW_H
#define ASYNCBPF_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile.h"

struct window;

/* A window over the last slots cuts (at least 1). NULL when out of memory. */
struct window *window_new(unsigned int slots);
void window_free(struct window *w);

/* Takes cut, which covers duration_ns and in which lost samples were lost; the oldest
 * cut leaves the window. 0, or -ENOMEM (the cut is freed, the window unchanged). */
int window_push(struct window *w, struct profile *cut, uint64_t duration_ns, uint64_t lost);

void window_hold(struct window *w, bool hold);
bool window_held(const struct window *w);

/* What the window covers, and since the start: a profile owned by the window, valid until
 * the next push or release; NULL when out of memory. */
struct window_span {
	uint64_t duration_ns, lost;
	unsigned int cuts;
};
const struct profile *window_recent(struct window *w, struct window_span *span);
const struct profile *window_all(struct window *w, struct window_span *span);

#endif

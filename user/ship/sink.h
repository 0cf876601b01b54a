/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What a sink does with one queued profile, as its sender thread (ship.c) sees it. */
#ifndef ASYNCBPF_SINK_H
#define ASYNCBPF_SINK_H

#include <stdatomic.h>

#include "ship/shipq.h"

enum deliver {
	DELIVER_OK,
	DELIVER_RETRY,	/* later, with backoff: unreachable, 429, 5xx, a write error */
	DELIVER_REJECT, /* never: another 4xx */
};

struct deliver_info {
	int kind;	/* what went wrong, so that each kind is said once: an HTTP status, an
			 * errno, or SINK_KIND_CURL + a curl error code */
	char what[320]; /* one line */
};

#define SINK_KIND_CURL 100000

struct sink_ops {
	const char *name; /* in messages and statistics */
	/* Delivers it; returns early with DELIVER_RETRY once *abort is set. */
	enum deliver (*deliver)(void *impl, const struct ship_item *it, atomic_bool *abort,
				struct deliver_info *di);
	void (*free)(void *impl);
};

#endif

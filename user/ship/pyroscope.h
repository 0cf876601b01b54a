/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Pyroscope's /ingest over HTTP(S) with libcurl: one POST per queued profile. */
#ifndef ASYNCBPF_PYROSCOPE_H
#define ASYNCBPF_PYROSCOPE_H

#include <stddef.h>

#include "ship/sink.h"

struct pyro_opts {
	const char *url; /* base: /ingest is appended */
	const char *tenant;
	const char *basic_auth_file, *bearer_token_file;
	double timeout; /* s per request */
	unsigned int freq;
};

extern const struct sink_ops pyro_ops;

/* Reads the credentials; NULL with a one-line reason in why. */
struct pyro *pyro_new(const struct pyro_opts *o, char *why, size_t whylen);
/* The credential file read again; on failure the old credentials stay (-1, why). */
int pyro_reload(struct pyro *p, char *why, size_t whylen);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shipping each interval's profile to its sinks without ever blocking the recording:
 * the caller hands over a cut (ship_submit encodes it at once), every sink has its own
 * bounded queue and sender thread — Pyroscope's /ingest over HTTP, one profile per
 * series, and a directory of rotating pprof files —, retries with backoff, and a flush
 * with a deadline at the end. Messages are one line on stderr, prefixed with prog. */
#ifndef ASYNCBPF_SHIP_H
#define ASYNCBPF_SHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"
#include "ship/series.h"

#define SHIP_DEFAULT_KEEP  240 /* files: an hour at the default interval */
#define SHIP_QUEUE_ITEMS   256
#define SHIP_QUEUE_BYTES   (64u << 20)
#define SHIP_SEND_TIMEOUT  10.0 /* s, one HTTP request */
#define SHIP_FLUSH_TIMEOUT 10.0 /* s after the last cut */

struct ship_opts {
	const char *prog;
	unsigned int freq;   /* samples per second: Pyroscope's sampleRate */
	double interval;     /* s between cuts: the backoff's cap is twice this (at most 5 min) */
	const char *url;     /* Pyroscope's base URL; NULL: no Pyroscope sink */
	const char *service; /* every series' service; NULL: the container's label, else the
			      * process name */
	const char *host;    /* NULL: gethostname() */
	const struct ship_label *labels; /* more series labels */
	int nlabels;
	const char *tenant;	       /* X-Scope-OrgID, NULL: none */
	const char *basic_auth_file;   /* "user:password" */
	const char *bearer_token_file; /* a token */
	double timeout;		       /* s per request */
	const char *dir;	       /* rotating files; NULL: none */
	unsigned int keep;	       /* files kept in dir */
	/* each sink's queue */
	size_t queue_items, queue_bytes;
	double queue_age; /* s: a profile that began longer ago is dropped */
	/* limits of one profile sent to Pyroscope (0: the SHIP_MAX_ ones) */
	size_t max_samples, max_bytes;
};

/* What a cut covers (see recorder_cut). */
struct ship_interval {
	uint64_t start_ns; /* CLOCK_REALTIME */
	uint64_t duration_ns;
	uint64_t lost;
};

struct ship;

/* Reads the credentials, checks the directory, starts one sender thread per sink.
 * 0, or -1 when a file cannot be read or the directory is unsafe (said on stderr). */
int ship_new(struct ship **out, const struct ship_opts *o);

/* Encodes prof for every sink (Pyroscope: split into one profile per series, each
 * within the limits) and queues it; never waits for a sink. prof stays the caller's. */
void ship_submit(struct ship *s, struct profile *prof, const struct ship_interval *iv);

/* The credential files read again (SIGHUP); the old ones stay if they cannot be. */
void ship_reload(struct ship *s);

/* Waits until every queue is empty or seconds have passed, then stops the senders (a
 * request still running is aborted); what is left counts as dropped at exit. */
void ship_flush(struct ship *s, double seconds);

/* Figures of the recording the stats line shows besides the sinks'. */
struct ship_run {
	uint64_t intervals, samples, lost;
	size_t processes;
};

/* One line on f: the recording's figures, each sink's counters, the process's CPU
 * since the previous line and its RSS. */
void ship_print_stats(struct ship *s, FILE *f, const struct ship_run *run, bool final);

void ship_free(struct ship *s);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A cut profile split into Pyroscope series — one per service and container —, each
 * series into as few profiles as its limits allow (samples: distinct stacks; bytes:
 * the uncompressed message), and the series' name parameter, `APP{k=v,...}`. */
#ifndef ASYNCBPF_SERIES_H
#define ASYNCBPF_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/writers.h"

/* Pyroscope's limits on one profile (validation/limits.go): above them it is rejected */
#define SHIP_MAX_SAMPLES 16000
#define SHIP_MAX_BYTES	 (4u << 20) /* uncompressed */
#define SHIP_MAX_LABELS	 30	    /* series label names, service_name included */
#define SHIP_MAX_AGE	 3600.0	    /* s: older profiles are rejected */

/* A series label beyond the service, host and container ones: key=value. */
struct ship_label {
	const char *key, *value;
};

struct series_opts {
	const char *service; /* NULL: the container's label, else the process name */
	const char *host;
	const struct ship_label *labels;
	int nlabels;
	size_t max_samples, max_bytes;
};

/* One profile of a series, within the limits. */
struct series_part {
	const char *name;   /* APP{service_name=APP,host=...,container_id=...,k=v} */
	const uint8_t *raw; /* the pprof message, not compressed */
	size_t len;
	uint64_t samples; /* counts */
	size_t stacks;	  /* pprof samples */
};

struct series_result {
	size_t series, parts;
	uint64_t dropped; /* samples of stacks that alone exceed max_bytes */
};

/* Calls emit once per part, series by series (emit's non-zero return is passed on);
 * meta applies to every part (its per-sample labels are left out). 0, -ENOMEM or
 * emit's return. */
int series_split(struct profile *prof, const struct series_opts *o, const struct writer_meta *meta,
		 int (*emit)(void *ctx, const struct series_part *p), void *ctx,
		 struct series_result *res);

/* Is s a valid service name as it is? */
bool series_service_ok(const char *s);
/* s made a valid service name (letters, digits, '_', '.', '-', '/'; others become '_'). */
void series_service_name(char *out, size_t len, const char *s);
/* s made a valid label value: no ',', '{', '}' or control characters (they become '_'),
 * no spaces at the ends. */
void series_label_value(char *out, size_t len, const char *s);
/* Why Pyroscope would refuse --label key=value, or asyncbpf sets that label itself;
 * NULL when it is fine. */
const char *series_check_label(const char *key, const char *value);

#endif

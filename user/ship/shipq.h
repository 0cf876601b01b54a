/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A sink's queue of encoded profiles, oldest first, bounded by items, bytes and age:
 * over a bound the oldest go (counted), except the one being sent, which its sender
 * marked busy. The caller holds lock around every shipq_*_locked call. */
#ifndef ASYNCBPF_SHIPQ_H
#define ASYNCBPF_SHIPQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ship_item {
	struct ship_item *next;
	uint8_t *data; /* gzip-compressed pprof */
	size_t len;
	char *name;		    /* Pyroscope: the name parameter; files: the file name */
	uint64_t from_ns, until_ns; /* CLOCK_REALTIME */
	uint64_t samples;
	bool busy; /* being delivered: not dropped */
};

struct shipq {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* an item came, or the sender is asked to flush or stop;
			      * CLOCK_MONOTONIC */
	struct ship_item *head, *tail;
	size_t n, bytes;
	size_t max_n, max_bytes;
	uint64_t max_age_ns;
	/* counters */
	uint64_t pushed, dropped_full, dropped_old, dropped_exit;
	size_t peak_n, peak_bytes;
};

/* The item's data and name are taken over (freed with it). */
struct ship_item *ship_item_new(uint8_t *data, size_t len, char *name, uint64_t from_ns,
				uint64_t until_ns, uint64_t samples);
void ship_item_free(struct ship_item *it);

void shipq_init(struct shipq *q, size_t max_n, size_t max_bytes, double max_age);
/* Items still queued are counted as dropped at exit and freed. */
void shipq_destroy(struct shipq *q);

/* Appends it, then drops the oldest items that are not busy while a bound is exceeded
 * (it itself last); items too old go first. Signals cond. */
void shipq_push_locked(struct shipq *q, struct ship_item *it, uint64_t now_ns);
/* Drops the items that began more than max_age ago (not a busy one). */
void shipq_expire_locked(struct shipq *q, uint64_t now_ns);
/* Unlinks and frees it (delivered or given up). */
void shipq_remove_locked(struct shipq *q, struct ship_item *it);

#endif

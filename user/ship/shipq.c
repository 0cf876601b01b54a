// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A sink's bounded queue; see shipq.h. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ship/shipq.h"

struct ship_item *ship_item_new(uint8_t *data, size_t len, char *name, uint64_t from_ns,
				uint64_t until_ns, uint64_t samples)
{
	struct ship_item *it = calloc(1, sizeof(*it));

	if (!it) {
		free(data);
		free(name);
		return NULL;
	}
	*it = (struct ship_item){ .data = data,
				  .len = len,
				  .name = name,
				  .from_ns = from_ns,
				  .until_ns = until_ns,
				  .samples = samples };
	return it;
}

void ship_item_free(struct ship_item *it)
{
	if (!it)
		return;
	free(it->data);
	free(it->name);
	free(it);
}

void shipq_init(struct shipq *q, size_t max_n, size_t max_bytes, double max_age)
{
	pthread_condattr_t ca;

	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
	/* senders wait for their backoff on the monotonic clock */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &ca);
	pthread_condattr_destroy(&ca);
	q->max_n = max_n;
	q->max_bytes = max_bytes;
	q->max_age_ns = (uint64_t)(max_age * 1e9);
}

static void unlink_item(struct shipq *q, struct ship_item *it)
{
	struct ship_item **pp, *prev = NULL;

	for (pp = &q->head; *pp && *pp != it; pp = &(*pp)->next)
		prev = *pp;
	if (!*pp)
		return;
	*pp = it->next;
	if (q->tail == it)
		q->tail = prev;
	q->n--;
	q->bytes -= it->len;
}

void shipq_remove_locked(struct shipq *q, struct ship_item *it)
{
	unlink_item(q, it);
	ship_item_free(it);
}

void shipq_expire_locked(struct shipq *q, uint64_t now_ns)
{
	struct ship_item *it, *next;

	for (it = q->head; it; it = next) {
		next = it->next;
		if (!it->busy && it->from_ns + q->max_age_ns < now_ns) {
			shipq_remove_locked(q, it);
			q->dropped_old++;
		}
	}
}

static bool over(const struct shipq *q)
{
	return q->n > q->max_n || q->bytes > q->max_bytes;
}

void shipq_push_locked(struct shipq *q, struct ship_item *it, uint64_t now_ns)
{
	struct ship_item *victim, *next;

	it->next = NULL;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	q->n++;
	q->bytes += it->len;
	q->pushed++;
	shipq_expire_locked(q, now_ns);
	for (victim = q->head; victim && over(q); victim = next) {
		next = victim->next;
		if (victim->busy)
			continue;
		shipq_remove_locked(q, victim);
		q->dropped_full++;
	}
	if (q->n > q->peak_n)
		q->peak_n = q->n;
	if (q->bytes > q->peak_bytes)
		q->peak_bytes = q->bytes;
	pthread_cond_broadcast(&q->cond);
}

void shipq_destroy(struct shipq *q)
{
	while (q->head) {
		q->dropped_exit++;
		shipq_remove_locked(q, q->head);
	}
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
}

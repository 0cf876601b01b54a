// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "readers/walltasks.h"

struct slot {
	uint64_t task; /* 0: empty */
	size_t at;     /* in v */
};

struct ended {
	uint64_t task, serial, ns;
};

struct idpair {
	uint64_t task, serial;
};

struct walltasks {
	struct wall_task *v; /* the list, indexed by task address in slots */
	size_t n, cap, fresh;
	struct slot *slots;
	size_t nslots;
	struct ended *ended; /* frees in the order seen, from `first` on */
	size_t first, nended, capended;
	/* the snapshot being added */
	struct wall_task *leaves;
	size_t nleaves, capleaves;
	struct idpair *all;
	size_t nall, capall;
};

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 256;
	void *b;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	b = realloc(*p, c * size);
	if (!b)
		return -ENOMEM;
	*p = b;
	*cap = c;
	return 0;
}

static size_t find_slot(const struct walltasks *wt, uint64_t task)
{
	size_t m = wt->nslots - 1, j = hash_u64(task) & m;

	while (wt->slots[j].task && wt->slots[j].task != task)
		j = (j + 1) & m;
	return j;
}

/* Rebuilds the index, with room for `room` tasks. */
static int reindex(struct walltasks *wt, size_t room)
{
	size_t want = 1024;

	while (want < room * 2 + 2)
		want *= 2;
	if (want != wt->nslots) {
		struct slot *s = calloc(want, sizeof(*s));

		if (!s)
			return -ENOMEM;
		free(wt->slots);
		wt->slots = s;
		wt->nslots = want;
	} else {
		memset(wt->slots, 0, wt->nslots * sizeof(*wt->slots));
	}
	wt->fresh = 0;
	for (size_t i = 0; i < wt->n; i++) {
		size_t j = find_slot(wt, wt->v[i].task);

		wt->slots[j] = (struct slot){ .task = wt->v[i].task, .at = i };
		wt->fresh += !!(wt->v[i].flags & WALL_TASK_NEW);
	}
	return 0;
}

/* Linear probing's deletion: the entries after the hole that hashed at or before it
 * move back into it, so lookups never stop early. */
static void unslot(struct walltasks *wt, size_t j)
{
	size_t m = wt->nslots - 1, k = j;

	for (;;) {
		size_t home;

		k = (k + 1) & m;
		if (!wt->slots[k].task)
			break;
		home = hash_u64(wt->slots[k].task) & m;
		if (((k - home) & m) >= ((k - j) & m)) {
			wt->slots[j] = wt->slots[k];
			j = k;
		}
	}
	wt->slots[j].task = 0;
}

struct walltasks *walltasks_new(void)
{
	struct walltasks *wt = calloc(1, sizeof(*wt));

	if (wt && reindex(wt, 0)) {
		free(wt);
		return NULL;
	}
	return wt;
}

void walltasks_free(struct walltasks *wt)
{
	if (!wt)
		return;
	free(wt->v);
	free(wt->slots);
	free(wt->ended);
	free(wt->leaves);
	free(wt->all);
	free(wt);
}

int walltasks_born(struct walltasks *wt, uint64_t task, uint64_t coro, uint64_t serial)
{
	struct wall_task t = {
		.task = task, .coro = coro, .serial = serial, .flags = WALL_TASK_NEW
	};
	size_t j;

	if (grow((void **)&wt->v, &wt->cap, wt->n + 1, sizeof(*wt->v)) ||
	    ((wt->n + 1) * 2 + 2 > wt->nslots && reindex(wt, wt->cap)))
		return -ENOMEM;
	j = find_slot(wt, task);
	if (wt->slots[j].task) {
		/* the address's earlier task was freed unseen (a lost event): this one is it */
		struct wall_task *old = &wt->v[wt->slots[j].at];

		wt->fresh += !(old->flags & WALL_TASK_NEW);
		*old = t;
		return 0;
	}
	wt->slots[j] = (struct slot){ .task = task, .at = wt->n };
	wt->v[wt->n++] = t;
	wt->fresh++;
	return 0;
}

int walltasks_freed(struct walltasks *wt, uint64_t task, uint64_t serial, uint64_t ns)
{
	size_t j = find_slot(wt, task), at;

	if (wt->slots[j].task) {
		at = wt->slots[j].at;
		if (!serial || !wt->v[at].serial || wt->v[at].serial == serial) {
			wt->fresh -= !!(wt->v[at].flags & WALL_TASK_NEW);
			unslot(wt, j);
			if (at != --wt->n) {
				wt->v[at] = wt->v[wt->n];
				wt->slots[find_slot(wt, wt->v[at].task)].at = at;
			}
		}
	}
	if (grow((void **)&wt->ended, &wt->capended, wt->nended + 1, sizeof(*wt->ended)))
		return -ENOMEM;
	wt->ended[wt->nended++] = (struct ended){ .task = task, .serial = serial, .ns = ns };
	return 0;
}

void walltasks_snapshot_begin(struct walltasks *wt)
{
	wt->nleaves = 0;
	wt->nall = 0;
}

void walltasks_snapshot_task(struct walltasks *wt, uint64_t task, uint64_t coro, uint64_t serial,
			     int leaf)
{
	if (!grow((void **)&wt->all, &wt->capall, wt->nall + 1, sizeof(*wt->all)))
		wt->all[wt->nall++] = (struct idpair){ .task = task, .serial = serial };
	if (leaf &&
	    !grow((void **)&wt->leaves, &wt->capleaves, wt->nleaves + 1, sizeof(*wt->leaves)))
		wt->leaves[wt->nleaves++] =
			(struct wall_task){ .task = task, .coro = coro, .serial = serial };
}

static int by_task(const void *a, const void *b)
{
	const struct idpair *x = a, *y = b;

	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	return 0;
}

static int in(const struct idpair *v, size_t n, uint64_t task, uint64_t serial, int any_serial)
{
	struct idpair key = { .task = task };
	const struct idpair *p = n ? bsearch(&key, v, n, sizeof(*v), by_task) : NULL;

	if (!p)
		return 0;
	/* bsearch lands on any of the equal addresses: look at all of them */
	while (p > v && p[-1].task == task)
		p--;
	for (; p < v + n && p->task == task; p++)
		if (p->serial == serial || (any_serial && (!p->serial || !serial)))
			return 1;
	return 0;
}

int walltasks_snapshot_end(struct walltasks *wt, uint64_t read_ns)
{
	struct idpair *gone = NULL;
	size_t ngone = 0, cap = 0, kept = 0;

	/* the frees seen since the snapshot began: it may list those tasks */
	for (size_t i = wt->first; i < wt->nended; i++) {
		if (wt->ended[i].ns < read_ns)
			continue;
		if (grow((void **)&gone, &cap, ngone + 1, sizeof(*gone))) {
			free(gone);
			return -ENOMEM;
		}
		gone[ngone++] =
			(struct idpair){ .task = wt->ended[i].task, .serial = wt->ended[i].serial };
	}
	if (ngone)
		qsort(gone, ngone, sizeof(*gone), by_task);
	if (wt->nall)
		qsort(wt->all, wt->nall, sizeof(*wt->all), by_task);
	for (size_t i = 0; i < wt->nleaves; i++)
		if (!in(gone, ngone, wt->leaves[i].task, wt->leaves[i].serial, 1))
			wt->leaves[kept++] = wt->leaves[i];
	wt->nleaves = kept;
	/* new tasks the snapshot did not see (created after it read the task list, or missed
	 * while they changed) stay; the ones it saw are as it says, leaf or not */
	for (size_t i = 0; i < wt->n; i++) {
		const struct wall_task *t = &wt->v[i];

		if (!(t->flags & WALL_TASK_NEW) || in(wt->all, wt->nall, t->task, t->serial, 0) ||
		    grow((void **)&wt->leaves, &wt->capleaves, wt->nleaves + 1,
			 sizeof(*wt->leaves)))
			continue;
		wt->leaves[wt->nleaves++] = *t;
	}
	free(gone);
	/* swap: the old list's buffer takes the next snapshot */
	{
		struct wall_task *v = wt->v;
		size_t c = wt->cap;

		wt->v = wt->leaves;
		wt->cap = wt->capleaves;
		wt->n = wt->nleaves;
		wt->leaves = v;
		wt->capleaves = c;
		wt->nleaves = 0;
	}
	walltasks_expire(wt, read_ns);
	return reindex(wt, wt->n);
}

void walltasks_expire(struct walltasks *wt, uint64_t ns)
{
	while (wt->first < wt->nended && wt->ended[wt->first].ns < ns)
		wt->first++;
	if (wt->first && wt->first * 2 >= wt->nended) {
		memmove(wt->ended, wt->ended + wt->first,
			(wt->nended - wt->first) * sizeof(*wt->ended));
		wt->nended -= wt->first;
		wt->first = 0;
	}
}

const struct wall_task *walltasks_list(const struct walltasks *wt, size_t *n, size_t *fresh)
{
	*n = wt->n;
	if (fresh)
		*fresh = wt->fresh;
	return wt->v;
}

/* Whether index i is in the set; else adds it. */
static int picked(uint32_t *set, size_t mask, size_t i)
{
	size_t h = hash_u64(i) & mask;

	for (; set[h]; h = (h + 1) & mask)
		if (set[h] == i + 1)
			return 1;
	set[h] = (uint32_t)(i + 1);
	return 0;
}

void walltasks_sample(const struct wall_task *list, size_t n, size_t k, struct wall_task *out,
		      uint32_t *set, uint64_t (*rnd)(void *), void *ctx)
{
	size_t mask = 1;

	if (k >= n) {
		/* list is NULL before the first task */
		if (n)
			memcpy(out, list, n * sizeof(*list));
		return;
	}
	/* the largest power of two in WALLTASKS_PICK_SLOTS(k): above k, so a probe always
	 * ends at a free slot */
	while (mask * 2 <= WALLTASKS_PICK_SLOTS(k))
		mask *= 2;
	memset(set, 0, mask * sizeof(*set));
	mask--;
	for (size_t j = n - k, i = 0; j < n; j++, i++) {
		size_t t = rnd(ctx) % (j + 1);

		if (picked(set, mask, t)) {
			picked(set, mask, j);
			t = j;
		}
		out[i] = list[t];
	}
}

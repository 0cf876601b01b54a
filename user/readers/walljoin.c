// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "readers/walljoin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

struct src {
	__u64 task, serial;
	const struct py_sample *s; /* NULL: empty slot */
	__u32 at;		   /* the task's index in s */
};

struct walljoin {
	struct src *slot;
	size_t cap, used; /* cap a power of two, at most half used */
	struct py_sample out;
};

struct walljoin *walljoin_new(void)
{
	return calloc(1, sizeof(struct walljoin));
}

void walljoin_free(struct walljoin *j)
{
	if (!j)
		return;
	free(j->slot);
	free(j);
}

void walljoin_reset(struct walljoin *j)
{
	if (j->used)
		memset(j->slot, 0, j->cap * sizeof(*j->slot));
	j->used = 0;
}

static size_t slot_of(const struct walljoin *j, __u64 task, __u64 serial)
{
	size_t i = (size_t)hash_u64(task ^ serial * 0x9E3779B97F4A7C15ULL) & (j->cap - 1);

	while (j->slot[i].s && (j->slot[i].task != task || j->slot[i].serial != serial))
		i = (i + 1) & (j->cap - 1);
	return i;
}

static int grow(struct walljoin *j)
{
	size_t cap = j->cap ? j->cap * 2 : 256;
	struct src *old = j->slot, *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	j->slot = n;
	j->cap = cap;
	for (size_t i = 0; old && i < cap / 2; i++)
		if (old[i].s)
			j->slot[slot_of(j, old[i].task, old[i].serial)] = old[i];
	free(old);
	return 0;
}

int walljoin_add(struct walljoin *j, const struct py_sample *s)
{
	if (s->hdr.flags & SAMPLE_READ_ERR)
		return 0;
	for (__u32 i = 0; i < s->hdr.ntasks; i++)
		if (s->tasks[i].flags & WALL_MEMO_BLOCK)
			return 0;
	for (__u32 i = 1; i < s->hdr.ntasks; i++) {
		const struct task_rec *t = &s->tasks[i];
		size_t k;

		if (t->flags & WALL_MEMO_SKIP)
			continue;
		if (2 * (j->used + 1) > j->cap && grow(j))
			return -ENOMEM;
		k = slot_of(j, t->addr, t->serial);
		if (j->slot[k].s)
			continue; /* the run's first walk of it is as good as any */
		j->slot[k] = (struct src){ .task = t->addr, .serial = t->serial, .s = s, .at = i };
		j->used++;
	}
	return 0;
}

static const struct src *find(const struct walljoin *j, const struct task_rec *t)
{
	size_t k;

	if (!j->cap)
		return NULL;
	k = slot_of(j, t->addr, t->serial);
	return j->slot[k].s ? &j->slot[k] : NULL;
}

/* Appends from's tasks [at, end) and their frames to the joined sample; 0, 1 when the
 * chain ends here (a task met again, or no room for more tasks), -1 when from's frame
 * indices do not hold (nothing appended). */
static int append(struct py_sample *o, const struct py_sample *from, __u32 at, __u32 end)
{
	__u32 nf = o->hdr.nframes + o->hdr.ncoro, sf = from->tasks[at].first;
	__u32 send = end < from->hdr.ntasks ? from->tasks[end].first
					    : from->hdr.nframes + from->hdr.ncoro;
	__u32 room = MAX_FRAMES + MAX_CORO_FRAMES - nf, n;
	int stop = 0;

	/* the header's counts are checked as the record arrives, a task's indices are not */
	if (sf > send || send > from->hdr.nframes + from->hdr.ncoro)
		return -1;
	for (__u32 i = at; i < end; i++)
		if (from->tasks[i].first < sf ||
		    from->tasks[i].first + from->tasks[i].nframes > send)
			return -1;
	for (__u32 i = at; i < end && !stop; i++) {
		struct task_rec *t;

		for (__u32 k = 0; k < o->hdr.ntasks; k++)
			if (o->tasks[k].addr == from->tasks[i].addr) {
				/* met again: as BPF's walk, the chain ends at the task before */
				o->tasks[o->hdr.ntasks - 1].flags |= TASK_CYCLE;
				stop = 1;
			}
		if (stop)
			break;
		if (o->hdr.ntasks == MAX_TASKS) {
			o->tasks[MAX_TASKS - 1].flags |= TASK_MORE;
			stop = 1;
			break;
		}
		t = &o->tasks[o->hdr.ntasks++];
		*t = from->tasks[i];
		t->first = (__u16)(t->first - sf + nf);
		if (t->first + t->nframes > nf + room) {
			t->nframes = t->first < nf + room ? (__u16)(nf + room - t->first) : 0;
			t->flags |= TASK_TRUNCATED;
		}
	}
	n = send > sf ? send - sf : 0;
	if (n > room)
		n = room;
	memcpy(o->frames + nf, from->frames + sf, n * sizeof(o->frames[0]));
	o->hdr.ncoro += n;
	return stop;
}

const struct py_sample *walljoin_resolve(struct walljoin *j, const struct py_sample *s,
					 int *missing)
{
	__u32 m = s->hdr.ntasks ? s->hdr.ntasks - 1u : 0;
	struct py_sample *o = &j->out;
	const struct py_sample *cur = s;

	*missing = 0;
	if (!s->hdr.ntasks || !(s->tasks[m].flags & TASK_MEMO))
		return s;
	o->hdr = s->hdr;
	o->hdr.ntasks = 0;
	o->hdr.ncoro = 0;
	memcpy(o->frames, s->frames, s->hdr.nframes * sizeof(o->frames[0]));
	if (m && append(o, s, 0, m) < 0) {
		*missing = 1;
		o->hdr.flags |= SAMPLE_READ_ERR;
		return o;
	}
	/* a walk joined may end at an earlier one in turn: each is earlier in the run than
	 * the last, and each step adds a task, so this ends */
	for (int step = 0; step < MAX_TASKS; step++) {
		const struct src *src = find(j, &cur->tasks[m]);
		__u32 end;
		int ret;

		if (!src) {
			*missing = 1;
			o->hdr.flags |= SAMPLE_READ_ERR;
			break;
		}
		cur = src->s;
		for (end = src->at; end < cur->hdr.ntasks && !(cur->tasks[end].flags & TASK_MEMO);
		     end++)
			;
		ret = append(o, cur, src->at, end);
		if (ret < 0) {
			*missing = 1;
			o->hdr.flags |= SAMPLE_READ_ERR;
		}
		if (ret || end == cur->hdr.ntasks)
			break;
		m = end;
	}
	return o;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "profile/profile.h"

struct stack_slot {
	uint64_t hash;
	size_t idx; /* into stacks, +1; 0 = empty */
};

struct profile {
	struct frame_sym *frames;
	uint64_t *frame_hash;
	size_t nframes, frames_cap;
	uint32_t *frame_slots; /* id + 1; 0 = empty */
	size_t frame_slots_cap;

	struct stack_ent *stacks;
	size_t nstacks, stacks_cap;
	struct stack_slot *stack_slots;
	size_t stack_slots_cap;
	uint64_t total;
	uint64_t lost;
	uint64_t period_ns;
	uint64_t wall_ns, cpu_ns;
	size_t bytes; /* heap chunks of frame names and stack ids; tables count by capacity */
	int sorted, weighted;
};

struct profile *profile_new(void)
{
	return calloc(1, sizeof(struct profile));
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nframes; i++) {
		free((char *)p->frames[i].name);
		free((char *)p->frames[i].file);
	}
	for (size_t i = 0; i < p->nstacks; i++)
		free((uint32_t *)p->stacks[i].ids);
	free(p->frames);
	free(p->frame_hash);
	free(p->frame_slots);
	free(p->stacks);
	free(p->stack_slots);
	free(p);
}

/* What an allocation holds of the heap: its usable size and the allocator's header (a
 * 10-character name takes 32 bytes), so that the profile's size is its memory. */
static size_t chunk_bytes(const void *ptr)
{
	return ptr ? malloc_usable_size((void *)ptr) + sizeof(size_t) : 0;
}

static uint64_t frame_hash(enum frame_kind kind, const char *name, const char *file, int line,
			   int ns_pid)
{
	uint64_t h = hash_bytes(name, strlen(name),
				(uint64_t)kind << 32 ^ (uint32_t)line ^ (uint64_t)ns_pid << 40);

	return file ? hash_bytes(file, strlen(file), h) : h;
}

static int frame_eq(const struct frame_sym *s, enum frame_kind kind, const char *name,
		    const char *file, int line, int ns_pid)
{
	if (s->kind != kind || s->line != line || s->ns_pid != ns_pid || strcmp(s->name, name))
		return 0;
	if (!s->file || !file)
		return s->file == file;
	return !strcmp(s->file, file);
}

static int frame_slots_grow(struct profile *p)
{
	size_t cap = p->frame_slots_cap ? p->frame_slots_cap * 2 : 1024;
	uint32_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < p->nframes; i++) {
		size_t j = p->frame_hash[i] & (cap - 1);

		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = i + 1;
	}
	free(p->frame_slots);
	p->frame_slots = slots;
	p->frame_slots_cap = cap;
	return 0;
}

/* The id of a frame (h its frame_hash), else UINT32_MAX and in *slot where it would go. */
static uint32_t find_frame(const struct profile *p, uint64_t h, enum frame_kind kind,
			   const char *name, const char *file, int line, int ns_pid, size_t *slot)
{
	size_t j;

	if (!p->frame_slots_cap)
		return UINT32_MAX;
	for (j = h & (p->frame_slots_cap - 1); p->frame_slots[j];
	     j = (j + 1) & (p->frame_slots_cap - 1)) {
		uint32_t id = p->frame_slots[j] - 1;

		if (p->frame_hash[id] == h &&
		    frame_eq(&p->frames[id], kind, name, file, line, ns_pid))
			return id;
	}
	*slot = j;
	return UINT32_MAX;
}

static uint32_t intern(struct profile *p, enum frame_kind kind, const char *name, const char *file,
		       int line, int ns_pid)
{
	uint64_t h = frame_hash(kind, name, file, line, ns_pid);
	struct frame_sym *s;
	uint32_t id;
	size_t j;

	if ((p->nframes + 1) * 2 > p->frame_slots_cap && frame_slots_grow(p))
		return UINT32_MAX;
	id = find_frame(p, h, kind, name, file, line, ns_pid, &j);
	if (id != UINT32_MAX)
		return id;
	if (p->nframes == p->frames_cap) {
		size_t cap = p->frames_cap ? p->frames_cap * 2 : 256;
		struct frame_sym *f = realloc(p->frames, cap * sizeof(*f));
		uint64_t *fh;

		if (!f)
			return UINT32_MAX;
		p->frames = f;
		fh = realloc(p->frame_hash, cap * sizeof(*fh));
		if (!fh)
			return UINT32_MAX;
		p->frame_hash = fh;
		p->frames_cap = cap;
	}
	s = &p->frames[p->nframes];
	s->kind = kind;
	s->line = line;
	s->start_line = 0;
	s->ns_pid = ns_pid;
	s->name = strdup(name);
	s->file = file ? strdup(file) : NULL;
	if (!s->name || (file && !s->file)) {
		free((char *)s->name);
		free((char *)s->file);
		return UINT32_MAX;
	}
	p->frame_hash[p->nframes] = h;
	p->frame_slots[j] = p->nframes + 1;
	p->bytes += chunk_bytes(s->name) + chunk_bytes(s->file);
	return p->nframes++;
}

uint32_t profile_frame(struct profile *p, enum frame_kind kind, const char *name, const char *file,
		       int line)
{
	return intern(p, kind, name, file, line, 0);
}

uint32_t profile_process_frame(struct profile *p, const char *comm, int pid, int ns_pid,
			       const char *container)
{
	return intern(p, FRAME_PROCESS, comm, container && *container ? container : NULL, pid,
		      ns_pid == pid ? 0 : ns_pid);
}

const char *profile_stack_container(const struct profile *p, const struct stack_ent *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		const struct frame_sym *f = profile_frame_sym(p, s->ids[i]);

		if (f && f->kind == FRAME_PROCESS)
			return f->file;
	}
	return NULL;
}

const struct frame_sym *profile_frame_sym(const struct profile *p, uint32_t id)
{
	return id < p->nframes ? &p->frames[id] : NULL;
}

size_t profile_nframes(const struct profile *p)
{
	return p->nframes;
}

void profile_set_start_line(struct profile *p, uint32_t id, int start_line)
{
	if (id < p->nframes)
		p->frames[id].start_line = start_line;
}

void profile_set_period(struct profile *p, uint64_t ns)
{
	p->period_ns = ns;
}

uint64_t profile_period(const struct profile *p)
{
	return p->period_ns;
}

static int stack_slots_grow(struct profile *p)
{
	size_t cap = p->stack_slots_cap ? p->stack_slots_cap * 2 : 1024;
	struct stack_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < p->stack_slots_cap; i++) {
		size_t j;

		if (!p->stack_slots[i].idx)
			continue;
		j = p->stack_slots[i].hash & (cap - 1);
		while (slots[j].idx)
			j = (j + 1) & (cap - 1);
		slots[j] = p->stack_slots[i];
	}
	free(p->stack_slots);
	p->stack_slots = slots;
	p->stack_slots_cap = cap;
	return 0;
}

size_t profile_stack_bytes(uint32_t n)
{
	/* the ids, the entry, and its share of the slot table (kept at most half full) */
	return n * sizeof(uint32_t) + 1 + sizeof(struct stack_ent) + 2 * sizeof(struct stack_slot);
}

static int add(struct profile *p, const uint32_t *ids, uint32_t n, uint64_t count, uint64_t wall_ns,
	       uint64_t cpu_ns, size_t *budget);

int profile_add(struct profile *p, const uint32_t *ids, uint32_t n, uint64_t count)
{
	return add(p, ids, n, count, 0, 0, NULL);
}

int profile_add_capped(struct profile *p, const uint32_t *ids, uint32_t n, uint64_t count,
		       size_t *budget)
{
	return add(p, ids, n, count, 0, 0, budget);
}

int profile_weighted(const struct profile *p)
{
	return p->weighted;
}

void profile_total_ns(const struct profile *p, uint64_t *wall_ns, uint64_t *cpu_ns)
{
	*wall_ns = p->wall_ns;
	*cpu_ns = p->cpu_ns;
}

int profile_add_ns(struct profile *p, const uint32_t *ids, uint32_t n, uint64_t count,
		   uint64_t wall_ns, uint64_t cpu_ns)
{
	return add(p, ids, n, count, wall_ns, cpu_ns, NULL);
}

/* The entry of a stack (h its hash), else NULL and in *slot where it would go. */
static struct stack_ent *find_stack(const struct profile *p, uint64_t h, const uint32_t *ids,
				    uint32_t n, size_t *slot)
{
	size_t j;

	if (!p->stack_slots_cap)
		return NULL;
	for (j = h & (p->stack_slots_cap - 1); p->stack_slots[j].idx;
	     j = (j + 1) & (p->stack_slots_cap - 1)) {
		struct stack_ent *e = &p->stacks[p->stack_slots[j].idx - 1];

		if (p->stack_slots[j].hash == h && e->n == n &&
		    !memcmp(e->ids, ids, n * sizeof(*ids)))
			return e;
	}
	*slot = j;
	return NULL;
}

static int add(struct profile *p, const uint32_t *ids, uint32_t n, uint64_t count, uint64_t wall_ns,
	       uint64_t cpu_ns, size_t *budget)
{
	uint64_t h = hash_bytes(ids, n * sizeof(*ids), n);
	struct stack_ent *e;
	uint32_t *copy;
	size_t j;

	/* the stacks profile_stacks handed out must stay where they are */
	if (p->sorted)
		return -EINVAL;
	if ((p->nstacks + 1) * 2 > p->stack_slots_cap && stack_slots_grow(p))
		return -ENOMEM;
	e = find_stack(p, h, ids, n, &j);
	if (e) {
		e->count += count;
		e->wall_ns += wall_ns;
		e->cpu_ns += cpu_ns;
		p->total += count;
		p->wall_ns += wall_ns;
		p->cpu_ns += cpu_ns;
		p->weighted |= wall_ns || cpu_ns;
		return 0;
	}
	if (budget) {
		if (*budget < profile_stack_bytes(n))
			return -ENOSPC;
		*budget -= profile_stack_bytes(n);
	}
	if (p->nstacks == p->stacks_cap) {
		size_t cap = p->stacks_cap ? p->stacks_cap * 2 : 256;
		struct stack_ent *s = realloc(p->stacks, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		p->stacks = s;
		p->stacks_cap = cap;
	}
	copy = malloc(n * sizeof(*ids) + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, ids, n * sizeof(*ids));
	p->stacks[p->nstacks] = (struct stack_ent){
		.ids = copy, .n = n, .count = count, .wall_ns = wall_ns, .cpu_ns = cpu_ns
	};
	p->stack_slots[j] = (struct stack_slot){ .hash = h, .idx = ++p->nstacks };
	p->total += count;
	p->wall_ns += wall_ns;
	p->cpu_ns += cpu_ns;
	p->weighted |= wall_ns || cpu_ns;
	p->bytes += chunk_bytes(copy);
	return 0;
}

struct profile *profile_renamed(const struct profile *p, profile_rename_fn rename, void *ctx)
{
	struct profile *q = profile_new();
	uint32_t *map = malloc(p->nframes * sizeof(*map) + 1), *ids = NULL;
	uint32_t maxn = 0;

	if (!q || !map)
		goto fail;
	memset(map, 0xff, p->nframes * sizeof(*map));
	for (size_t i = 0; i < p->nstacks; i++)
		maxn = p->stacks[i].n > maxn ? p->stacks[i].n : maxn;
	ids = malloc(maxn * sizeof(*ids) + 1);
	if (!ids)
		goto fail;
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct stack_ent *e = &p->stacks[i];

		for (uint32_t k = 0; k < e->n; k++) {
			const struct frame_sym *f = &p->frames[e->ids[k]];
			const char *name, *file = f->file;

			if (map[e->ids[k]] == UINT32_MAX) {
				name = rename(ctx, f, &file);
				map[e->ids[k]] = intern(q, f->kind, name ? name : f->name, file,
							f->line, f->ns_pid);
				if (map[e->ids[k]] == UINT32_MAX)
					goto fail;
				q->frames[map[e->ids[k]]].start_line = f->start_line;
			}
			ids[k] = map[e->ids[k]];
		}
		if (add(q, ids, e->n, e->count, e->wall_ns, e->cpu_ns, NULL))
			goto fail;
	}
	q->period_ns = p->period_ns;
	q->lost = p->lost;
	q->weighted |= p->weighted;
	free(map);
	free(ids);
	return q;
fail:
	free(map);
	free(ids);
	profile_free(q);
	return NULL;
}

static int by_count(const void *a, const void *b)
{
	const struct stack_ent *x = a, *y = b;

	uint32_t n = x->n < y->n ? x->n : y->n;

	if (x->wall_ns != y->wall_ns)
		return x->wall_ns < y->wall_ns ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	for (uint32_t i = 0; i < n; i++)
		if (x->ids[i] != y->ids[i])
			return x->ids[i] < y->ids[i] ? -1 : 1;
	return (x->n > y->n) - (x->n < y->n);
}

/* After sorting: the slots point at each stack's new place. */
static void stack_slots_reindex(struct profile *p)
{
	size_t cap = p->stack_slots_cap;

	memset(p->stack_slots, 0, cap * sizeof(*p->stack_slots));
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct stack_ent *e = &p->stacks[i];
		uint64_t h = hash_bytes(e->ids, e->n * sizeof(*e->ids), e->n);
		size_t j = h & (cap - 1);

		while (p->stack_slots[j].idx)
			j = (j + 1) & (cap - 1);
		p->stack_slots[j] = (struct stack_slot){ .hash = h, .idx = i + 1 };
	}
}

const struct stack_ent *profile_stacks(struct profile *p, size_t *n)
{
	if (!p->sorted) {
		if (p->nstacks) { /* stacks is NULL until the first */
			qsort(p->stacks, p->nstacks, sizeof(*p->stacks), by_count);
			stack_slots_reindex(p);
		}
		p->sorted = 1;
	}
	*n = p->nstacks;
	return p->stacks;
}

const struct stack_ent *profile_stacks_unsorted(const struct profile *p, size_t *n)
{
	*n = p->nstacks;
	return p->stacks;
}

uint64_t profile_total(const struct profile *p)
{
	return p->total;
}

/* Samples in b of a stack of a, matched frame by frame by what the frames say. */
static uint64_t count_in(const struct profile *a, const struct stack_ent *s,
			 const struct profile *b, uint32_t *ids)
{
	const struct stack_ent *e;
	size_t slot;

	for (uint32_t k = 0; k < s->n; k++) {
		const struct frame_sym *f = &a->frames[s->ids[k]];
		uint64_t h = frame_hash(f->kind, f->name, f->file, f->line, f->ns_pid);

		ids[k] = find_frame(b, h, f->kind, f->name, f->file, f->line, f->ns_pid, &slot);
		if (ids[k] == UINT32_MAX)
			return 0;
	}
	e = find_stack(b, hash_bytes(ids, s->n * sizeof(*ids), s->n), ids, s->n, &slot);
	return e ? e->count : 0;
}

double profile_overlap(const struct profile *a, const struct profile *b)
{
	uint32_t *ids = NULL, cap = 0;
	double sum = 0;

	if (!a->total || !b->total)
		return NAN;
	for (size_t i = 0; i < a->nstacks; i++) {
		const struct stack_ent *s = &a->stacks[i];
		double pa = (double)s->count / a->total, pb;

		if (s->n > cap) {
			uint32_t *n = realloc(ids, s->n * sizeof(*ids));

			if (!n) {
				free(ids);
				return NAN;
			}
			ids = n;
			cap = s->n;
		}
		pb = (double)count_in(a, s, b, ids) / b->total;
		sum += pa < pb ? pa : pb;
	}
	free(ids);
	return sum;
}

void profile_size(const struct profile *p, size_t *nstacks, size_t *nframes)
{
	*nstacks = p->nstacks;
	*nframes = p->nframes;
}

void profile_set_lost(struct profile *p, uint64_t n)
{
	p->lost = n;
}

uint64_t profile_lost(const struct profile *p)
{
	return p->lost;
}

size_t profile_bytes(const struct profile *p, size_t *nstacks)
{
	*nstacks = p->nstacks;
	/* what is allocated: the tables grow by doubling, so up to twice what they hold */
	return p->bytes + p->frames_cap * (sizeof(*p->frames) + sizeof(*p->frame_hash)) +
	       p->frame_slots_cap * sizeof(*p->frame_slots) + p->stacks_cap * sizeof(*p->stacks) +
	       p->stack_slots_cap * sizeof(*p->stack_slots);
}

void profile_print_frame(FILE *f, const struct frame_sym *s)
{
	switch (s->kind) {
	case FRAME_PROCESS:
		if (s->file)
			fprintf(f, "%s (pid %d, container %s pid %d)", s->name, s->line, s->file,
				s->ns_pid ? s->ns_pid : s->line);
		else
			fprintf(f, "%s (pid %d)", s->name, s->line);
		break;
	case FRAME_THREAD:
		fprintf(f, "%s (tid %d)", s->name, s->line);
		break;
	case FRAME_PYTHON:
		fprintf(f, "%s (%s:%d)", s->name, s->file ? s->file : "?", s->line);
		break;
	case FRAME_TASK:
		fprintf(f, "<task %s>", s->name);
		break;
	case FRAME_WORKER:
		fprintf(f, "<thread %s>", s->name);
		break;
	default:
		fputs(s->name, f);
		break;
	}
}

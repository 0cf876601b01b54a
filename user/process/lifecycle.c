// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/lcevent.h"
#include "process/lifecycle.h"
#include "lifecycle.skel.h"
#include "clock.h"

/* A new image maps its libraries and initialises its runtime within milliseconds of the
 * exec; a fork child is given time to exec before it is taken for its Python parent. */
#define EXEC_DELAY  0.015
#define FORK_DELAY  0.05
#define RETRY_FIRST 0.01
#define RETRY_MAX   1.0
#define READY_LIMIT 10.0 /* s a Python process may take to initialise its runtime */
#define LOAD_TRIES  3	 /* looks at a fresh image before it is judged not Python */
#define SWEEP_EVERY 1.0	 /* s between sweeps of ended processes' map entries */
#define WALK_BATCH  1024 /* map entries read per syscall in a sweep */

struct pend {
	pid_t pid;
	double next, first;
	unsigned int attempt;
	bool fresh; /* just exec'd or forked: its libraries may not be mapped yet */
};

struct lifecycle {
	struct lifecycle_bpf *skel;
	struct ring_buffer *rb;
	struct lifecycle_ops ops;
	int map_fd[LCM_MAX];
	__u32 key_size[LCM_MAX];
	unsigned char *keys, *values; /* a batch of one map's entries */
	struct pend *pend;
	size_t npend, pend_cap;
	pid_t *ended; /* processes whose map entries are still to be swept */
	size_t nended, ended_cap;
	double last_sweep;
	uint64_t lost_seen;
	struct lifecycle_stats st;
};

static const char *const map_names[LCM_MAX] = {
	[LCM_PROCS] = "procs",		 [LCM_TSTATES] = "tstates",
	[LCM_CORO_TASK] = "coro_task",	 [LCM_TASK_SERIALS] = "task_serials",
	[LCM_TASK_LINKS] = "task_links",
};

static struct pend *find_pend(struct lifecycle *lc, pid_t pid)
{
	for (size_t i = 0; i < lc->npend; i++)
		if (lc->pend[i].pid == pid)
			return &lc->pend[i];
	return NULL;
}

/* (Re)schedules pid's examination as a new start: an exec resets any earlier plan. */
static void schedule(struct lifecycle *lc, pid_t pid, double delay, bool fresh)
{
	struct pend *p = find_pend(lc, pid);
	double t = mono_s();

	if (!p) {
		if (lc->npend == lc->pend_cap) {
			size_t cap = lc->pend_cap ? lc->pend_cap * 2 : 64;
			struct pend *n = realloc(lc->pend, cap * sizeof(*n));

			if (!n)
				return;
			lc->pend = n;
			lc->pend_cap = cap;
		}
		p = &lc->pend[lc->npend++];
	} else if (!fresh) {
		return; /* already planned */
	}
	*p = (struct pend){ .pid = pid, .next = t + delay, .first = t, .fresh = fresh };
}

static bool is_ended(struct lifecycle *lc, pid_t pid)
{
	for (size_t i = 0; i < lc->nended; i++)
		if (lc->ended[i] == pid)
			return true;
	return false;
}

void lifecycle_ended(struct lifecycle *lc, pid_t pid)
{
	if (is_ended(lc, pid))
		return;
	if (lc->nended == lc->ended_cap) {
		size_t cap = lc->ended_cap ? lc->ended_cap * 2 : 64;
		pid_t *n = realloc(lc->ended, cap * sizeof(*n));

		if (!n)
			return; /* the entries stay until the next sweep finds room */
		lc->ended = n;
		lc->ended_cap = cap;
	}
	lc->ended[lc->nended++] = pid;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

static pid_t key_pid(enum lc_map m, const void *key)
{
	uint64_t k64;
	uint32_t k32;

	if (m == LCM_TSTATES) {
		memcpy(&k64, key, 8);
		return (pid_t)(k64 >> 32);
	}
	memcpy(&k32, key, 4); /* procs: the pid; task maps: struct task_key starts with it */
	return (pid_t)k32;
}

/* Deletes the keys fn chose in a walk of m (after it: a deletion restarts a walk). */
static void delete_keys(struct lifecycle *lc, enum lc_map m, const unsigned char *del, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!bpf_map_delete_elem(lc->map_fd[m], del + i * lc->key_size[m]))
			lc->st.swept++;
}

/* Calls fn on every key of map m; fn returns true to have the key deleted. The keys come
 * WALK_BATCH at a time (a sweep with thousands of entries took a syscall per key). */
static size_t walk_map(struct lifecycle *lc, enum lc_map m,
		       bool (*fn)(struct lifecycle *lc, enum lc_map m, pid_t pid, void *arg),
		       void *arg)
{
	size_t ks = lc->key_size[m], ndel = 0, cap = 0, n = 0;
	unsigned char *del = NULL;
	__u64 in[2], out[2]; /* the batch position: a bucket for hash maps */
	void *pos = NULL;
	int err;

	do {
		__u32 count = WALK_BATCH;

		err = bpf_map_lookup_batch(lc->map_fd[m], pos, out, lc->keys, lc->values, &count,
					   NULL);
		if (err && errno != ENOENT) {
			lc->st.sweep_errors++;
			break;
		}
		for (__u32 i = 0; i < count; i++) {
			const unsigned char *key = lc->keys + i * ks;

			n++;
			if (!fn(lc, m, key_pid(m, key), arg))
				continue;
			if (ndel == cap) {
				unsigned char *d = realloc(del, (cap ? cap * 2 : 256) * ks);

				if (!d)
					continue;
				del = d;
				cap = cap ? cap * 2 : 256;
			}
			memcpy(del + ndel++ * ks, key, ks);
		}
		memcpy(in, out, sizeof(in));
		pos = in;
	} while (!err);
	delete_keys(lc, m, del, ndel);
	free(del);
	return n;
}

static bool ended_pid(struct lifecycle *lc, enum lc_map m, pid_t pid, void *arg)
{
	(void)m;
	(void)arg;
	return bsearch(&pid, lc->ended, lc->nended, sizeof(pid), cmp_pid) != NULL;
}

static void sweep(struct lifecycle *lc)
{
	lc->last_sweep = mono_s();
	if (!lc->nended)
		return;
	qsort(lc->ended, lc->nended, sizeof(*lc->ended), cmp_pid);
	for (int m = 0; m < LCM_MAX; m++)
		walk_map(lc, m, ended_pid, NULL);
	lc->nended = 0;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct lifecycle *lc = ctx;
	const struct lc_event *e = data;

	if (size < sizeof(*e))
		return 0;
	switch (e->kind) {
	case LC_EXEC:
		lc->st.execs++;
		if (e->tracked || find_pend(lc, e->pid) || lc->ops.tracked(lc->ops.ctx, e->pid)) {
			lc->ops.ended(lc->ops.ctx, e->pid, true);
			lifecycle_ended(lc, e->pid);
		}
		schedule(lc, e->pid, EXEC_DELAY, true);
		break;
	case LC_FORK:
		lc->st.forks++;
		schedule(lc, e->pid, FORK_DELAY, true);
		break;
	case LC_EXIT:
		lc->st.exits++;
		lc->ops.ended(lc->ops.ctx, e->pid, false);
		lifecycle_ended(lc, e->pid);
		break;
	}
	return 0;
}

int lifecycle_open(struct lifecycle **out, int (*map_fd)(void *maps, const char *name), void *maps,
		   const struct lifecycle_ops *ops, char *err, size_t errlen)
{
	struct lifecycle *lc = calloc(1, sizeof(*lc));
	__u32 vmax = 0;
	int ret;

	*out = NULL;
	if (!lc) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	lc->ops = *ops;
	for (int m = 0; m < LCM_MAX; m++) {
		lc->map_fd[m] = map_fd(maps, map_names[m]);
		if (lc->map_fd[m] < 0) {
			snprintf(err, errlen, "no BPF map %s in the sampler", map_names[m]);
			ret = -ENOENT;
			goto fail;
		}
	}
	for (int m = 0; m < LCM_MAX; m++) {
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info);

		if (bpf_obj_get_info_by_fd(lc->map_fd[m], &info, &len) || info.key_size > 16) {
			snprintf(err, errlen, "cannot read the BPF map %s's sizes", map_names[m]);
			ret = -EINVAL;
			goto fail;
		}
		lc->key_size[m] = info.key_size;
		if (info.value_size > vmax)
			vmax = info.value_size;
	}
	lc->keys = malloc(WALK_BATCH * 16);
	lc->values = malloc((size_t)WALK_BATCH * vmax);
	if (!lc->keys || !lc->values) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	lc->skel = lifecycle_bpf__open();
	if (!lc->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the lifecycle BPF object: %s", strerror(-ret));
		goto fail;
	}
	if ((ret = bpf_map__reuse_fd(lc->skel->maps.procs, lc->map_fd[LCM_PROCS])) ||
	    (ret = bpf_map__reuse_fd(lc->skel->maps.tstates, lc->map_fd[LCM_TSTATES])) ||
	    (ret = lifecycle_bpf__load(lc->skel)) || (ret = lifecycle_bpf__attach(lc->skel))) {
		snprintf(err, errlen, "cannot load the exec/exit tracepoints: %s", strerror(-ret));
		goto fail;
	}
	lc->rb = ring_buffer__new(bpf_map__fd(lc->skel->maps.lc_events), on_event, lc, NULL);
	if (!lc->rb) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the lifecycle ring buffer: %s", strerror(-ret));
		goto fail;
	}
	lc->last_sweep = mono_s();
	*out = lc;
	return 0;
fail:
	lifecycle_close(lc);
	return ret;
}

void lifecycle_close(struct lifecycle *lc)
{
	if (!lc)
		return;
	ring_buffer__free(lc->rb);
	lifecycle_bpf__destroy(lc->skel);
	free(lc->pend);
	free(lc->ended);
	free(lc->keys);
	free(lc->values);
	free(lc);
}

void lifecycle_examine(struct lifecycle *lc, pid_t pid)
{
	schedule(lc, pid, 0, false);
}

static double backoff(unsigned int attempt)
{
	double d = RETRY_FIRST;

	while (attempt-- && d < RETRY_MAX)
		d *= 2;
	return d < RETRY_MAX ? d : RETRY_MAX;
}

/* Examines p; true when it is settled (profiled, or judged for good). */
static bool examine(struct lifecycle *lc, struct pend *p, double t)
{
	enum pyproc_status st;

	lc->st.examined++;
	if (p->attempt)
		lc->st.retries++;
	st = lc->ops.examine(lc->ops.ctx, p->pid);
	p->attempt++;
	if (st == PYPROC_NOT_READY ||
	    (st == PYPROC_NOT_PYTHON && p->fresh && p->attempt < LOAD_TRIES)) {
		if (t - p->first < READY_LIMIT) {
			p->next = t + backoff(p->attempt);
			return false;
		}
		if (st == PYPROC_NOT_READY)
			lc->st.gave_up++;
	}
	return true;
}

bool lifecycle_run(struct lifecycle *lc)
{
	bool due_ended = false;
	uint64_t lost;
	double t;

	ring_buffer__consume(lc->rb);
	t = mono_s();
	for (size_t i = 0; i < lc->npend && !due_ended; i++)
		due_ended = lc->pend[i].next <= t && is_ended(lc, lc->pend[i].pid);
	/* an ended pid's old entries go before anything new can be made under it */
	if (lc->nended && (due_ended || t - lc->last_sweep >= SWEEP_EVERY))
		sweep(lc);
	for (size_t i = 0; i < lc->npend;) {
		struct pend *p = &lc->pend[i];

		if (p->next > t || !examine(lc, p, t)) {
			i++;
			continue;
		}
		lc->pend[i] = lc->pend[--lc->npend];
	}
	lost = lc->skel->bss->lost;
	if (lost == lc->lost_seen)
		return false;
	lc->st.lost = lc->lost_seen = lost;
	return true;
}

void lifecycle_settle(struct lifecycle *lc, pid_t pid)
{
	if (is_ended(lc, pid))
		sweep(lc);
}

static bool count_stale(struct lifecycle *lc, enum lc_map m, pid_t pid, void *arg)
{
	struct lifecycle_stats *st = arg;

	if (!lc->ops.tracked(lc->ops.ctx, pid))
		st->stale[m]++;
	return false;
}

void lifecycle_stats(struct lifecycle *lc, struct lifecycle_stats *st)
{
	*st = lc->st;
	st->pending = lc->npend;
	for (int m = 0; m < LCM_MAX; m++)
		st->entries[m] = walk_map(lc, m, count_stale, st);
}

size_t lifecycle_pending(const struct lifecycle *lc)
{
	return lc->npend;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The reader a recording asked for, and the calls every kind answers; see reader.h. */
#include <stdlib.h>
#include <string.h>

#include "readers/reader.h"

static const char *const names[] = {
	[READER_BPF] = "bpf", [READER_MEMCPY] = "memcpy", [READER_VMREADV] = "vmreadv"
};

int reader_parse(const char *name, enum reader_kind *out)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i])) {
			*out = i;
			return 0;
		}
	return -1;
}

const char *reader_name(enum reader_kind k)
{
	return names[k];
}

int reader_check_env(enum reader_kind kind, char *why, size_t len)
{
	return kind == READER_BPF ? (int)sampler_check_env(why, len) : 0;
}

struct reader *reader_new(const struct reader_opts *o, char *why, size_t len)
{
	struct reader *rd = calloc(1, sizeof(*rd));
	int ret;

	if (!rd) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	ret = o->kind == READER_BPF ? reader_bpf_init(rd, o, why, len)
				    : reader_user_init(rd, o, why, len);
	if (ret) {
		free(rd);
		return NULL;
	}
	return rd;
}

void reader_free(struct reader *rd)
{
	if (!rd)
		return;
	rd->ops->free(rd->impl);
	free(rd);
}

int reader_add(struct reader *rd, const struct py_target *t, char *why, size_t len)
{
	return rd->ops->add(rd->impl, t, why, len);
}

void reader_del(struct reader *rd, pid_t pid)
{
	rd->ops->del(rd->impl, pid);
}

int reader_start(struct reader *rd, char *why, size_t len)
{
	return rd->ops->start ? rd->ops->start(rd->impl, why, len) : 0;
}

int reader_poll(struct reader *rd, int timeout_ms)
{
	return rd->ops->poll(rd->impl, timeout_ms);
}

void reader_stop(struct reader *rd)
{
	rd->ops->stop(rd->impl);
}

void reader_lock(struct reader *rd)
{
	if (rd->ops->lock)
		rd->ops->lock(rd->impl);
}

void reader_unlock(struct reader *rd)
{
	if (rd->ops->unlock)
		rd->ops->unlock(rd->impl);
}

void reader_tasks_read(struct reader *rd, pid_t pid)
{
	if (rd->ops->tasks_read)
		rd->ops->tasks_read(rd->impl, pid);
}

int reader_watch_creations(struct reader *rd, const struct py_target *t)
{
	return rd->ops->watch_creations ? rd->ops->watch_creations(rd->impl, t)
					: READER_UNSUPPORTED;
}

int reader_lifecycle(struct reader *rd, struct lifecycle **out, const struct lifecycle_ops *ops,
		     char *why, size_t len)
{
	*out = NULL;
	if (!rd->ops->lifecycle) {
		snprintf(why, len, "the %s reader sees no process events", rd->ops->name);
		return READER_UNSUPPORTED;
	}
	return rd->ops->lifecycle(rd->impl, out, ops, why, len);
}

void reader_totals(struct reader *rd, struct reader_totals *t)
{
	rd->ops->totals(rd->impl, t);
}

void reader_print_stats(struct reader *rd, FILE *f, const struct reader_report *rep)
{
	rd->ops->print_stats(rd->impl, f, rep);
}

/* The q-quantile of a cost_bucket() histogram: the middle of its bucket, in ns. */
static double hist_quantile(const uint64_t *h, double q)
{
	uint64_t n = 0, seen = 0;

	for (int k = 0; k < COST_BUCKETS; k++)
		n += h[k];
	for (int k = 0; n && k < COST_BUCKETS; k++) {
		seen += h[k];
		if ((double)seen >= q * (double)n) {
			double lo, hi;

			if (k < 8)
				return k;
			lo = (double)((4 + k % 4) << 0) * (double)(1ULL << (k / 4 - 2));
			hi = lo + (double)(1ULL << (k / 4 - 2));
			return (lo + hi) / 2;
		}
	}
	return 0;
}

void reader_print_cost(FILE *f, const uint64_t *h)
{
	fprintf(f, "median read time per sample: %.0f ns\n", hist_quantile(h, 0.5));
	fprintf(f, "p90 read time per sample: %.0f ns\n", hist_quantile(h, 0.9));
}

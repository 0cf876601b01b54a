// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The userspace readers (memcpy, vmreadv) behind reader.h. */
#include <stdlib.h>

#include "asyncio/tracker.h"
#include "readers/reader.h"
#include "readers/ureader.h"

struct user_reader {
	struct ureader *u;
	struct tracker *tr;
	enum reader_kind kind;
};

static int user_add(void *r, const struct py_target *t, char *why, size_t len)
{
	return ureader_add_proc(((struct user_reader *)r)->u, t, why, len) ? READER_REFUSED : 0;
}

static void user_del(void *r, pid_t pid)
{
	ureader_del_proc(((struct user_reader *)r)->u, pid);
}

static int user_poll(void *r, int timeout_ms)
{
	return ureader_poll(((struct user_reader *)r)->u, timeout_ms);
}

static void user_stop(void *r)
{
	struct user_reader *ur = r;

	ureader_stop(ur->u);
	ureader_poll(ur->u, 20); /* signals sent before the stop */
}

static void user_totals(void *r, struct reader_totals *t)
{
	struct ureader_stats st;

	ureader_read_stats(((struct user_reader *)r)->u, &st);
	t->taken = st.samples;
	t->lost = st.lost;
}

static void user_print_stats(void *r, FILE *f, const struct reader_report *rep)
{
	struct user_reader *ur = r;
	struct ureader_stats st;

	ureader_read_stats(ur->u, &st);
	fprintf(f, "reader: %s\n", reader_name(ur->kind));
	fprintf(f, "duration: %.1f s\n", rep->elapsed);
	fprintf(f, "timer ticks: %llu (missed %llu)\n", (unsigned long long)st.ticks,
		(unsigned long long)st.missed_ticks);
	fprintf(f, "samples: %llu\n", (unsigned long long)st.samples);
	fprintf(f, "recorded samples: %llu\n", (unsigned long long)rep->recorded);
	fprintf(f, "no thread state: %llu\n", (unsigned long long)st.no_tstate);
	fprintf(f, "truncated: %llu\n", (unsigned long long)st.truncated);
	fprintf(f, "read errors: %llu\n", (unsigned long long)st.read_err);
	fprintf(f, "lost: %llu\n", (unsigned long long)st.lost);
	if (st.read_cnt)
		fprintf(f, "%s per sample: %llu ns (%llu runs)\n",
			ur->kind == READER_MEMCPY ? "handler time" : "walk time",
			(unsigned long long)(st.read_ns / st.read_cnt),
			(unsigned long long)st.read_cnt);
	if (st.read_cnt)
		reader_print_cost(f, st.cost_hist);
	if (st.read_cnt)
		fprintf(f, "reads per python sample: %.1f (%.0f bytes)\n",
			(double)st.mem_reads / (double)st.read_cnt,
			(double)st.mem_bytes / (double)st.read_cnt);
	if (ur->kind == READER_MEMCPY)
		fprintf(f, "faults caught: %llu\nhandler runs unattached: %llu\n",
			(unsigned long long)st.faults, (unsigned long long)st.idle);
	fprintf(f, "samples in asyncio tasks: %llu\n", (unsigned long long)st.in_task);
	rep->recording(rep->ctx, f, true);
}

static void user_free(void *r)
{
	struct user_reader *ur = r;

	tracker_free(ur->tr);
	ureader_free(ur->u);
	free(ur);
}

static const struct reader_ops user_ops = {
	.name = "userspace",
	.add = user_add,
	.del = user_del,
	.poll = user_poll,
	.stop = user_stop,
	.totals = user_totals,
	.print_stats = user_print_stats,
	.free = user_free,
};

int reader_user_init(struct reader *rd, const struct reader_opts *o, char *why, size_t len)
{
	struct user_reader *ur = calloc(1, sizeof(*ur));
	struct ureader_opts uo = { .kind = o->kind, .freq = o->freq, .cb = o->cb, .ctx = o->ctx };

	if (ur) {
		ur->kind = o->kind;
		ur->u = ureader_new(&uo);
		ur->tr = ur->u ? tracker_new_ops(&ureader_taskmaps_ops, ur->u) : NULL;
	}
	if (!ur || !ur->tr) {
		if (ur)
			user_free(ur);
		snprintf(why, len, "out of memory");
		return -1;
	}
	rd->ops = &user_ops;
	rd->impl = ur;
	rd->tracker = ur->tr;
	return 0;
}

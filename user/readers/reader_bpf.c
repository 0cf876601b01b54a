// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The two BPF readers behind reader.h: the sampler on cpu-clock, and wall mode, whose
 * ticker (wallrec) walks the targets over the sampler's maps without starting it. */
#include <stdlib.h>
#include <string.h>

#include "asyncio/tasknames.h"
#include "asyncio/tasksites.h"
#include "asyncio/tracker.h"
#include "process/lifecycle.h"
#include "profile/joiner.h"
#include "readers/reader.h"
#include "readers/samplertasks.h"
#include "readers/wallrec.h"

struct bpf_reader {
	struct sampler *s;
	struct wallrec *wall; /* wall mode */
	struct tracker *tr;
	bool stopped;
	struct sampler_stats final; /* the counters at the stop */
};

static int cpu_add(void *r, const struct py_target *t, char *why, size_t len)
{
	struct bpf_reader *br = r;

	if (sampler_add_proc(br->s, t->pid, &t->proc)) {
		snprintf(why, len, "pid %d: cannot add it to the BPF map", t->pid);
		return -1;
	}
	return 0;
}

static int wall_add(void *r, const struct py_target *t, char *why, size_t len)
{
	struct bpf_reader *br = r;

	if (cpu_add(r, t, why, len))
		return -1;
	if (wallrec_add(br->wall, t->pid)) {
		snprintf(why, len, "pid %d: cannot attach the wall-clock iterator", t->pid);
		sampler_del_proc(br->s, t->pid);
		return -1;
	}
	return 0;
}

static void cpu_del(void *r, pid_t pid)
{
	sampler_del_proc(((struct bpf_reader *)r)->s, pid);
}

static void wall_del(void *r, pid_t pid)
{
	struct bpf_reader *br = r;

	sampler_del_proc(br->s, pid);
	wallrec_del(br->wall, pid);
}

static int cpu_start(void *r, char *why, size_t len)
{
	return sampler_start(((struct bpf_reader *)r)->s, why, len) ? -1 : 0;
}

static int wall_start(void *r, char *why, size_t len)
{
	if (wallrec_start(((struct bpf_reader *)r)->wall)) {
		snprintf(why, len, "cannot start the wall-clock timer thread");
		return -1;
	}
	return 0;
}

static int bpf_poll(void *r, int timeout_ms)
{
	return sampler_poll(((struct bpf_reader *)r)->s, timeout_ms);
}

static void read_stats(struct bpf_reader *br, struct sampler_stats *st)
{
	if (br->stopped)
		*st = br->final;
	else if (sampler_read_stats(br->s, st))
		memset(st, 0, sizeof(*st));
}

static void bpf_stop(void *r)
{
	struct bpf_reader *br = r;

	sampler_stop(br->s);
	sampler_poll(br->s, 0);
	if (br->wall)
		wallrec_stop(br->wall);
	read_stats(br, &br->final);
	br->stopped = true;
}

static void wall_lock(void *r)
{
	wallrec_lock(((struct bpf_reader *)r)->wall);
}

static void wall_unlock(void *r)
{
	wallrec_unlock(((struct bpf_reader *)r)->wall);
}

static void wall_tasks_read(void *r, pid_t pid)
{
	struct bpf_reader *br = r;

	wallrec_lock(br->wall);
	wallrec_set_tasks(br->wall, pid);
	wallrec_unlock(br->wall);
}

static int bpf_watch_creations(void *r, const struct py_target *t)
{
	return sampler_watch_creations(((struct bpf_reader *)r)->s, t);
}

static int sampler_map(void *s, const char *name)
{
	return sampler_map_fd(s, name);
}

static int bpf_lifecycle(void *r, struct lifecycle **out, const struct lifecycle_ops *ops,
			 char *why, size_t len)
{
	return lifecycle_open(out, sampler_map, ((struct bpf_reader *)r)->s, ops, why, len);
}

static void bpf_totals(void *r, struct reader_totals *t)
{
	struct sampler_stats st;

	read_stats(r, &st);
	t->taken = st.stat[STAT_PYTHON];
	t->lost = st.stat[STAT_LOST] + st.bad_records;
}

static void print_walk(const struct bpf_reader *br, const struct sampler_stats *st, FILE *f)
{
	fprintf(f, "thread-state lookups: %llu\n",
		(unsigned long long)st->stat[STAT_TSTATE_LOOKUP]);
	if (st->run_cnt)
		fprintf(f, "bpf run time per sample: %llu ns (%llu runs)\n",
			(unsigned long long)(st->run_ns / st->run_cnt),
			(unsigned long long)st->run_cnt);
	else if (br->wall)
		fprintf(f, "bpf run time per sample: none (wall mode: see bpf run time per "
			   "tick)\n");
	else
		fprintf(f, "bpf run time per sample: unavailable\n");
	fprintf(f, "bpf walker: %s\n", sampler_variant(br->s));
	if (st->stat[STAT_PYTHON]) {
		fprintf(f, "walk time per python sample: %llu ns\n",
			(unsigned long long)(st->stat[STAT_PY_NS] / st->stat[STAT_PYTHON]));
		fprintf(f,
			"walk phases per python sample: thread state %llu ns, frames %llu ns, "
			"tasks %llu ns, output %llu ns\n",
			(unsigned long long)(st->stat[STAT_NS_TSTATE] / st->stat[STAT_PYTHON]),
			(unsigned long long)(st->stat[STAT_NS_FRAMES] / st->stat[STAT_PYTHON]),
			(unsigned long long)(st->stat[STAT_NS_TASKS] / st->stat[STAT_PYTHON]),
			(unsigned long long)(st->stat[STAT_NS_OUTPUT] / st->stat[STAT_PYTHON]));
		fprintf(f,
			"awaiters' frames kept: %llu walks taken from the last (a task that awaits "
			"a pending task has not run), %llu walked and kept\n",
			(unsigned long long)st->stat[STAT_KEPT_HITS],
			(unsigned long long)st->stat[STAT_KEPT_FILLS]);
		fprintf(f,
			"thread work links from the worker's last: %llu (its future proven "
			"chained to the item running now; the others walked from the item)\n",
			(unsigned long long)st->stat[STAT_WORK_HINTED]);
		reader_print_cost(f, st->cost_hist);
		fprintf(f, "reads per python sample: %.1f (%.0f bytes)\n",
			(double)st->stat[STAT_READS] / (double)st->stat[STAT_PYTHON],
			(double)st->stat[STAT_READ_BYTES] / (double)st->stat[STAT_PYTHON]);
	}
}

static void bpf_print_stats(void *r, FILE *f, const struct reader_report *rep)
{
	struct bpf_reader *br = r;
	const struct joiner *jn = rep->jn;
	struct sampler_stats st;

	read_stats(br, &st);
	fprintf(f, "duration: %.1f s\n", rep->elapsed);
	fprintf(f, "samples: %llu\n", (unsigned long long)st.stat[STAT_SAMPLES]);
	fprintf(f, "python samples: %llu\n", (unsigned long long)st.stat[STAT_PYTHON]);
	fprintf(f, "recorded samples: %llu\n", (unsigned long long)rep->recorded);
	fprintf(f, "no thread state: %llu\n", (unsigned long long)st.stat[STAT_NO_TSTATE]);
	fprintf(f, "truncated: %llu\n", (unsigned long long)st.stat[STAT_TRUNCATED]);
	fprintf(f, "read errors: %llu\n", (unsigned long long)st.stat[STAT_READ_ERR]);
	fprintf(f,
		"lost: %llu (ring buffer full %llu, malformed %llu, out of memory %llu, untracked "
		"process %llu)\n",
		(unsigned long long)rep->lost, (unsigned long long)st.stat[STAT_LOST],
		(unsigned long long)st.bad_records, (unsigned long long)jn->nomem,
		(unsigned long long)jn->unknown_pid);
	fprintf(f, "unknown frames: %llu (code objects that could not be read)\n",
		(unsigned long long)jn->unknown_frames);
	fprintf(f,
		"frames proven by code version: %llu (3.12+: code objects the walk left unread; "
		"not proven, shown [unknown]: %llu; checks %llu; counter confirmed %llu times)\n",
		(unsigned long long)st.code.proven, (unsigned long long)st.code.unproven,
		(unsigned long long)st.code.checks, (unsigned long long)st.code.confirms);
	print_walk(br, &st, f);
	rep->native(rep->ctx, f,
		    st.stat[STAT_NATIVE]
			    ? (double)st.stat[STAT_NATIVE_BYTES] / (double)st.stat[STAT_NATIVE]
			    : 0.0);
	fprintf(f, "samples in asyncio tasks: %llu\n", (unsigned long long)st.stat[STAT_TASK]);
	fprintf(f, "tasks created: %llu\n", (unsigned long long)st.stat[STAT_TASK_CREATED]);
	fprintf(f,
		"creation probe reads per walk: %.1f (%llu walks of the creating thread down to "
		"its creator)\n",
		st.stat[STAT_INIT_WALKS]
			? (double)st.stat[STAT_INIT_READS] / (double)st.stat[STAT_INIT_WALKS]
			: 0.0,
		(unsigned long long)st.stat[STAT_INIT_WALKS]);
	fprintf(f,
		"task renames: %llu seen; %llu processes' renames not watched (their task names "
		"copied at every sample)\n",
		(unsigned long long)st.stat[STAT_RENAMES],
		(unsigned long long)st.renames_unwatched);
	if (br->wall)
		fprintf(f, "tasks freed: %llu (creations and frees lost: %llu)\n",
			(unsigned long long)st.stat[STAT_TASK_FREED],
			(unsigned long long)st.stat[STAT_TASK_LIFE_LOST]);
	rep->recording(rep->ctx, f, false);
	if (br->wall)
		wallrec_print_stats(br->wall, f);
}

static void bpf_free(void *r)
{
	struct bpf_reader *br = r;

	wallrec_free(br->wall);
	tracker_free(br->tr);
	sampler_close(br->s);
	free(br);
}

static const struct reader_ops cpu_ops = {
	.name = "bpf",
	.add = cpu_add,
	.del = cpu_del,
	.start = cpu_start,
	.poll = bpf_poll,
	.stop = bpf_stop,
	.watch_creations = bpf_watch_creations,
	.lifecycle = bpf_lifecycle,
	.totals = bpf_totals,
	.print_stats = bpf_print_stats,
	.free = bpf_free,
};

/* the sampler only lends its maps: no perf events, the ticks come from wallrec's thread */
static const struct reader_ops wall_ops = {
	.name = "bpf wall-clock",
	.add = wall_add,
	.del = wall_del,
	.start = wall_start,
	.poll = bpf_poll,
	.stop = bpf_stop,
	.lock = wall_lock,
	.unlock = wall_unlock,
	.tasks_read = wall_tasks_read,
	.watch_creations = bpf_watch_creations,
	.lifecycle = bpf_lifecycle,
	.totals = bpf_totals,
	.print_stats = bpf_print_stats,
	.free = bpf_free,
};

int reader_bpf_init(struct reader *rd, const struct reader_opts *o, char *why, size_t len)
{
	struct bpf_reader *br = calloc(1, sizeof(*br));
	struct sampler_opts so = { .freq = o->freq,
				   .run_stats = o->run_stats,
				   .verbose = o->verbose,
				   .no_cpu_samples = o->wall,
				   .no_task_init = !o->origins,
				   .task_lives = o->wall,
				   .native_bytes = o->native_bytes,
				   .cb = o->cb,
				   .ctx = o->ctx };
	struct wallrec_opts wo = { .freq = o->freq,
				   .max_tasks = o->max_tasks,
				   .run_stats = o->run_stats };

	if (!br) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	rd->ops = o->wall ? &wall_ops : &cpu_ops;
	rd->impl = br;
	if (sampler_open(&br->s, &so, why, len))
		goto fail;
	br->tr = rd->tracker = tracker_new_ops(&sampler_taskmaps_ops, br->s);
	tasknames_set_map(o->jn->names, sampler_map_fd(br->s, "task_names"));
	tasksites_set_map(o->jn->sites, sampler_map_fd(br->s, "task_sites"));
	tasksites_set_codever(o->jn->sites, sampler_codever(br->s));
	if (!br->tr) {
		snprintf(why, len, "out of memory");
		goto fail;
	}
	if (o->wall && !(br->wall = wallrec_new(br->s, o->jn, br->tr, &wo, why, len)))
		goto fail;
	return 0;
fail:
	bpf_free(br);
	return -1;
}

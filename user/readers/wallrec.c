// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "readers/wall.h"
#include "readers/walljoin.h"
#include "readers/wallrec.h"
#include "readers/walltasks.h"
#include "process/procfs.h"
#include "clock.h"

/* Suspended-task walks of a tick take at most this share of the tick period, so that the
 * ticks keep their rate whatever the number of tasks; the first tick of a process walks
 * WALL_FIRST_TASKS at most, to measure their cost. */
#define WALL_BUDGET_PCT	 50
#define WALL_FIRST_TASKS 64
/* Past the budget a tick walks a sample, at least this many (or all that fit) */
#define WALL_MIN_SAMPLE 32
#define WALL_PICK_SLOTS WALLTASKS_PICK_SLOTS(WALL_MAX_TASKS)
/* A task snapshot is read in less than this: frees older than it cannot be in one */
#define WALL_FREES_KEPT_NS (10 * 1000000000ULL)

struct cpu_ent {
	uint64_t key; /* pid << 32 | tid, 0 = empty */
	uint64_t cpu_ns;
};

/* A target's last tick and the suspended tasks to sample from */
struct proc_ent {
	pid_t pid;
	uint64_t ns;
	uint64_t task_ns; /* what a walked task costs, measured (0: not yet) */
	uint64_t rest_ns; /* what the rest of its run costs: its threads, the run itself */
	struct walltasks *live;
};

/* A task a pool worker's sample of this tick is linked to (tasks[0] of a SAMPLE_WORK) */
struct linked_task {
	uint64_t addr, serial;
};

struct wallrec {
	struct wall *w;
	struct joiner *jn;
	struct tracker *tr;
	struct wallrec_opts o;
	uint64_t period, next;
	uint64_t deadline; /* the tick's task walks end by then */
	pthread_t thread;
	pthread_mutex_t mu;
	int running, stop;
	struct wall_task *buf; /* the tasks this tick walks, of nbuf listed */
	size_t nbuf;
	uint32_t *picked; /* indices + 1 in the list, chosen for the sample */
	struct proc_ent *procs;
	size_t nprocs;
	struct proc_ent *filling;
	struct cpu_ent *cpu;
	size_t ncpu, capcpu;
	uint64_t rand;
	/* the process being sampled: its interval and how many tasks each task sample
	 * stands for (leaves / sampled) */
	uint64_t dt;
	uint64_t leaves, sampled;
	/* this run's suspended-task samples, held until all of its thread samples are seen
	 * (each at an offset of held, aligned), and the tasks its workers are linked to */
	unsigned char *held;
	size_t nheld, capheld;
	struct linked_task *linked;
	size_t nlinked, caplinked;
	struct walljoin *join; /* the chains ended at an earlier walk of the run */
	/* statistics */
	uint64_t ticks, late, run_errors, capped, budgeted, tick_ns;
	int rt_err; /* the ticker's SCHED_FIFO request: 0, or why it was refused */
	uint64_t listed, walked, listed_new;
	uint64_t born, freed, lives_nomem;
	/* the creations and frees drained at or after the list's time (list_ns, while a
	 * process's list is made and walked), in order: applied after its run, which walks
	 * those creations itself */
	uint64_t list_ns;
	struct task_life *deferred;
	size_t ndeferred, capdeferred;
	uint64_t started, stopped; /* first tick, last tick */
	double first_tick_s;	   /* from the recorder's exec to the first tick; < 0: unknown */
	uint64_t wall_threads, wall_tasks, cpu_total;
	uint64_t folded, folded_ns, hold_lost;
	uint64_t joined, join_missing;
	/* this run's first thread sample and last task sample (BPF's clock): the tasks are
	 * walked between them, at the first thread */
	uint64_t run_thread_ns, run_task_ns;
};

static uint64_t next_rand(struct wallrec *wr)
{
	/* xorshift64*: reservoir choices need no more */
	wr->rand ^= wr->rand >> 12;
	wr->rand ^= wr->rand << 25;
	wr->rand ^= wr->rand >> 27;
	return wr->rand * 0x2545F4914F6CDD1DULL;
}

static uint64_t rand_of(void *ctx)
{
	return next_rand(ctx);
}

static int cpu_grow(struct wallrec *wr)
{
	size_t cap = wr->capcpu ? wr->capcpu * 2 : 256;
	struct cpu_ent *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < wr->capcpu; i++) {
		size_t j;

		if (!wr->cpu[i].key)
			continue;
		for (j = hash_u64(wr->cpu[i].key) & (cap - 1); t[j].key; j = (j + 1) & (cap - 1))
			;
		t[j] = wr->cpu[i];
	}
	free(wr->cpu);
	wr->cpu = t;
	wr->capcpu = cap;
	return 0;
}

/* CPU time the thread used since its previous tick (0 at its first). */
static uint64_t cpu_delta(struct wallrec *wr, uint32_t pid, uint32_t tid, uint64_t now)
{
	uint64_t key = (uint64_t)pid << 32 | tid, d;
	size_t j;

	if ((wr->ncpu + 1) * 2 > wr->capcpu && cpu_grow(wr))
		return 0;
	for (j = hash_u64(key) & (wr->capcpu - 1); wr->cpu[j].key && wr->cpu[j].key != key;
	     j = (j + 1) & (wr->capcpu - 1))
		;
	if (!wr->cpu[j].key) {
		wr->cpu[j] = (struct cpu_ent){ .key = key, .cpu_ns = now };
		wr->ncpu++;
		return 0;
	}
	d = now > wr->cpu[j].cpu_ns ? now - wr->cpu[j].cpu_ns : 0;
	wr->cpu[j].cpu_ns = now;
	return d;
}

/* Each sampled task stands for leaves / sampled of them. */
static uint64_t task_wall(const struct wallrec *wr)
{
	return (wr->dt * wr->leaves + wr->sampled / 2) / wr->sampled;
}

static int note_linked(struct wallrec *wr, const struct task_rec *t)
{
	if (wr->nlinked == wr->caplinked) {
		size_t cap = wr->caplinked ? wr->caplinked * 2 : 16;
		struct linked_task *l = realloc(wr->linked, cap * sizeof(*l));

		if (!l)
			return -ENOMEM;
		wr->linked = l;
		wr->caplinked = cap;
	}
	wr->linked[wr->nlinked++] = (struct linked_task){ .addr = t->addr, .serial = t->serial };
	return 0;
}

static int hold(struct wallrec *wr, const struct wall_sample *ws, size_t size)
{
	size_t need = sizeof(size_t) + ((size + 15) & ~(size_t)15);

	if (wr->nheld + need > wr->capheld) {
		size_t cap = wr->capheld ? wr->capheld : 1 << 16;
		unsigned char *b;

		while (cap < wr->nheld + need)
			cap *= 2;
		b = realloc(wr->held, cap);
		if (!b)
			return -ENOMEM;
		wr->held = b;
		wr->capheld = cap;
	}
	memcpy(wr->held + wr->nheld, &size, sizeof(size));
	memcpy(wr->held + wr->nheld + sizeof(size_t), ws, size);
	wr->nheld += need;
	return 0;
}

/* s with its chain whole (see walljoin.h). */
static const struct py_sample *resolve(struct wallrec *wr, const struct py_sample *s)
{
	int missing;
	const struct py_sample *o = walljoin_resolve(wr->join, s, &missing);

	if (o != s)
		wr->joined++;
	wr->join_missing += missing;
	return o;
}

static void on_sample(void *ctx, const struct wall_sample *ws, size_t size)
{
	struct wallrec *wr = ctx;
	uint64_t wall, cpu;

	if (ws->kind == WALL_TASK && ws->s.hdr.time_ns > wr->run_task_ns)
		wr->run_task_ns = ws->s.hdr.time_ns;
	if (ws->kind == WALL_THREAD && !wr->run_thread_ns)
		wr->run_thread_ns = ws->s.hdr.time_ns;
	if (ws->kind == WALL_TASK) {
		if (!hold(wr, ws, size))
			return;
		/* not held: counted now, fold or not */
		wr->hold_lost++;
		wall = task_wall(wr);
		wr->wall_tasks += wall;
		joiner_sample_ns(wr->jn, resolve(wr, &ws->s), wall, 0);
		return;
	}
	wall = wr->dt;
	cpu = cpu_delta(wr, ws->s.hdr.pid, ws->s.hdr.tid, ws->cpu_ns);
	wr->wall_threads += wall;
	wr->cpu_total += cpu;
	if (ws->s.hdr.flags & SAMPLE_WORK && ws->s.hdr.ntasks)
		note_linked(wr, &ws->s.tasks[0]);
	joiner_sample_ns(wr->jn, &ws->s, wall, cpu);
}

static int is_linked(const struct wallrec *wr, const struct task_rec *t)
{
	for (size_t i = 0; i < wr->nlinked; i++)
		if (wr->linked[i].addr == t->addr && wr->linked[i].serial == t->serial)
			return 1;
	return 0;
}

/* After a run: its suspended-task samples. A task that a worker's sample of the same run
 * is linked to is left out: that sample stands for the same interval and already shows
 * the task's whole stack, the worker's frames under it, so the task would count twice.
 * Joined here, where all of a run's records are at hand, rather than in BPF, where the
 * suspended tasks are walked at the first thread, before most workers are. */
static void flush_held(struct wallrec *wr)
{
	uint64_t wall = task_wall(wr);

	for (size_t at = 0; at < wr->nheld;) {
		size_t size;
		const struct wall_sample *ws;

		memcpy(&size, wr->held + at, sizeof(size));
		ws = (const struct wall_sample *)(wr->held + at + sizeof(size_t));
		at += sizeof(size_t) + ((size + 15) & ~(size_t)15);
		/* a chain later in the run may end at one of this one's tasks: noted first */
		if (walljoin_add(wr->join, &ws->s))
			wr->join_missing++;
		if (ws->s.hdr.ntasks && wr->nlinked && is_linked(wr, &ws->s.tasks[0])) {
			wr->folded++;
			wr->folded_ns += wall;
			continue;
		}
		wr->wall_tasks += wall;
		joiner_sample_ns(wr->jn, resolve(wr, &ws->s), wall, 0);
	}
	walljoin_reset(wr->join);
	wr->nheld = 0;
	wr->nlinked = 0;
}

static struct proc_ent *proc_of(struct wallrec *wr, pid_t pid);

/* Keeps each process's list of tasks to walk current between snapshots. */
static void apply_life(struct wallrec *wr, const struct task_life *e)
{
	struct proc_ent *l = proc_of(wr, (pid_t)e->pid);
	int ret = 0;

	if (!l)
		return;
	if (e->kind == TASK_BORN) {
		wr->born++;
		ret = walltasks_born(l->live, e->task, e->coro, e->serial);
	} else if (e->kind == TASK_FREED) {
		wr->freed++;
		ret = walltasks_freed(l->live, e->task, e->serial, e->ns);
	}
	if (ret)
		wr->lives_nomem++;
}

static void on_life(void *ctx, const struct task_life *e)
{
	struct wallrec *wr = ctx;

	/* the list holds what happened before its time; after it, in the order seen */
	if (wr->list_ns && (wr->ndeferred || e->ns >= wr->list_ns)) {
		if (wr->ndeferred == wr->capdeferred) {
			size_t cap = wr->capdeferred ? wr->capdeferred * 2 : 64;
			struct task_life *d = realloc(wr->deferred, cap * sizeof(*d));

			if (!d) {
				wr->lives_nomem++;
				return;
			}
			wr->deferred = d;
			wr->capdeferred = cap;
		}
		wr->deferred[wr->ndeferred++] = *e;
		return;
	}
	apply_life(wr, e);
}

struct wallrec *wallrec_new(struct sampler *s, struct joiner *jn, struct tracker *tr,
			    const struct wallrec_opts *o, char *err, size_t errlen)
{
	struct wallrec *wr = calloc(1, sizeof(*wr));

	if (!wr) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	wr->jn = jn;
	wr->tr = tr;
	wr->o = *o;
	wr->period = 1000000000ULL / o->freq;
	wr->rand = mono_ns() | 1;
	pthread_mutex_init(&wr->mu, NULL);
	wr->buf = malloc(WALL_MAX_TASKS * sizeof(*wr->buf));
	wr->picked = malloc(WALL_PICK_SLOTS * sizeof(*wr->picked));
	wr->join = wr->buf && wr->picked ? walljoin_new() : NULL;
	wr->w = wr->join ? wall_open(s, o->run_stats, on_sample, on_life, wr, err, errlen) : NULL;
	if (!wr->join)
		snprintf(err, errlen, "out of memory");
	if (!wr->w) {
		free(wr->buf);
		free(wr->picked);
		walljoin_free(wr->join);
		pthread_mutex_destroy(&wr->mu);
		free(wr);
		return NULL;
	}
	return wr;
}

void wallrec_free(struct wallrec *wr)
{
	if (!wr)
		return;
	wallrec_stop(wr);
	wall_close(wr->w);
	for (size_t i = 0; i < wr->nprocs; i++)
		walltasks_free(wr->procs[i].live);
	free(wr->procs);
	free(wr->buf);
	free(wr->picked);
	free(wr->cpu);
	free(wr->held);
	free(wr->deferred);
	free(wr->linked);
	walljoin_free(wr->join);
	pthread_mutex_destroy(&wr->mu);
	free(wr);
}

void wallrec_lock(struct wallrec *wr)
{
	pthread_mutex_lock(&wr->mu);
}

void wallrec_unlock(struct wallrec *wr)
{
	pthread_mutex_unlock(&wr->mu);
}

static struct proc_ent *proc_of(struct wallrec *wr, pid_t pid)
{
	for (size_t i = 0; i < wr->nprocs; i++)
		if (wr->procs[i].pid == pid)
			return &wr->procs[i];
	return NULL;
}

int wallrec_add(struct wallrec *wr, pid_t pid)
{
	struct proc_ent *l;
	struct walltasks *live;
	int ret = wall_add_proc(wr->w, pid);

	if (ret || proc_of(wr, pid))
		return ret;
	live = walltasks_new();
	l = live ? realloc(wr->procs, (wr->nprocs + 1) * sizeof(*l)) : NULL;
	if (!l) {
		walltasks_free(live);
		wall_del_proc(wr->w, pid);
		return -ENOMEM;
	}
	wr->procs = l;
	wr->procs[wr->nprocs++] = (struct proc_ent){ .pid = pid, .live = live };
	return 0;
}

void wallrec_del(struct wallrec *wr, pid_t pid)
{
	struct proc_ent *l = proc_of(wr, pid);

	wall_del_proc(wr->w, pid);
	if (l) {
		walltasks_free(l->live);
		*l = wr->procs[--wr->nprocs];
	}
}

static void add_task(void *ctx, uint64_t task, uint64_t coro, uint64_t serial, int leaf)
{
	walltasks_snapshot_task(((struct wallrec *)ctx)->filling->live, task, coro, serial, leaf);
}

void wallrec_set_tasks(struct wallrec *wr, pid_t pid)
{
	uint64_t read_ns;

	wr->filling = proc_of(wr, pid);
	if (!wr->filling)
		return;
	/* the creations and frees sent before the snapshot's end come first */
	wall_drain_lives(wr->w);
	walltasks_snapshot_begin(wr->filling->live);
	tracker_tasks(wr->tr, pid, add_task, wr, &read_ns);
	if (walltasks_snapshot_end(wr->filling->live, read_ns))
		wr->lives_nomem++;
}

/* How many of n tasks this tick can walk: all if they fit in the process's share of what
 * is left of the tick's budget at the measured cost per task. Else a sample, F * F / N of
 * N when F fit (at least WALL_MIN_SAMPLE, at most F): its share of the budget falls as
 * the tasks outgrow it, so that 100,000 idle tasks cost a few percent of a core, not
 * half of one; the sample's precision is its size's, whatever N. The estimate includes
 * the process's thread walks, so it errs towards fewer. */
static size_t tasks_that_fit(struct wallrec *wr, const struct proc_ent *l, size_t n, size_t listed,
			     size_t procs_left, uint64_t now)
{
	uint64_t left = wr->deadline > now ? wr->deadline - now : 0, fit, k;

	if (!l->task_ns)
		return n < WALL_FIRST_TASKS ? n : WALL_FIRST_TASKS;
	left /= procs_left ? procs_left : 1;
	/* the threads are walked whatever the budget: the tasks get what they leave */
	left = left > l->rest_ns ? left - l->rest_ns : 0;
	fit = left / l->task_ns;
	if (fit >= n)
		return n;
	k = fit * fit / listed;
	if (k < WALL_MIN_SAMPLE)
		k = WALL_MIN_SAMPLE;
	return k < fit ? k : fit ? fit : 1;
}

/* One process's tick: its threads and a uniform sample of its suspended leaf tasks. */
static int tick_proc(struct wallrec *wr, struct target *tg, size_t procs_left)
{
	struct proc_ent *l = proc_of(wr, tg->t.pid);
	size_t k, fit, cap = wr->o.max_tasks ? wr->o.max_tasks : WALL_MAX_TASKS;
	uint64_t now = mono_ns(), cpu0 = thread_cpu_ns(), took = 0, run, cpu, rest, keep;
	const struct wall_task *list;
	size_t n, fresh;
	int ret;

	if (!l)
		return 0;
	wr->dt = l->ns ? now - l->ns : wr->period;
	l->ns = now;
	wr->nbuf = 0;
	/* the creations and frees before now make the list; BPF adds the tasks created
	 * after it to the run (a task created between the list and its walk would be
	 * missed at this tick, one that ends before its walk is skipped) */
	wr->list_ns = mono_ns();
	if (wall_drain_lives(wr->w))
		wr->run_errors++;
	if (now > WALL_FREES_KEPT_NS)
		walltasks_expire(l->live, now - WALL_FREES_KEPT_NS);
	list = walltasks_list(l->live, &n, &fresh);
	wr->listed_new += fresh;
	wr->nbuf = n;
	if (cap > WALL_MAX_TASKS)
		cap = WALL_MAX_TASKS;
	k = n < cap ? n : cap;
	if (k < n)
		wr->capped++;
	fit = tasks_that_fit(wr, l, k, n, procs_left, now);
	if (fit < k) {
		k = fit;
		wr->budgeted++;
	}
	walltasks_sample(list, n, k, wr->buf, wr->picked, rand_of, wr);
	/* the creations BPF adds are chosen at the listed tasks' rate and weigh as much */
	if (k == wr->nbuf) {
		wr->leaves = wr->sampled = 1;
		keep = 1ULL << 32;
	} else {
		wr->leaves = wr->nbuf;
		wr->sampled = k;
		keep = ((uint64_t)k << 32) / wr->nbuf;
	}
	wr->listed += wr->nbuf;
	wr->walked += k;
	wr->run_thread_ns = wr->run_task_ns = 0;
	ret = wall_run(wr->w, tg->t.pid, wr->buf, k, wr->list_ns, keep);
	flush_held(wr);
	wr->list_ns = 0;
	for (size_t i = 0; i < wr->ndeferred; i++)
		apply_life(wr, &wr->deferred[i]);
	wr->ndeferred = 0;
	run = mono_ns() - now;
	cpu = thread_cpu_ns() - cpu0;
	if (k) {
		/* the task walk alone when the samples tell it (each task sample's clock is
		 * read before its walk: from enough of them), and the rest of the run apart */
		if (k >= 8 && wr->run_task_ns > wr->run_thread_ns && wr->run_thread_ns)
			took = (wr->run_task_ns - wr->run_thread_ns) / k;
		else
			took = run / k;
		/* the CPU's share of it: a run preempted by other work (a loaded host) does
		 * not make its tasks cost more, and would cut the next ticks for nothing */
		if (cpu < run)
			took = (uint64_t)((double)took * cpu / run);
		l->task_ns = l->task_ns ? (3 * l->task_ns + took) / 4 : took;
		if (!l->task_ns)
			l->task_ns = 1;
	}
	if (cpu < run)
		run = cpu;
	rest = run > took * k ? run - took * k : 0;
	l->rest_ns = l->rest_ns ? (3 * l->rest_ns + rest) / 4 : rest;
	return ret;
}

static void tick(struct wallrec *wr)
{
	uint64_t now = mono_ns();

	/* a late tick stands for the whole interval since the previous one */
	if (now >= wr->next + wr->period)
		wr->late++;
	/* jittered by up to a fifth of the period either way: ticks locked in phase with a
	 * periodic workload would see only some of its states */
	while (wr->next <= now)
		wr->next += wr->period * 4 / 5 + next_rand(wr) % (wr->period * 2 / 5 + 1);
	wr->ticks++;
	wr->stopped = now;
	wr->deadline = now + wr->period * WALL_BUDGET_PCT / 100;
	for (size_t i = 0; i < wr->jn->ntargets; i++)
		if (tick_proc(wr, &wr->jn->targets[i], wr->jn->ntargets - i))
			wr->run_errors++;
	wr->tick_ns += mono_ns() - now;
}

static void *ticker(void *arg)
{
	struct wallrec *wr = arg;
	struct sched_param sp = { .sched_priority = 1 };
	struct timespec ts;

	/* Above every ordinary thread: on a busy host a tick that waits for a CPU comes when
	 * the target gives its CPU up, and a late tick weighs the interval before it as the
	 * state it finds, so waiting would outweigh computing. */
	wr->rt_err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	for (;;) {
		ts.tv_sec = wr->next / 1000000000ULL;
		ts.tv_nsec = wr->next % 1000000000ULL;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		pthread_mutex_lock(&wr->mu);
		if (wr->stop) {
			pthread_mutex_unlock(&wr->mu);
			return NULL;
		}
		tick(wr);
		pthread_mutex_unlock(&wr->mu);
	}
}

/* Seconds from this process's start (/proc/self/stat, in clock ticks since boot) to
 * now, -1 when unknown. */
static double since_exec(void)
{
	unsigned long long start;
	long hz = sysconf(_SC_CLK_TCK);
	struct timespec ts;

	if (hz <= 0 || proc_start_time(getpid(), &start) || clock_gettime(CLOCK_BOOTTIME, &ts))
		return -1;
	return ts.tv_sec + ts.tv_nsec / 1e9 - (double)start / hz;
}

int wallrec_start(struct wallrec *wr)
{
	int ret;

	wr->first_tick_s = since_exec();
	wr->started = wr->next = mono_ns();
	ret = pthread_create(&wr->thread, NULL, ticker, wr);
	if (ret)
		return -ret;
	wr->running = 1;
	return 0;
}

void wallrec_stop(struct wallrec *wr)
{
	if (!wr->running)
		return;
	pthread_mutex_lock(&wr->mu);
	wr->stop = 1;
	/* the time since the last tick is sampled too */
	tick(wr);
	pthread_mutex_unlock(&wr->mu);
	pthread_join(wr->thread, NULL);
	wr->running = 0;
}

void wallrec_print_stats(struct wallrec *wr, FILE *f)
{
	double elapsed = (wr->stopped - wr->started) / 1e9;
	struct wall_stats st;

	if (wall_read_stats(wr->w, &st))
		memset(&st, 0, sizeof(st));
	fprintf(f, "wall elapsed: %.3f s (first tick to last)\n", elapsed);
	if (wr->first_tick_s >= 0)
		fprintf(f, "wall first tick: %.2f s after the recorder started\n",
			wr->first_tick_s);
	else
		fprintf(f, "wall first tick: unknown (the recorder's start time unreadable)\n");
	fprintf(f, "wall ticks: %llu taken, %llu expected (%u Hz), %llu late\n",
		(unsigned long long)wr->ticks, (unsigned long long)(elapsed * wr->o.freq),
		wr->o.freq, (unsigned long long)wr->late);
	if (wr->rt_err)
		fprintf(f,
			"wall ticker: normal priority (SCHED_FIFO refused: %s): on a busy "
			"host late ticks weigh towards what runs when the recorder gets a CPU\n",
			strerror(wr->rt_err));
	else
		fprintf(f, "wall ticker: SCHED_FIFO priority 1\n");
	fprintf(f, "wall tick time: %llu us per tick (BPF and userspace)\n",
		(unsigned long long)(wr->ticks ? wr->tick_ns / wr->ticks / 1000 : 0));
	if (st.run_cnt)
		fprintf(f,
			"bpf run time per tick: %llu us (%llu runs: one per thread, one at the "
			"end)\n",
			(unsigned long long)(wr->ticks ? st.run_ns / wr->ticks / 1000 : 0),
			(unsigned long long)st.run_cnt);
	else
		fprintf(f, "bpf run time per tick: unavailable\n");
	fprintf(f, "wall thread samples: %llu\n", (unsigned long long)st.stat[WSTAT_THREADS]);
	fprintf(f, "wall task samples: %llu (ticks capped by --max-tasks: %llu)\n",
		(unsigned long long)st.stat[WSTAT_TASKS], (unsigned long long)wr->capped);
	fprintf(f,
		"wall tasks per tick: %.1f listed, %.1f walked (ticks cut to the time budget: "
		"%llu)\n",
		wr->ticks ? (double)wr->listed / wr->ticks : 0.0,
		wr->ticks ? (double)wr->walked / wr->ticks : 0.0, (unsigned long long)wr->budgeted);
	fprintf(f,
		"wall tasks listed since their creation: %.1f per tick (created %llu, freed "
		"%llu; out of memory %llu, malformed %llu)\n",
		wr->ticks ? (double)wr->listed_new / wr->ticks : 0.0, (unsigned long long)wr->born,
		(unsigned long long)wr->freed, (unsigned long long)wr->lives_nomem,
		(unsigned long long)st.bad_lives);
	fprintf(f,
		"wall tasks created after their tick's list was made, added to its walk: %llu "
		"(missed: %llu)\n",
		(unsigned long long)st.stat[WSTAT_BIRTHS],
		(unsigned long long)st.stat[WSTAT_BIRTHS_MISSED]);
	fprintf(f,
		"wall tasks skipped: %llu ended, %llu running (sampled as their thread), %llu "
		"done, %llu awaiting a task (drawn in its chain)\n",
		(unsigned long long)st.stat[WSTAT_TASK_GONE],
		(unsigned long long)st.stat[WSTAT_TASK_ACTIVE],
		(unsigned long long)st.stat[WSTAT_TASK_DONE],
		(unsigned long long)st.stat[WSTAT_TASK_AWAITS]);
	fprintf(f, "wall time: threads %.3f s, suspended tasks %.3f s; cpu time %.3f s\n",
		wr->wall_threads / 1e9, wr->wall_tasks / 1e9, wr->cpu_total / 1e9);
	fprintf(f,
		"wall tasks folded into thread work: %llu (%.3f s; not held, so not folded: "
		"%llu)\n",
		(unsigned long long)wr->folded, wr->folded_ns / 1e9,
		(unsigned long long)wr->hold_lost);
	fprintf(f,
		"wall task chains ended at an earlier walk of the tick: %llu, joined to it: "
		"%llu (not joined, shown [incomplete]: %llu)\n",
		(unsigned long long)st.stat[WSTAT_MEMO_HITS], (unsigned long long)wr->joined,
		(unsigned long long)wr->join_missing);
	fprintf(f, "wall tasks queued in a thread pool: %llu (suspended-task samples)\n",
		(unsigned long long)st.stat[WSTAT_QUEUED]);
	fprintf(f, "wall reads: %llu (%.1f per tick)\n", (unsigned long long)st.stat[WSTAT_READS],
		wr->ticks ? (double)st.stat[WSTAT_READS] / wr->ticks : 0.0);
	fprintf(f, "wall task names from cache: %llu, copied: %llu\n",
		(unsigned long long)st.stat[WSTAT_NAME_HITS],
		(unsigned long long)st.stat[WSTAT_NAME_COPIES]);
	fprintf(f, "wall no thread state: %llu\n", (unsigned long long)st.stat[WSTAT_NO_TSTATE]);
	fprintf(f, "wall read errors (walks found torn included): %llu\n",
		(unsigned long long)st.stat[WSTAT_READ_ERR]);
	fprintf(f, "wall truncated: %llu\n", (unsigned long long)st.stat[WSTAT_TRUNCATED]);
	fprintf(f, "wall lost: %llu (run errors %llu)\n",
		(unsigned long long)(st.stat[WSTAT_LOST] + st.bad_records),
		(unsigned long long)wr->run_errors);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A recording's start, loop, cuts and stop; see recorder.h. */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "recorder/recorder_impl.h"
#include "recorder/status.h"
#include "clock.h"
#include "errmsg.h"

/* exec, fork and exit events find processes; a /proc scan only backs them up */
#define SCAN_INTERVAL_MS 10000
/* ms between looks for a command's new descendants: each is sampled from the first scan
 * that finds its runtime initialised */
#define CMD_SCAN_MS 100

static void say(const char *prog, const char *fmt, va_list ap)
{
	status_clear();
	errmsg_v(prog, fmt, ap);
}

void recorder_say(struct recorder *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(a->o.prog, fmt, ap);
	va_end(ap);
}

void recorder_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(prog, fmt, ap);
	va_end(ap);
}

double recorder_now(void)
{
	return mono_s();
}

/* User and system CPU time of this process, s. */
double recorder_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void show_status(struct recorder *a, double elapsed)
{
	status_show(elapsed, a->recorded + profile_total(a->jn.prof), a->jn.ntargets,
		    recorder_lost(a));
}

/* Samples taken in tracked processes that are not in the profile. */
uint64_t recorder_lost(struct recorder *a)
{
	struct reader_totals t;

	reader_totals(a->reader, &t);
	return t.lost + a->jn.nomem + a->jn.unknown_pid;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static const struct procfilter no_filter;

static void on_sample(void *ctx, const struct py_sample *s, size_t size)
{
	struct recorder *a = ctx;

	joiner_sample(&a->jn, s, size);
	if (a->lc && !a->o.npids && !joiner_target(&a->jn, s->hdr.pid))
		lifecycle_examine(a->lc, s->hdr.pid);
}

/* The reader and what shares its maps: the tracker, wall mode, the lifecycle events. */
static int open_reader(struct recorder *a)
{
	struct reader_opts ro = { .kind = a->o.reader,
				  .wall = a->o.wall,
				  .freq = a->o.freq,
				  .max_tasks = a->o.max_tasks,
				  .origins = a->o.origins,
				  .run_stats = a->o.run_stats,
				  .verbose = a->o.verbose,
				  .native_bytes = a->o.native_bytes,
				  .jn = &a->jn,
				  .cb = on_sample,
				  .ctx = a };
	struct lifecycle_ops ops = { .examine = targets_examine,
				     .ended = targets_ended,
				     .tracked = targets_tracked,
				     .ctx = a };
	char why[512];
	int ret;

	a->reader = reader_new(&ro, why, sizeof(why));
	if (!a->reader) {
		recorder_say(a, "%s", why);
		return EXIT_ENV;
	}
	a->tracker = a->reader->tracker;
	/* before the first scan, so that no process starts unseen in between */
	a->scan_ms = SCAN_INTERVAL_MS;
	ret = reader_lifecycle(a->reader, &a->lc, &ops, why, sizeof(why));
	if (ret && ret != READER_UNSUPPORTED)
		recorder_say(a, "warning: %s; processes are found by scanning /proc every second",
			     why);
	if (ret)
		a->scan_ms = 1000;
	return 0;
}

/* The first targets: the listed ones, the command (started, not yet run), or all. */
static int find_targets(struct recorder *a)
{
	char why[512];

	if (a->o.npids) {
		for (int i = 0; i < a->o.npids; i++)
			targets_track(a, &a->listed[i]);
		if (a->refused && !a->jn.ntargets)
			return EXIT_TARGET;
	} else if (a->o.cmd) {
		/* it waits, and execs once sampling runs */
		if (command_spawn(&a->cmd, a->o.cmd, why, sizeof(why))) {
			recorder_say(a, "%s", why);
			return EXIT_ENV;
		}
	} else {
		a->disc = discover_new(getpid());
		if (!a->disc || discover_scan(a->disc, targets_inspect, a)) {
			recorder_say(a, "cannot scan /proc: %s", strerror(errno));
			return EXIT_ENV;
		}
	}
	return 0;
}

static int start_sampling(struct recorder *a)
{
	char why[512];
	int ret;

	/* tasks already running are known before the first sample */
	targets_refresh(a, 0);
	if (reader_start(a->reader, why, sizeof(why))) {
		recorder_say(a, "%s", why);
		return EXIT_ENV;
	}
	if (a->cmd && !(a->o.stop && *a->o.stop)) {
		ret = command_release(a->cmd, why, sizeof(why));
		if (ret) {
			recorder_say(a, "%s", why);
			return ret == -ENOENT ? 127 : 126;
		}
	}
	/* listed processes that exited before the exit tracepoint was attached are found
	 * by targets_reap(): look often, there are few */
	if (a->o.npids)
		a->scan_ms = 1000;
	a->start = a->cut_at = recorder_now();
	a->cpu_start = recorder_cpu();
	a->cut_ns = realtime_ns();
	a->next_scan = a->start + a->scan_ms / 1000.0;
	a->next_status = a->start + 1;
	if (!a->o.no_status)
		status_init(a->o.prog);
	return 0;
}

int recorder_start(struct recorder **out, const struct recorder_opts *o)
{
	struct recorder *a = calloc(1, sizeof(*a));
	char why[512];
	int ret;

	*out = NULL;
	if (!a) {
		fprintf(stderr, "%s: out of memory\n", o->prog);
		return EXIT_ENV;
	}
	a->o = *o;
	if (!a->o.filter)
		a->o.filter = &no_filter;
	/* ELF sections read at each examination are large and short-lived: a fixed
	 * threshold keeps them in mmap, returned on free, instead of fragmenting the heap
	 * of a long recording */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	if (reader_check_env(a->o.reader, why, sizeof(why))) {
		recorder_say(a, "%s", why);
		free(a);
		return EXIT_ENV;
	}
	a->listed = o->npids ? calloc(o->npids, sizeof(*a->listed)) : NULL;
	if (o->npids && !a->listed) {
		recorder_say(a, "out of memory");
		free(a);
		return EXIT_ENV;
	}
	if (o->npids && targets_check(a, a->listed)) {
		free(a->listed);
		free(a);
		return EXIT_TARGET;
	}
	if (joiner_init(&a->jn)) {
		recorder_say(a, "out of memory");
		free(a->listed);
		free(a);
		return EXIT_ENV;
	}
	if (o->native_bytes && !(a->jn.unw = unwinder_new(o->native_all))) {
		recorder_say(a, "out of memory");
		joiner_fini(&a->jn);
		free(a->listed);
		free(a);
		return EXIT_ENV;
	}
	a->jn.native_all = o->native_all;
	a->jn.task_ids = o->task_ids;
	profile_set_period(a->jn.prof, 1000000000ull / o->freq);
	symtab_set_limit(a->jn.syms, o->mem_per_process);
	a->jn.stack_limit = o->mem_per_process;
	snapshot_init(&a->snap, recorder_now(),
		      o->snapshot_budget > 0 ? o->snapshot_budget : SNAPSHOT_BUDGET);
	ret = open_reader(a);
	if (!ret && a->o.reader_open)
		a->o.reader_open();
	if (ret || (ret = find_targets(a)) || (ret = start_sampling(a))) {
		recorder_free(a);
		return ret;
	}
	*out = a;
	return 0;
}

enum recorder_end recorder_run(struct recorder *a, double seconds, volatile sig_atomic_t *stop)
{
	double until = seconds > 0 ? recorder_now() + seconds : 0;
	int rc;

	while (!*stop) {
		double t = recorder_now();
		int wait_ms = 100;

		if (until && t >= until)
			return RECORDER_TIME;
		if (until && (until - t) * 1000 < wait_ms)
			wait_ms = (int)((until - t) * 1000) + 1;
		/* a tenth of a second at most: new processes each take a first snapshot and
		 * a probe attach (tens of ms) while the ring buffer fills */
		targets_refresh(a, 0.1);
		rc = reader_poll(a->reader, wait_ms);
		if (rc) {
			recorder_say(a, "reading samples: %s", strerror(-rc));
			return RECORDER_FAILED;
		}
		/* events lost: look at /proc at once */
		if (a->lc && lifecycle_run(a->lc))
			a->next_scan = 0;
		if (a->o.npids && !a->jn.ntargets && !(a->lc && lifecycle_pending(a->lc))) {
			recorder_say(a, "all target processes exited; recording ended");
			return RECORDER_ENDED;
		}
		if (recorder_now() >= a->next_scan) {
			a->next_scan = recorder_now() + a->scan_ms / 1000.0;
			reader_poll(a->reader, 0);
			targets_reap(a, a->o.npids > 0);
			if (a->disc)
				discover_scan(a->disc, targets_inspect, a);
		}
		if (a->cmd) {
			command_scan(a->cmd, CMD_SCAN_MS, targets_inspect, targets_exec, a);
			if (command_exited(a->cmd))
				return RECORDER_ENDED;
		}
		if (recorder_now() >= a->next_status) {
			a->next_status += 1;
			show_status(a, recorder_now() - a->start);
		}
	}
	return RECORDER_SIGNAL;
}

struct profile *recorder_cut(struct recorder *a, struct recorder_cut *info)
{
	struct profile *p;
	uint64_t lost, now = realtime_ns();
	double at = recorder_now();

	/* what the reader took so far belongs to this cut: records wait in the ring
	 * buffer until polled */
	if (!a->stopped)
		reader_poll(a->reader, 0);
	/* a reader's own thread (wall mode's ticks) adds samples too; the callback runs
	 * only in polls, which are not running now */
	reader_lock(a->reader);
	lost = a->stopped ? a->lost : recorder_lost(a);
	p = joiner_cut(&a->jn);
	if (p) {
		profile_set_lost(p, lost - a->cut_lost);
		info->start_ns = a->cut_ns;
		info->duration_ns = a->stopped && a->start + a->elapsed < at
					    ? (uint64_t)((a->start + a->elapsed - a->cut_at) * 1e9)
					    : (uint64_t)((at - a->cut_at) * 1e9);
		info->lost = lost - a->cut_lost;
		a->recorded += profile_total(p);
		a->cut_lost = lost;
		a->cut_ns = now;
		a->cut_at = at;
	}
	reader_unlock(a->reader);
	return p;
}

void recorder_stop(struct recorder *a)
{
	if (a->stopped)
		return;
	reader_stop(a->reader);
	a->stopped = true;
	a->elapsed = recorder_now() - a->start;
	status_clear();
	if (a->cmd && !command_pythons(a->cmd))
		recorder_say(a, "warning: no Python process ran under '%s'", a->o.cmd[0]);
	a->lost = recorder_lost(a);
	if (a->unexamined)
		recorder_say(a, "warning: %u process%s could not be examined (%s)%s", a->unexamined,
			     a->unexamined > 1 ? "es" : "", a->first_unexamined,
			     a->unexamined > 1 && !a->o.verbose ? "; -v lists them" : "");
}

void recorder_totals(struct recorder *a, struct recorder_totals *t)
{
	struct reader_totals rt;

	reader_totals(a->reader, &rt);
	t->lost = a->stopped ? a->lost : recorder_lost(a);
	t->recorded = a->recorded + profile_total(a->jn.prof);
	t->unknown_frames = a->jn.unknown_frames;
	t->taken = rt.taken;
}

size_t recorder_ntargets(const struct recorder *a)
{
	return a->jn.ntargets;
}

size_t recorder_targets(const struct recorder *a, struct recorder_target *out, size_t max)
{
	for (size_t i = 0; i < a->jn.ntargets && i < max; i++) {
		const struct target *tg = &a->jn.targets[i];

		out[i] = (struct recorder_target){ .pid = tg->t.pid,
						   .samples = tg->samples,
						   .lost = tg->lost };
		snprintf(out[i].version, sizeof(out[i].version), "%s", tg->t.version_str);
	}
	return a->jn.ntargets;
}

int recorder_command_status(struct recorder *a, int sig, double grace)
{
	int st;

	if (!a->cmd)
		return -1;
	st = command_finish(a->cmd, sig ? grace : 0);
	return st >= 0 ? st : 128 + sig;
}

void recorder_free(struct recorder *a)
{
	if (!a)
		return;
	lifecycle_close(a->lc);
	command_free(a->cmd);
	discover_free(a->disc);
	reader_free(a->reader);
	joiner_fini(&a->jn);
	free(a->listed);
	free(a);
}

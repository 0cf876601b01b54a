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

#include "recorder/recorder.h"
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

void recorder_say(struct recorder *rec, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(rec->o.prog, fmt, ap);
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

static void show_status(struct recorder *rec, double elapsed)
{
	status_show(elapsed, rec->recorded + profile_total(rec->jn.prof), rec->jn.ntargets,
		    recorder_lost(rec));
}

/* Samples taken in tracked processes that are not in the profile. */
uint64_t recorder_lost(struct recorder *rec)
{
	struct reader_totals t;

	reader_totals(rec->reader, &t);
	return t.lost + rec->jn.nomem + rec->jn.unknown_pid;
}

static const struct procfilter no_filter;

static void on_sample(void *ctx, const struct py_sample *s, size_t size)
{
	struct recorder *rec = ctx;

	joiner_sample(&rec->jn, s, size);
	if (rec->lc && !rec->o.npids && !joiner_target(&rec->jn, s->hdr.pid))
		lifecycle_examine(rec->lc, s->hdr.pid);
}

/* The reader and what shares its maps: the tracker, wall mode, the lifecycle events. */
static int open_reader(struct recorder *rec)
{
	struct reader_opts ro = { .kind = rec->o.reader,
				  .wall = rec->o.wall,
				  .freq = rec->o.freq,
				  .max_tasks = rec->o.max_tasks,
				  .origins = rec->o.origins,
				  .run_stats = rec->o.run_stats,
				  .verbose = rec->o.verbose,
				  .native_bytes = rec->o.native_bytes,
				  .jn = &rec->jn,
				  .cb = on_sample,
				  .ctx = rec };
	struct lifecycle_ops ops = { .examine = targets_examine,
				     .ended = targets_ended,
				     .tracked = targets_tracked,
				     .ctx = rec };
	char why[512];
	int ret;

	rec->reader = reader_new(&ro, why, sizeof(why));
	if (!rec->reader) {
		recorder_say(rec, "%s", why);
		return EXIT_ENV;
	}
	rec->tracker = rec->reader->tracker;
	/* before the first scan, so that no process starts unseen in between */
	rec->scan_ms = SCAN_INTERVAL_MS;
	ret = reader_lifecycle(rec->reader, &rec->lc, &ops, why, sizeof(why));
	if (ret && ret != READER_UNSUPPORTED)
		recorder_say(rec, "warning: %s; processes are found by scanning /proc every second",
			     why);
	if (ret)
		rec->scan_ms = 1000;
	return 0;
}

/* The first targets: the listed ones, the command (started, not yet run), or all. */
static int find_targets(struct recorder *rec)
{
	char why[512];

	if (rec->o.npids) {
		for (int i = 0; i < rec->o.npids; i++)
			targets_track(rec, &rec->listed[i]);
		if (rec->refused && !rec->jn.ntargets)
			return EXIT_TARGET;
	} else if (rec->o.cmd) {
		/* it waits, and execs once sampling runs */
		if (command_spawn(&rec->cmd, rec->o.cmd, why, sizeof(why))) {
			recorder_say(rec, "%s", why);
			return EXIT_ENV;
		}
	} else {
		rec->disc = discover_new(getpid());
		if (!rec->disc || discover_scan(rec->disc, targets_inspect, rec)) {
			recorder_say(rec, "cannot scan /proc: %s", strerror(errno));
			return EXIT_ENV;
		}
	}
	return 0;
}

static int start_sampling(struct recorder *rec)
{
	char why[512];
	int ret;

	/* tasks already running are known before the first sample */
	targets_refresh(rec, 0);
	if (reader_start(rec->reader, why, sizeof(why))) {
		recorder_say(rec, "%s", why);
		return EXIT_ENV;
	}
	if (rec->cmd && !(rec->o.stop && *rec->o.stop)) {
		ret = command_release(rec->cmd, why, sizeof(why));
		if (ret) {
			recorder_say(rec, "%s", why);
			return ret == -ENOENT ? 127 : 126;
		}
	}
	/* listed processes that exited before the exit tracepoint was attached are found
	 * by targets_reap(): look often, there are few */
	if (rec->o.npids)
		rec->scan_ms = 1000;
	rec->start = rec->cut_at = recorder_now();
	rec->cpu_start = recorder_cpu();
	rec->cut_ns = realtime_ns();
	rec->next_scan = rec->start + rec->scan_ms / 1000.0;
	rec->next_status = rec->start + 1;
	if (!rec->o.no_status)
		status_init(rec->o.prog);
	return 0;
}

int recorder_start(struct recorder **out, const struct recorder_opts *o)
{
	struct recorder *rec = calloc(1, sizeof(*rec));
	char why[512];
	int ret;

	*out = NULL;
	if (!rec) {
		fprintf(stderr, "%s: out of memory\n", o->prog);
		return EXIT_ENV;
	}
	rec->o = *o;
	if (!rec->o.filter)
		rec->o.filter = &no_filter;
	/* ELF sections read at each examination are large and short-lived: a fixed
	 * threshold keeps them in mmap, returned on free, instead of fragmenting the heap
	 * of a long recording */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	if (reader_check_env(rec->o.reader, why, sizeof(why))) {
		recorder_say(rec, "%s", why);
		free(rec);
		return EXIT_ENV;
	}
	rec->listed = o->npids ? calloc(o->npids, sizeof(*rec->listed)) : NULL;
	if (o->npids && !rec->listed) {
		recorder_say(rec, "out of memory");
		free(rec);
		return EXIT_ENV;
	}
	if (o->npids && targets_check(rec, rec->listed)) {
		free(rec->listed);
		free(rec);
		return EXIT_TARGET;
	}
	if (joiner_init(&rec->jn)) {
		recorder_say(rec, "out of memory");
		free(rec->listed);
		free(rec);
		return EXIT_ENV;
	}
	if (o->native_bytes && !(rec->jn.unw = unwinder_new(o->native_all))) {
		recorder_say(rec, "out of memory");
		joiner_fini(&rec->jn);
		free(rec->listed);
		free(rec);
		return EXIT_ENV;
	}
	rec->jn.native_all = o->native_all;
	rec->jn.task_ids = o->task_ids;
	profile_set_period(rec->jn.prof, 1000000000ull / o->freq);
	symtab_set_limit(rec->jn.syms, o->mem_per_process);
	rec->jn.stack_limit = o->mem_per_process;
	snapshot_init(&rec->snap, recorder_now(),
		      o->snapshot_budget > 0 ? o->snapshot_budget : SNAPSHOT_BUDGET);
	ret = open_reader(rec);
	if (!ret && rec->o.reader_open)
		rec->o.reader_open();
	if (ret || (ret = find_targets(rec)) || (ret = start_sampling(rec))) {
		recorder_free(rec);
		return ret;
	}
	*out = rec;
	return 0;
}

enum recorder_end recorder_run(struct recorder *rec, double seconds, volatile sig_atomic_t *stop)
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
		targets_refresh(rec, 0.1);
		rc = reader_poll(rec->reader, wait_ms);
		if (rc) {
			recorder_say(rec, "reading samples: %s", strerror(-rc));
			return RECORDER_FAILED;
		}
		/* events lost: look at /proc at once */
		if (rec->lc && lifecycle_run(rec->lc))
			rec->next_scan = 0;
		if (rec->o.npids && !rec->jn.ntargets && !(rec->lc && lifecycle_pending(rec->lc))) {
			recorder_say(rec, "all target processes exited; recording ended");
			return RECORDER_ENDED;
		}
		if (recorder_now() >= rec->next_scan) {
			rec->next_scan = recorder_now() + rec->scan_ms / 1000.0;
			reader_poll(rec->reader, 0);
			targets_reap(rec, rec->o.npids > 0);
			if (rec->disc)
				discover_scan(rec->disc, targets_inspect, rec);
		}
		if (rec->cmd) {
			command_scan(rec->cmd, CMD_SCAN_MS, targets_inspect, targets_exec, rec);
			if (command_exited(rec->cmd))
				return RECORDER_ENDED;
		}
		if (recorder_now() >= rec->next_status) {
			rec->next_status += 1;
			show_status(rec, recorder_now() - rec->start);
		}
	}
	return RECORDER_SIGNAL;
}

struct profile *recorder_cut(struct recorder *rec, struct recorder_cut *info)
{
	struct profile *p;
	uint64_t lost, now = realtime_ns();
	double at = recorder_now();

	/* what the reader took so far belongs to this cut: records wait in the ring
	 * buffer until polled */
	if (!rec->stopped)
		reader_poll(rec->reader, 0);
	/* a reader's own thread (wall mode's ticks) adds samples too; the callback runs
	 * only in polls, which are not running now */
	reader_lock(rec->reader);
	lost = rec->stopped ? rec->lost : recorder_lost(rec);
	p = joiner_cut(&rec->jn);
	if (p) {
		profile_set_lost(p, lost - rec->cut_lost);
		info->start_ns = rec->cut_ns;
		info->duration_ns =
			rec->stopped && rec->start + rec->elapsed < at
				? (uint64_t)((rec->start + rec->elapsed - rec->cut_at) * 1e9)
				: (uint64_t)((at - rec->cut_at) * 1e9);
		info->lost = lost - rec->cut_lost;
		rec->recorded += profile_total(p);
		rec->cut_lost = lost;
		rec->cut_ns = now;
		rec->cut_at = at;
	}
	reader_unlock(rec->reader);
	return p;
}

void recorder_stop(struct recorder *rec)
{
	if (rec->stopped)
		return;
	reader_stop(rec->reader);
	rec->stopped = true;
	rec->elapsed = recorder_now() - rec->start;
	status_clear();
	if (rec->cmd && !command_pythons(rec->cmd))
		recorder_say(rec, "warning: no Python process ran under '%s'", rec->o.cmd[0]);
	rec->lost = recorder_lost(rec);
	if (rec->unexamined)
		recorder_say(rec, "warning: %u process%s could not be examined (%s)%s",
			     rec->unexamined, rec->unexamined > 1 ? "es" : "",
			     rec->first_unexamined,
			     rec->unexamined > 1 && !rec->o.verbose ? "; -v lists them" : "");
}

void recorder_totals(struct recorder *rec, struct recorder_totals *t)
{
	struct reader_totals rt;

	reader_totals(rec->reader, &rt);
	t->lost = rec->stopped ? rec->lost : recorder_lost(rec);
	t->recorded = rec->recorded + profile_total(rec->jn.prof);
	t->unknown_frames = rec->jn.unknown_frames;
	t->taken = rt.taken;
}

size_t recorder_ntargets(const struct recorder *rec)
{
	return rec->jn.ntargets;
}

size_t recorder_targets(const struct recorder *rec, struct recorder_target *out, size_t max)
{
	for (size_t i = 0; i < rec->jn.ntargets && i < max; i++) {
		const struct target *tg = &rec->jn.targets[i];

		out[i] = (struct recorder_target){ .pid = tg->t.pid,
						   .samples = tg->samples,
						   .lost = tg->lost };
		snprintf(out[i].version, sizeof(out[i].version), "%s", tg->t.version_str);
	}
	return rec->jn.ntargets;
}

int recorder_command_status(struct recorder *rec, int sig, double grace)
{
	int st;

	if (!rec->cmd)
		return -1;
	st = command_finish(rec->cmd, sig ? grace : 0);
	return st >= 0 ? st : 128 + sig;
}

void recorder_free(struct recorder *rec)
{
	if (!rec)
		return;
	lifecycle_close(rec->lc);
	command_free(rec->cmd);
	discover_free(rec->disc);
	reader_free(rec->reader);
	joiner_fini(&rec->jn);
	free(rec->listed);
	free(rec);
}

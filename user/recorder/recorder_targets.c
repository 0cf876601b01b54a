// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Which processes a recording follows, and their asyncio tasks: tracking and untracking
 * targets, the examination callbacks, task snapshots and creation probes. */
#include <string.h>
#include <unistd.h>

#include "process/procfilter.h"
#include "process/procfs.h"
#include "process/procmaps.h"
#include "recorder/recorder.h"
#include "recorder/recorder_impl.h"
#include "recorder/status.h"

/* failed task reads (1 s apart) before a process is shown without tasks */
#define ASYNC_TRIES 4
/* snapshots at which a live process's task-creation probe failed before a warning */
#define ORIGIN_TRIES 3

static bool alive(const struct target *tg)
{
	unsigned long long start;

	return !proc_start_time(tg->t.pid, &start) && start == tg->t.start_time;
}

/* The same program as when it was examined: not exited, its pid not reused, and not
 * exec'd (the runtime's mapping still names the same file). */
static bool same_program(const struct target *tg)
{
	const struct procmap *pm;
	struct procmaps maps;
	bool same;

	if (!alive(tg) || procmaps_read(tg->t.pid, &maps))
		return false;
	pm = procmaps_find(&maps, tg->t.proc.runtime);
	same = pm && !strcmp(pm->path, tg->t.binary);
	procmaps_free(&maps);
	return same;
}

/* Tasks created from now on are linked to their creators by a uprobe: true once it is
 * attached. */
static bool watch_creations(struct recorder *rec, struct target *tg)
{
	int ret = reader_watch_creations(rec->reader, &tg->t);

	/* a reader without creation probes (the userspace ones) is not asked again */
	if (!ret || ret == READER_UNSUPPORTED) {
		tg->origins = 1;
		return !ret;
	}
	/* An exiting interpreter tears its modules down under the reads (EINVAL, EAGAIN
	 * from half-cleared dicts), an exec or exit takes its files and maps away (ENOENT,
	 * ESRCH): whatever the error, a process that is no longer the same program is gone,
	 * not a failure. A live one is tried again at its next snapshots before a warning. */
	if (!same_program(tg)) {
		tg->origins = 1;
		rec->origins_gone++;
		return false;
	}
	if (++tg->origin_tries < ORIGIN_TRIES)
		return false;
	tg->origins = 1;
	recorder_say(
		rec,
		"warning: pid %d: cannot watch task creation (%s); tasks whose creator returned "
		"are shown as roots",
		tg->t.pid, strerror(-ret));
	if (!rec->origins_off++)
		snprintf(rec->origins_off_why, sizeof(rec->origins_off_why), "pid %d: %s",
			 tg->t.pid, strerror(-ret));
	return false;
}

/* Reads the asyncio tasks of the targets that are due, so BPF can tell which task runs
 * and who awaits it. Snapshots are paced (see snapshot_due) and share a CPU budget; a
 * pass stops after max_s seconds (0: none) so that samples are drained in between. */
void targets_refresh(struct recorder *rec, double max_s)
{
	double t = recorder_now();
	size_t n = rec->jn.ntargets, first = rec->snap.next;

	snapshot_budget_fill(&rec->snap, t);
	for (size_t k = 0; k < n && !(max_s && recorder_now() - t > max_s); k++) {
		/* start where the last pass stopped: every process gets its turn */
		struct target *tg = &rec->jn.targets[(first + k) % n];
		double cpu;
		char why[512];
		int ret;

		if (tg->async_off || !snapshot_due(&tg->snap, tg->samples, t))
			continue;
		/* a process never read goes ahead of the budget (and is charged to it): until
		 * then none of its samples can be in a task */
		if (rec->snap.tokens <= 0 && !snapshot_first(&tg->snap))
			continue;
		rec->snap.next = (first + k + 1) % n;
		cpu = cpu_s();
		ret = tracker_refresh(rec->tracker, &tg->t, why, sizeof(why));
		snapshot_done(&rec->snap, &tg->snap, tg->samples, recorder_now(), cpu_s() - cpu);
		if (ret < 0 && !alive(tg))
			continue; /* exited: targets_reap() says so */
		/* a process caught as it starts may not have built its modules yet */
		if (ret < 0 && ++tg->async_fails < ASYNC_TRIES) {
			tg->snap.next_refresh = recorder_now() + 1;
			continue;
		}
		if (ret < 0) {
			tg->async_off = 1;
			recorder_say(rec, "warning: %s; its stacks are shown without asyncio tasks",
				     why);
			if (!rec->tasks_off++)
				snprintf(rec->tasks_off_why, sizeof(rec->tasks_off_why), "%s", why);
			continue;
		}
		tg->async_fails = 0;
		/* wall mode watches creations with --no-origins too: its ticks list new tasks */
		if (ret && !tg->origins && (rec->o.origins || rec->o.wall)) {
			/* a task created between that snapshot and the probe is in neither: read
			 * again now that the probe is in place, not at the next paced turn */
			if (watch_creations(rec, tg) &&
			    tracker_refresh(rec->tracker, &tg->t, why, sizeof(why)) < 0)
				tg->snap.next_refresh = recorder_now();
		}
		reader_tasks_read(rec->reader, tg->t.pid);
	}
}

/* Where pid runs, and whether the filters take it. */
static bool place_ok(struct recorder *rec, pid_t pid, const char *comm, struct proc_place *pl)
{
	if (proc_place_read(pid, pl)) {
		memset(pl, 0, sizeof(*pl));
		pl->ns_pid = pid;
	}
	return procfilter_match(rec->o.filter, comm, pl);
}

static void track_locked(struct recorder *rec, const struct py_target *t)
{
	struct proc_place pl;
	struct target *tg;
	char why[512];
	int ret;

	if (!place_ok(rec, t->pid, t->comm, &pl)) {
		rec->filtered++;
		return;
	}
	if (rec->lc)
		lifecycle_settle(rec->lc, t->pid);
	tg = joiner_add_target(&rec->jn, t);
	if (!tg || joiner_place_target(&rec->jn, tg, &pl, rec->o.container_frame)) {
		if (tg)
			joiner_del_target(&rec->jn, t->pid);
		recorder_say(rec, "pid %d: out of memory", t->pid);
		return;
	}
	ret = reader_add(rec->reader, t, why, sizeof(why));
	if (ret) {
		recorder_say(rec, "%s", why);
		rec->refused += ret == READER_REFUSED;
		joiner_del_target(&rec->jn, t->pid);
		return;
	}
	/* 3.12+ where the CPU sampler must read every code object: slower, so said */
	if (rec->o.reader == READER_BPF && !rec->o.wall && t->code_why[0] &&
	    !rec->code_read++)
		snprintf(rec->code_read_why, sizeof(rec->code_read_why), "pid %d: %s", t->pid,
			 t->code_why);
	if (rec->o.verbose) {
		status_clear();
		fprintf(stderr, "%s: profiling pid %d (%s, Python %s, %s%s%s)\n", rec->o.prog,
			t->pid, t->comm, t->version_str, t->binary,
			pl.label[0] ? ", container " : "", pl.label);
	}
}

/* A reader's own thread (wall mode's ticks) may read the targets. */
void targets_track(struct recorder *rec, const struct py_target *t)
{
	reader_lock(rec->reader);
	track_locked(rec, t);
	reader_unlock(rec->reader);
}

/* Whether pid (this incarnation of it) was warned about already: a scan and an event
 * may both examine it. */
static bool warned_before(struct recorder *rec, pid_t pid)
{
	unsigned long long start;
	size_t i;

	if (proc_start_time(pid, &start))
		start = 0;
	for (i = 0; i < WARNED; i++)
		if (rec->warned[i].pid == pid && rec->warned[i].start == start)
			return true;
	rec->warned[rec->nwarned++ % WARNED] = (struct warned){ .pid = pid, .start = start };
	return false;
}

static void found(struct recorder *rec, pid_t pid, enum pyproc_status st, const struct py_target *t,
		  const char *why)
{
	if (st == PYPROC_OK) {
		targets_track(rec, t);
	} else if (st == PYPROC_UNSUPPORTED) {
		if (!warned_before(rec, pid))
			recorder_say(rec, "warning: %s; skipped", why);
	} else {
		/* unreadable processes are usually not Python (e.g. another namespace's
		 * init): one summary at the end, each with -v */
		if (!rec->unexamined++)
			snprintf(rec->first_unexamined, sizeof(rec->first_unexamined), "%s", why);
		if (rec->o.verbose)
			recorder_say(rec, "warning: %s; skipped", why);
	}
}

static void untrack(struct recorder *rec, pid_t pid)
{
	reader_lock(rec->reader);
	reader_del(rec->reader, pid);
	tracker_forget(rec->tracker, pid);
	joiner_del_target(&rec->jn, pid);
	if (rec->lc)
		lifecycle_ended(rec->lc, pid);
	reader_unlock(rec->reader);
}

static bool listed(const struct recorder_opts *o, pid_t pid)
{
	for (int i = 0; i < o->npids; i++)
		if (o->pids[i] == pid)
			return true;
	return false;
}

/* A process a /proc scan or a command's scan finds: tracked if it runs a supported
 * Python, warned about if it cannot be read. */
enum pyproc_status targets_inspect(void *ctx, pid_t pid)
{
	struct py_target t;
	enum pyproc_status st;
	char why[512];

	st = pyproc_inspect(pid, &t, why, sizeof(why));
	if (st != PYPROC_NOT_READY && st != PYPROC_GONE && st != PYPROC_NOT_PYTHON)
		found(ctx, pid, st, &t, why);
	return st;
}

/* A process the kernel reports new (exec, fork) or a sample shows unknown. */
enum pyproc_status targets_examine(void *ctx, pid_t pid)
{
	struct recorder *rec = ctx;
	struct proc_place pl;
	char comm[TASK_COMM_LEN];

	/* a command's descendants are found by its own scan */
	if (pid == getpid() || rec->cmd || (rec->o.npids && !listed(&rec->o, pid)))
		return PYPROC_NOT_PYTHON;
	/* the filters are cheaper than an inspection */
	if (!procfilter_empty(rec->o.filter) &&
	    (proc_comm(pid, comm, sizeof(comm)) || !place_ok(rec, pid, comm, &pl)))
		return PYPROC_NOT_PYTHON;
	return targets_inspect(rec, pid);
}

void targets_ended(void *ctx, pid_t pid, bool exec)
{
	struct recorder *rec = ctx;

	if (!joiner_target(&rec->jn, pid))
		return;
	if (rec->o.npids && !exec)
		recorder_say(rec, "pid %d exited during the recording", pid);
	if (rec->o.verbose && exec)
		recorder_say(rec, "pid %d ran exec: examining its new image", pid);
	untrack(rec, pid);
}

bool targets_tracked(void *ctx, pid_t pid)
{
	return joiner_target(&((struct recorder *)ctx)->jn, pid) != NULL;
}

/* A command's descendant exec'd: what is known of its former image is stale. */
void targets_exec(void *ctx, pid_t pid)
{
	struct recorder *rec = ctx;

	if (joiner_target(&rec->jn, pid))
		untrack(rec, pid);
}

/* Stops tracking processes that have exited (or whose pid now names another process). */
void targets_reap(struct recorder *rec, bool explicit_pids)
{
	for (size_t i = 0; i < rec->jn.ntargets;) {
		struct target *tg = &rec->jn.targets[i];
		pid_t pid = tg->t.pid;

		if (alive(tg)) {
			i++;
			continue;
		}
		if (explicit_pids)
			recorder_say(rec, "pid %d exited during the recording", pid);
		untrack(rec, pid);
	}
}

int targets_check(struct recorder *rec, struct py_target *targets)
{
	int bad = 0;

	for (int i = 0; i < rec->o.npids; i++) {
		struct proc_place pl;
		char why[512];

		if (pyproc_inspect(rec->o.pids[i], &targets[i], why, sizeof(why)) != PYPROC_OK) {
			recorder_say(rec, "%s", why);
			bad++;
		} else if (!procfilter_empty(rec->o.filter) &&
			   (proc_place_read(rec->o.pids[i], &pl) ||
			    !procfilter_match(rec->o.filter, targets[i].comm, &pl))) {
			recorder_say(rec, "pid %d: does not match --container, --cgroup or --comm",
				     rec->o.pids[i]);
			bad++;
		}
	}
	return bad;
}

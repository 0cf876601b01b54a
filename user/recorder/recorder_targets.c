// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Which processes a recording follows, and their asyncio tasks: tracking and untracking
 * targets, the examination callbacks, task snapshots and creation probes. */
#include <string.h>
#include <unistd.h>

#include "process/procfilter.h"
#include "process/procfs.h"
#include "process/procmaps.h"
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
static bool watch_creations(struct recorder *a, struct target *tg)
{
	int ret = reader_watch_creations(a->reader, &tg->t);

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
		a->origins_gone++;
		return false;
	}
	if (++tg->origin_tries < ORIGIN_TRIES)
		return false;
	tg->origins = 1;
	recorder_say(
		a,
		"warning: pid %d: cannot watch task creation (%s); tasks whose creator returned "
		"are shown as roots",
		tg->t.pid, strerror(-ret));
	if (!a->origins_off++)
		snprintf(a->origins_off_why, sizeof(a->origins_off_why), "pid %d: %s", tg->t.pid,
			 strerror(-ret));
	return false;
}

/* Reads the asyncio tasks of the targets that are due, so BPF can tell which task runs
 * and who awaits it. Snapshots are paced (see snapshot_due) and share a CPU budget; a
 * pass stops after max_s seconds (0: none) so that samples are drained in between. */
void targets_refresh(struct recorder *a, double max_s)
{
	double t = recorder_now();
	size_t n = a->rec.ntargets, first = a->snap.next;

	snapshot_budget_fill(&a->snap, t);
	for (size_t k = 0; k < n && !(max_s && recorder_now() - t > max_s); k++) {
		/* start where the last pass stopped: every process gets its turn */
		struct target *tg = &a->rec.targets[(first + k) % n];
		double cpu;
		char why[512];
		int ret;

		if (tg->async_off || !snapshot_due(&tg->snap, tg->samples, t))
			continue;
		/* a process never read goes ahead of the budget (and is charged to it): until
		 * then none of its samples can be in a task */
		if (a->snap.tokens <= 0 && !snapshot_first(&tg->snap))
			continue;
		a->snap.next = (first + k + 1) % n;
		cpu = cpu_s();
		ret = tracker_refresh(a->tracker, &tg->t, why, sizeof(why));
		snapshot_done(&a->snap, &tg->snap, tg->samples, recorder_now(), cpu_s() - cpu);
		if (ret < 0 && !alive(tg))
			continue; /* exited: targets_reap() says so */
		/* a process caught as it starts may not have built its modules yet */
		if (ret < 0 && ++tg->async_fails < ASYNC_TRIES) {
			tg->snap.next_refresh = recorder_now() + 1;
			continue;
		}
		if (ret < 0) {
			tg->async_off = 1;
			recorder_say(a, "warning: %s; its stacks are shown without asyncio tasks",
				     why);
			if (!a->tasks_off++)
				snprintf(a->tasks_off_why, sizeof(a->tasks_off_why), "%s", why);
			continue;
		}
		tg->async_fails = 0;
		/* wall mode watches creations with --no-origins too: its ticks list new tasks */
		if (ret && !tg->origins && (a->o.origins || a->o.wall)) {
			/* a task created between that snapshot and the probe is in neither: read
			 * again now that the probe is in place, not at the next paced turn */
			if (watch_creations(a, tg) &&
			    tracker_refresh(a->tracker, &tg->t, why, sizeof(why)) < 0)
				tg->snap.next_refresh = recorder_now();
		}
		reader_tasks_read(a->reader, tg->t.pid);
	}
}

/* Where pid runs, and whether the filters take it. */
static bool place_ok(struct recorder *a, pid_t pid, const char *comm, struct proc_place *pl)
{
	if (proc_place_read(pid, pl)) {
		memset(pl, 0, sizeof(*pl));
		pl->ns_pid = pid;
	}
	return procfilter_match(a->o.filter, comm, pl);
}

static void track_locked(struct recorder *a, const struct py_target *t)
{
	struct proc_place pl;
	struct target *tg;
	char why[512];
	int ret;

	if (!place_ok(a, t->pid, t->comm, &pl)) {
		a->filtered++;
		return;
	}
	if (a->lc)
		lifecycle_settle(a->lc, t->pid);
	tg = record_add_target(&a->rec, t);
	if (!tg || record_place_target(&a->rec, tg, &pl, a->o.container_frame)) {
		if (tg)
			record_del_target(&a->rec, t->pid);
		recorder_say(a, "pid %d: out of memory", t->pid);
		return;
	}
	ret = reader_add(a->reader, t, why, sizeof(why));
	if (ret) {
		recorder_say(a, "%s", why);
		a->refused += ret == READER_REFUSED;
		record_del_target(&a->rec, t->pid);
		return;
	}
	if (a->o.verbose) {
		status_clear();
		fprintf(stderr, "%s: profiling pid %d (%s, Python %s, %s%s%s)\n", a->o.prog, t->pid,
			t->comm, t->version_str, t->binary, pl.label[0] ? ", container " : "",
			pl.label);
	}
}

/* A reader's own thread (wall mode's ticks) may read the targets. */
void targets_track(struct recorder *a, const struct py_target *t)
{
	reader_lock(a->reader);
	track_locked(a, t);
	reader_unlock(a->reader);
}

/* Whether pid (this incarnation of it) was warned about already: a scan and an event
 * may both examine it. */
static bool warned_before(struct recorder *a, pid_t pid)
{
	unsigned long long start;
	size_t i;

	if (proc_start_time(pid, &start))
		start = 0;
	for (i = 0; i < WARNED; i++)
		if (a->warned[i].pid == pid && a->warned[i].start == start)
			return true;
	a->warned[a->nwarned++ % WARNED] = (struct warned){ .pid = pid, .start = start };
	return false;
}

void targets_found(void *ctx, pid_t pid, enum pyproc_status st, const struct py_target *t,
		   const char *why)
{
	struct recorder *a = ctx;

	if (st == PYPROC_OK) {
		targets_track(a, t);
	} else if (st == PYPROC_UNSUPPORTED) {
		if (!warned_before(a, pid))
			recorder_say(a, "warning: %s; skipped", why);
	} else {
		/* unreadable processes are usually not Python (e.g. another namespace's
		 * init): one summary at the end, each with -v */
		if (!a->unexamined++)
			snprintf(a->first_unexamined, sizeof(a->first_unexamined), "%s", why);
		if (a->o.verbose)
			recorder_say(a, "warning: %s; skipped", why);
	}
}

static void untrack(struct recorder *a, pid_t pid)
{
	reader_lock(a->reader);
	reader_del(a->reader, pid);
	tracker_forget(a->tracker, pid);
	record_del_target(&a->rec, pid);
	if (a->lc)
		lifecycle_ended(a->lc, pid);
	reader_unlock(a->reader);
}

static bool listed(const struct recorder_opts *o, pid_t pid)
{
	for (int i = 0; i < o->npids; i++)
		if (o->pids[i] == pid)
			return true;
	return false;
}

/* A process the kernel reports new (exec, fork) or a sample shows unknown. */
enum pyproc_status targets_examine(void *ctx, pid_t pid)
{
	struct recorder *a = ctx;
	struct proc_place pl;
	struct py_target t;
	enum pyproc_status st;
	char why[512], comm[TASK_COMM_LEN];

	/* a command's descendants are found by its own scan */
	if (pid == getpid() || a->cmd || (a->o.npids && !listed(&a->o, pid)))
		return PYPROC_NOT_PYTHON;
	/* the filters are cheaper than an inspection */
	if (!procfilter_empty(a->o.filter) &&
	    (proc_comm(pid, comm, sizeof(comm)) || !place_ok(a, pid, comm, &pl)))
		return PYPROC_NOT_PYTHON;
	st = pyproc_inspect(pid, &t, why, sizeof(why));
	if (st != PYPROC_NOT_READY && st != PYPROC_GONE && st != PYPROC_NOT_PYTHON)
		targets_found(a, pid, st, &t, why);
	return st;
}

void targets_ended(void *ctx, pid_t pid, bool exec)
{
	struct recorder *a = ctx;

	if (!record_target(&a->rec, pid))
		return;
	if (a->o.npids && !exec)
		recorder_say(a, "pid %d exited during the recording", pid);
	if (a->o.verbose && exec)
		recorder_say(a, "pid %d ran exec: examining its new image", pid);
	untrack(a, pid);
}

bool targets_tracked(void *ctx, pid_t pid)
{
	return record_target(&((struct recorder *)ctx)->rec, pid) != NULL;
}

/* A command's descendant exec'd: what is known of its former image is stale. */
void targets_exec(void *ctx, pid_t pid)
{
	struct recorder *a = ctx;

	if (record_target(&a->rec, pid))
		untrack(a, pid);
}

/* Stops tracking processes that have exited (or whose pid now names another process). */
void targets_reap(struct recorder *a, bool explicit_pids)
{
	for (size_t i = 0; i < a->rec.ntargets;) {
		struct target *tg = &a->rec.targets[i];
		pid_t pid = tg->t.pid;

		if (alive(tg)) {
			i++;
			continue;
		}
		if (explicit_pids)
			recorder_say(a, "pid %d exited during the recording", pid);
		untrack(a, pid);
	}
}

int targets_check(struct recorder *a, struct py_target *targets)
{
	int bad = 0;

	for (int i = 0; i < a->o.npids; i++) {
		struct proc_place pl;
		char why[512];

		if (pyproc_inspect(a->o.pids[i], &targets[i], why, sizeof(why)) != PYPROC_OK) {
			recorder_say(a, "%s", why);
			bad++;
		} else if (!procfilter_empty(a->o.filter) &&
			   (proc_place_read(a->o.pids[i], &pl) ||
			    !procfilter_match(a->o.filter, targets[i].comm, &pl))) {
			recorder_say(a, "pid %d: does not match --container, --cgroup or --comm",
				     a->o.pids[i]);
			bad++;
		}
	}
	return bad;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* asyncbpf-record: sample Python processes from BPF and write their stacks. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "atasks.h"
#include "command.h"
#include "discover.h"
#include "lifecycle.h"
#include "outfile.h"
#include "procfilter.h"
#include "procfs.h"
#include "record.h"
#include "sampler.h"
#include "snappace.h"
#include "status.h"
#include "tracker.h"
#include "ureader.h"
#include "wall.h"
#include "wallrec.h"
#include "writers.h"

#define EXIT_USAGE  1
#define EXIT_ENV    2
#define EXIT_TARGET 3

#define MAX_PIDS 1024
/* exec, fork and exit events find processes; a /proc scan only backs them up */
#define SCAN_INTERVAL_MS 10000
#define WARNED		 64
/* failed task reads (1 s apart) before a process is shown without tasks */
#define ASYNC_TRIES 4
/* ms between looks for a command's new descendants: each is sampled from the first scan
 * that finds its runtime initialised */
#define CMD_SCAN_MS 100
/* s a command has to exit by itself after a signal ended the recording (a terminal's
 * Ctrl-C reaches it too), before it is sent SIGTERM */
#define CMD_GRACE 2.0

static const char usage[] =
	"usage: asyncbpf-record [-a | -p PID[,PID...]] [-F HZ] [-d SECONDS] [-o FILE]\n"
	"                       [--format collapsed|pprof|speedscope|html] [--file-mode MODE]\n"
	"                       [--mode cpu|wall] [--max-tasks N] [--stats] [--no-origins]\n"
	"                       [--reader bpf|memcpy|vmreadv] [-v]\n"
	"                       [--container ID] [--cgroup PATH] [--comm NAME]\n"
	"                       [--container-frame] [--mem-per-process MIB]\n"
	"       asyncbpf-record [OPTIONS] -- COMMAND [ARG...]\n"
	"\n"
	"Samples the stacks of Python processes (CPython 3.8-3.14) from BPF.\n"
	"\n"
	"  -a, --all              all Python processes, including ones started later (default)\n"
	"  -p, --pid PID[,PID]    only these processes\n"
	"  -F, --freq HZ          samples per second per CPU (default 99; wall mode: ticks\n"
	"                         per second, default 100)\n"
	"  -d, --duration SECONDS stop after this long (default: at SIGINT or SIGTERM)\n"
	"  -o, --output FILE      write here instead of stdout\n"
	"      --format FORMAT    collapsed, pprof, speedscope or html (default: from the -o\n"
	"                         name: .pb.gz/.pprof, .json, .html; else collapsed)\n"
	"      --file-mode MODE   permissions of the output file, octal (default 0600)\n"
	"      --mode MODE        cpu (default): samples of threads on a CPU; wall: at each\n"
	"                         tick every thread and every suspended asyncio task, weighted\n"
	"                         by wall time (collapsed values in microseconds)\n"
	"      --max-tasks N      wall mode: at most N suspended tasks per process per tick,\n"
	"                         chosen at random and re-weighted (default: all that fit in\n"
	"                         half the tick)\n"
	"      --stats            print sampling statistics on stderr at the end\n"
	"      --no-origins       do not watch task creation (a uprobe per new asyncio task);\n"
	"                         tasks whose creator returned then show as roots\n"
	"      --container ID     only processes of this container (id prefix, or the label\n"
	"                         shown for it); repeatable\n"
	"      --cgroup PATH      only processes in this cgroup or below; repeatable\n"
	"      --comm NAME        only processes with this name; repeatable\n"
	"      --container-frame  a [container ID] frame above the process of a container\n"
	"      --mem-per-process MIB  cap on each process's symbol cache and on its stack\n"
	"                         table (default 64; 0: none)\n"
	"  -v, --verbose          libbpf and verifier messages\n"
	"      --reader READER    how stacks are read (needs -p unless bpf): bpf (default), in\n"
	"                         the kernel on cpu-clock; memcpy, by the target itself on\n"
	"                         SIGRTMIN+7 (started with LD_PRELOAD=libasyncbpf-memcpy.so);\n"
	"                         vmreadv, by this process with process_vm_readv. The last two\n"
	"                         sample running threads on a timer and do not watch creations\n"
	"  -- COMMAND [ARG...]    run COMMAND and profile it and its Python descendants until\n"
	"                         it exits\n"
	"\n"
	"Exit status: 0 done, 1 usage error, 2 environment error (privileges, BTF, perf events,\n"
	"BPF rejected), 3 a -p process cannot be profiled. With a COMMAND: its exit status\n"
	"(128+N if signal N killed it), 127 if it was not found, 126 if it could not be run.\n";

struct opts {
	pid_t pids[MAX_PIDS];
	int npids;
	unsigned int freq;
	double duration; /* 0: until a signal */
	const char *output;
	enum out_format format;
	unsigned int mode; /* of the output file */
	bool format_set;
	bool stats, verbose;
	bool origins; /* link new tasks to their creators (uprobe on task creation) */
	enum reader_kind reader;
	bool wall; /* --mode wall */
	struct procfilter filter;
	bool container_frame;
	size_t mem_per_process; /* bytes, 0: no cap */
	unsigned int max_tasks;
	char **cmd; /* -- COMMAND ARG...: run it, profile it and its descendants */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = sig;
}

static void err(const char *fmt, ...)
{
	va_list ap;

	status_clear();
	fputs("asyncbpf-record: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int parse_pids(struct opts *o, const char *arg)
{
	const char *p = arg;

	while (*p) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno || v <= 0 || v > INT_MAX || (*end && *end != ',')) {
			err("invalid pid list '%s'", arg);
			return -1;
		}
		if (o->npids == MAX_PIDS) {
			err("too many pids (at most %d)", MAX_PIDS);
			return -1;
		}
		o->pids[o->npids++] = (pid_t)v;
		p = *end ? end + 1 : end;
	}
	if (!o->npids) {
		err("invalid pid list '%s'", arg);
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "pid", required_argument, NULL, 'p' },
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "stats", no_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "no-origins", no_argument, NULL, 'O' },
		{ "reader", required_argument, NULL, 'R' },
		{ "file-mode", required_argument, NULL, 'm' },
		{ "mode", required_argument, NULL, 'M' },
		{ "max-tasks", required_argument, NULL, 'T' },
		{ "container", required_argument, NULL, 'C' },
		{ "cgroup", required_argument, NULL, 'G' },
		{ "comm", required_argument, NULL, 'N' },
		{ "container-frame", no_argument, NULL, 'K' },
		{ "mem-per-process", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	bool all = false, freq_set = false, max_set = false;
	char *end;
	int c;

	o->freq = 99;
	o->origins = true;
	o->mem_per_process = 64 << 20;
	o->format = OUT_COLLAPSED;
	o->mode = OUTFILE_MODE;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ap:F:d:o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			all = true;
			break;
		case 'p':
			if (parse_pids(o, optarg))
				return -1;
			break;
		case 'F': {
			long v;

			errno = 0;
			v = strtol(optarg, &end, 10);
			if (*end || end == optarg || errno || v < 1 || v > 10000) {
				err("invalid frequency '%s' (1 to 10000 Hz)", optarg);
				return -1;
			}
			o->freq = v;
			freq_set = true;
			break;
		}
		case 'd':
			errno = 0;
			o->duration = strtod(optarg, &end);
			if (*end || end == optarg || errno || !(o->duration > 0) ||
			    o->duration > 31536000) {
				err("invalid duration '%s' (seconds, more than 0)", optarg);
				return -1;
			}
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			if (writer_format(optarg, &o->format)) {
				err("unknown format '%s' (known: %s)", optarg, writer_formats());
				return -1;
			}
			o->format_set = true;
			break;
		case 's':
			o->stats = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'O':
			o->origins = false;
			break;
		case 'C':
		case 'G':
		case 'N': {
			char why[256];

			if (procfilter_add(&o->filter,
					   c == 'C'   ? FILTER_CONTAINER
					   : c == 'G' ? FILTER_CGROUP
						      : FILTER_COMM,
					   optarg, why, sizeof(why))) {
				err("%s", why);
				return -1;
			}
			break;
		}
		case 'K':
			o->container_frame = true;
			break;
		case 'P': {
			long v;

			errno = 0;
			v = strtol(optarg, &end, 10);
			if (*end || end == optarg || errno || v < 0 || v > 1 << 20) {
				err("invalid --mem-per-process '%s' (MiB, 0 to 1048576)", optarg);
				return -1;
			}
			o->mem_per_process = (size_t)v << 20;
			break;
		}
		case 'M':
			if (strcmp(optarg, "cpu") && strcmp(optarg, "wall")) {
				err("unknown mode '%s' (known: cpu, wall)", optarg);
				return -1;
			}
			o->wall = !strcmp(optarg, "wall");
			break;
		case 'T': {
			long v;

			errno = 0;
			v = strtol(optarg, &end, 10);
			if (*end || end == optarg || errno || v < 1 || v > WALL_MAX_TASKS) {
				err("invalid --max-tasks '%s' (1 to %d)", optarg, WALL_MAX_TASKS);
				return -1;
			}
			o->max_tasks = v;
			max_set = true;
			break;
		}
		case 'R':
			if (reader_parse(optarg, &o->reader)) {
				err("unknown reader '%s' (known: bpf, memcpy, vmreadv)", optarg);
				return -1;
			}
			break;
		case 'm': {
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 8);
			if (*end || end == optarg || errno || v > 0777 || optarg[0] == '-') {
				err("invalid mode '%s' (octal permissions, 0 to 0777)", optarg);
				return -1;
			}
			o->mode = (unsigned int)v;
			break;
		}
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case ':':
			err("option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			err("unknown option '%s' (see --help)", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		err("unexpected argument '%s' (see --help)", argv[optind]);
		return -1;
	}
	if (all && o->npids) {
		err("-a and -p exclude each other");
		return -1;
	}
	if (o->cmd && !o->cmd[0]) {
		err("'--' must be followed by a command");
		return -1;
	}
	if (o->cmd && (all || o->npids)) {
		err("-- COMMAND excludes -a and -p");
		return -1;
	}
	if (o->reader != READER_BPF && !o->npids) {
		err("--reader %s needs -p", reader_name(o->reader));
		return -1;
	}
	if (o->wall && o->reader != READER_BPF) {
		err("--mode wall reads through BPF: --reader %s does not go with it",
		    reader_name(o->reader));
		return -1;
	}
	if (max_set && !o->wall) {
		err("--max-tasks needs --mode wall");
		return -1;
	}
	if (o->wall && !freq_set)
		o->freq = 100;
	if (!o->format_set)
		o->format = writer_guess(o->output);
	return 0;
}

struct app {
	struct opts *o;
	struct record rec;
	struct sampler *sampler;
	struct ureader *ureader; /* --reader memcpy or vmreadv, instead of sampler */
	struct wallrec *wall;	 /* --mode wall */
	struct tracker *tracker;
	struct command *cmd;
	struct lifecycle *lc;
	unsigned int unexamined; /* -a: processes whose files could not be read */
	uint64_t filtered;	 /* Python processes the filters left out */
	struct snappace snap;
	double cpu_start; /* CPU time used before sampling started */
	struct warned {
		pid_t pid;
		unsigned long long start;
	} warned[WARNED]; /* the last processes warned about as unsupported */
	size_t nwarned;
	char first_unexamined[512];
};

static double now_s(void);

static bool alive(const struct target *tg)
{
	unsigned long long start;

	return !proc_start_time(tg->t.pid, &start) && start == tg->t.start_time;
}

/* Tasks created from now on are linked to their creators by a uprobe. */
static void watch_creations(struct app *a, struct target *tg)
{
	char path[PATH_MAX + 64], why[256];
	uint64_t off;
	int ret;

	tg->origins = 1;
	ret = atasks_task_init(&tg->t, path, sizeof(path), &off);
	if (!ret)
		ret = sampler_attach_task_init(a->sampler, tg->t.pid, path, off);
	/* a process starting or exiting has its files and maps come and go: try again at
	 * its next snapshot, and warn only when it keeps failing while it lives */
	if ((ret == -ENOENT || ret == -ESRCH) && ++tg->origin_tries < 3) {
		tg->origins = 0;
		return;
	}
	if (ret && alive(tg)) {
		snprintf(why, sizeof(why), "%s", strerror(-ret));
		err("warning: pid %d: cannot watch task creation (%s); tasks whose creator "
		    "returned are shown as roots",
		    tg->t.pid, why);
	}
}

/* Reads the asyncio tasks of the targets that are due, so BPF can tell which task runs
 * and who awaits it. Snapshots are paced (see snapshot_due) and share a CPU budget. */
static void refresh_tasks(struct app *a)
{
	double t = now_s();
	size_t n = a->rec.ntargets;

	snapshot_budget_fill(&a->snap, t);
	for (size_t k = 0; k < n && a->snap.tokens > 0; k++) {
		/* start where the budget ran out last time: every process gets its turn */
		struct target *tg = &a->rec.targets[(a->snap.next + k) % n];
		double cpu;
		char why[512];
		int ret;

		if (tg->async_off || !snapshot_due(tg, t))
			continue;
		a->snap.next = (a->snap.next + k + 1) % n;
		cpu = cpu_s();
		ret = tracker_refresh(a->tracker, &tg->t, why, sizeof(why));
		snapshot_done(&a->snap, tg, now_s(), cpu_s() - cpu);
		if (ret < 0 && !alive(tg))
			continue; /* exited: reap() says so */
		/* a process caught as it starts may not have built its modules yet */
		if (ret < 0 && ++tg->async_fails < ASYNC_TRIES) {
			tg->next_refresh = now_s() + 1;
			continue;
		}
		if (ret < 0) {
			tg->async_off = 1;
			err("warning: %s; its stacks are shown without asyncio tasks", why);
			continue;
		}
		tg->async_fails = 0;
		if (ret && !tg->origins && a->o->origins && a->sampler) {
			watch_creations(a, tg);
			/* a task created between that snapshot and the probe is in neither: read
			 * again now that the probe is in place, not at the next paced turn */
			if (tg->origins &&
			    tracker_refresh(a->tracker, &tg->t, why, sizeof(why)) < 0)
				tg->next_refresh = now_s();
		}
		if (a->wall) {
			wallrec_lock(a->wall);
			wallrec_set_tasks(a->wall, tg->t.pid);
			wallrec_unlock(a->wall);
		}
	}
}

static void on_sample(void *ctx, const struct py_sample *s, size_t size)
{
	struct app *a = ctx;

	(void)size;
	record_sample(&a->rec, s);
	if (a->lc && !a->o->npids && !record_target(&a->rec, s->hdr.pid))
		lifecycle_examine(a->lc, s->hdr.pid);
}

/* Where pid runs, and whether the filters take it. */
static bool place_ok(struct app *a, pid_t pid, const char *comm, struct proc_place *pl)
{
	if (proc_place_read(pid, pl)) {
		memset(pl, 0, sizeof(*pl));
		pl->ns_pid = pid;
	}
	return procfilter_match(&a->o->filter, comm, pl);
}

static void track_locked(struct app *a, const struct py_target *t)
{
	struct proc_place pl;
	struct target *tg;

	if (!place_ok(a, t->pid, t->comm, &pl)) {
		a->filtered++;
		return;
	}
	if (a->lc)
		lifecycle_settle(a->lc, t->pid);
	tg = record_add_target(&a->rec, t);
	if (!tg || record_place_target(&a->rec, tg, &pl, a->o->container_frame)) {
		if (tg)
			record_del_target(&a->rec, t->pid);
		err("pid %d: out of memory", t->pid);
		return;
	}
	if (a->ureader) {
		char why[512];

		if (ureader_add_proc(a->ureader, t, why, sizeof(why))) {
			err("%s", why);
			record_del_target(&a->rec, t->pid);
			return;
		}
	} else if (sampler_add_proc(a->sampler, t->pid, &t->proc)) {
		err("pid %d: cannot add it to the BPF map", t->pid);
		record_del_target(&a->rec, t->pid);
		return;
	}
	if (a->wall && wallrec_add(a->wall, t->pid)) {
		err("pid %d: cannot attach the wall-clock iterator", t->pid);
		sampler_del_proc(a->sampler, t->pid);
		record_del_target(&a->rec, t->pid);
		return;
	}
	if (a->o->verbose) {
		status_clear();
		fprintf(stderr, "asyncbpf-record: profiling pid %d (%s, Python %s, %s%s%s)\n",
			t->pid, t->comm, t->version_str, t->binary,
			pl.label[0] ? ", container " : "", pl.label);
	}
}

/* The wall-clock ticks read the targets from their own thread. */
static void track(struct app *a, const struct py_target *t)
{
	if (a->wall)
		wallrec_lock(a->wall);
	track_locked(a, t);
	if (a->wall)
		wallrec_unlock(a->wall);
}

/* Whether pid (this incarnation of it) was warned about already: a scan and an event
 * may both examine it. */
static bool warned_before(struct app *a, pid_t pid)
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

static void on_found(void *ctx, pid_t pid, enum pyproc_status st, const struct py_target *t,
		     const char *why)
{
	struct app *a = ctx;

	if (st == PYPROC_OK) {
		track(a, t);
	} else if (st == PYPROC_UNSUPPORTED) {
		if (!warned_before(a, pid))
			err("warning: %s; skipped", why);
	} else {
		/* unreadable processes are usually not Python (e.g. another namespace's
		 * init): one summary at the end, each with -v */
		if (!a->unexamined++)
			snprintf(a->first_unexamined, sizeof(a->first_unexamined), "%s", why);
		if (a->o->verbose)
			err("warning: %s; skipped", why);
	}
}

static void untrack(struct app *a, pid_t pid)
{
	if (a->wall)
		wallrec_lock(a->wall);
	if (a->ureader)
		ureader_del_proc(a->ureader, pid);
	else
		sampler_del_proc(a->sampler, pid);
	if (a->wall)
		wallrec_del(a->wall, pid);
	tracker_forget(a->tracker, pid);
	record_del_target(&a->rec, pid);
	if (a->lc)
		lifecycle_ended(a->lc, pid);
	if (a->wall)
		wallrec_unlock(a->wall);
}

static bool listed(const struct opts *o, pid_t pid)
{
	for (int i = 0; i < o->npids; i++)
		if (o->pids[i] == pid)
			return true;
	return false;
}

/* A process the kernel reports new (exec, fork) or a sample shows unknown. */
static enum pyproc_status examine(void *ctx, pid_t pid)
{
	struct app *a = ctx;
	struct proc_place pl;
	struct py_target t;
	enum pyproc_status st;
	char why[512], comm[TASK_COMM_LEN];

	/* a command's descendants are found by its own scan */
	if (pid == getpid() || a->cmd || (a->o->npids && !listed(a->o, pid)))
		return PYPROC_NOT_PYTHON;
	/* the filters are cheaper than an inspection */
	if (!procfilter_empty(&a->o->filter) &&
	    (proc_comm(pid, comm, sizeof(comm)) || !place_ok(a, pid, comm, &pl)))
		return PYPROC_NOT_PYTHON;
	st = pyproc_inspect(pid, &t, why, sizeof(why));
	if (st != PYPROC_NOT_READY && st != PYPROC_GONE && st != PYPROC_NOT_PYTHON)
		on_found(a, pid, st, &t, why);
	return st;
}

static void ended(void *ctx, pid_t pid, bool exec)
{
	struct app *a = ctx;

	if (!record_target(&a->rec, pid))
		return;
	if (a->o->npids && !exec)
		err("pid %d exited during the recording", pid);
	if (a->o->verbose && exec)
		err("pid %d ran exec: examining its new image", pid);
	untrack(a, pid);
}

static bool tracked(void *ctx, pid_t pid)
{
	return record_target(&((struct app *)ctx)->rec, pid) != NULL;
}

/* A command's descendant exec'd: what is known of its former image is stale. */
static void on_exec(void *ctx, pid_t pid)
{
	struct app *a = ctx;

	if (record_target(&a->rec, pid))
		untrack(a, pid);
}

/* Stops tracking processes that have exited (or whose pid now names another process). */
static void reap(struct app *a, bool explicit_pids)
{
	for (size_t i = 0; i < a->rec.ntargets;) {
		struct target *tg = &a->rec.targets[i];
		pid_t pid = tg->t.pid;

		if (alive(tg)) {
			i++;
			continue;
		}
		if (explicit_pids)
			err("pid %d exited during the recording", pid);
		untrack(a, pid);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int check_pids(struct opts *o, struct py_target *targets)
{
	int bad = 0;

	for (int i = 0; i < o->npids; i++) {
		struct proc_place pl;
		char why[512];

		if (pyproc_inspect(o->pids[i], &targets[i], why, sizeof(why)) != PYPROC_OK) {
			err("%s", why);
			bad++;
		} else if (!procfilter_empty(&o->filter) &&
			   (proc_place_read(o->pids[i], &pl) ||
			    !procfilter_match(&o->filter, targets[i].comm, &pl))) {
			err("pid %d: does not match --container, --cgroup or --comm", o->pids[i]);
			bad++;
		}
	}
	return bad;
}

static uint64_t lost_samples(struct app *a, struct sampler_stats *out);

static void show_status(struct app *a, double elapsed)
{
	status_show(elapsed, profile_total(a->rec.prof), a->rec.ntargets, lost_samples(a, NULL));
}

static int write_output(struct app *a, uint64_t start_ns, double elapsed, uint64_t lost, char *why,
			size_t whylen)
{
	struct writer_meta meta = {
		.start_ns = start_ns,
		.duration_ns = elapsed * 1e9,
		.has_lost = true,
		.lost = lost,
		.has_mode = true,
		.mode = a->o->mode,
	};

	return writer_write_meta(a->o->output, a->o->format, a->rec.prof, &meta, why, whylen);
}

/* Samples taken in tracked processes that are not in the profile. */
static uint64_t lost_samples(struct app *a, struct sampler_stats *out)
{
	struct sampler_stats st;
	struct ureader_stats ust;

	if (!a->sampler || sampler_read_stats(a->sampler, &st))
		memset(&st, 0, sizeof(st));
	if (out)
		*out = st;
	if (a->ureader) {
		ureader_read_stats(a->ureader, &ust);
		return ust.lost + a->rec.nomem + a->rec.unknown_pid;
	}
	return st.stat[STAT_LOST] + st.bad_records + a->rec.nomem + a->rec.unknown_pid;
}

/* User and system CPU time of this process, s. */
static double cpu_total(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Resident memory of this process, bytes: all of it (VmRSS, which counts the ring
 * buffers' pages as they are first read) or the heap (RssAnon). */
static size_t rss_bytes(const char *field)
{
	char buf[4096], *p;
	ssize_t n = proc_read("/proc/self/status", buf, sizeof(buf));

	p = n > 0 ? strstr(buf, field) : NULL;
	return p ? strtoull(p + strlen(field), NULL, 10) << 10 : 0;
}

static void print_lifecycle_stats(struct app *a)
{
	static const char *const names[LCM_MAX] = { "procs", "tstates", "coro_task", "task_serials",
						    "task_links" };
	struct lifecycle_stats ls;

	if (!a->lc)
		return;
	lifecycle_stats(a->lc, &ls);
	fprintf(stderr, "process events: %llu exec, %llu fork, %llu exit, %llu lost\n",
		(unsigned long long)ls.execs, (unsigned long long)ls.forks,
		(unsigned long long)ls.exits, (unsigned long long)ls.lost);
	fprintf(stderr,
		"examinations: %llu (%llu retries, %llu gave up waiting for a runtime, %zu "
		"pending)\n",
		(unsigned long long)ls.examined, (unsigned long long)ls.retries,
		(unsigned long long)ls.gave_up, ls.pending);
	fprintf(stderr, "map entries freed: %llu\n", (unsigned long long)ls.swept);
	fprintf(stderr, "map entries:");
	for (int m = 0; m < LCM_MAX; m++)
		fprintf(stderr, " %s %zu", names[m], ls.entries[m]);
	fputc('\n', stderr);
	fprintf(stderr, "stale map entries:");
	for (int m = 0; m < LCM_MAX; m++)
		fprintf(stderr, " %s %zu", names[m], ls.stale[m]);
	fputc('\n', stderr);
}

/* The median of a cost_bucket() histogram: the middle of its bucket, in ns. */
static double hist_median(const uint64_t *h)
{
	uint64_t n = 0, seen = 0;

	for (int k = 0; k < COST_BUCKETS; k++)
		n += h[k];
	for (int k = 0; n && k < COST_BUCKETS; k++) {
		seen += h[k];
		if (seen * 2 >= n) {
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

static void print_ustats(struct app *a, double elapsed)
{
	struct ureader_stats st;

	ureader_read_stats(a->ureader, &st);
	fprintf(stderr, "reader: %s\n", reader_name(a->o->reader));
	fprintf(stderr, "duration: %.1f s\n", elapsed);
	fprintf(stderr, "timer ticks: %llu (missed %llu)\n", (unsigned long long)st.ticks,
		(unsigned long long)st.missed_ticks);
	fprintf(stderr, "samples: %llu\n", (unsigned long long)st.samples);
	fprintf(stderr, "recorded samples: %llu\n", (unsigned long long)profile_total(a->rec.prof));
	fprintf(stderr, "no thread state: %llu\n", (unsigned long long)st.no_tstate);
	fprintf(stderr, "truncated: %llu\n", (unsigned long long)st.truncated);
	fprintf(stderr, "read errors: %llu\n", (unsigned long long)st.read_err);
	fprintf(stderr, "lost: %llu\n", (unsigned long long)st.lost);
	if (st.read_cnt)
		fprintf(stderr, "%s per sample: %llu ns (%llu runs)\n",
			a->o->reader == READER_MEMCPY ? "handler time" : "walk time",
			(unsigned long long)(st.read_ns / st.read_cnt),
			(unsigned long long)st.read_cnt);
	if (st.read_cnt)
		fprintf(stderr, "median read time per sample: %.0f ns\n",
			hist_median(st.cost_hist));
	if (a->o->reader == READER_MEMCPY)
		fprintf(stderr, "faults caught: %llu\nhandler runs unattached: %llu\n",
			(unsigned long long)st.faults, (unsigned long long)st.idle);
	fprintf(stderr, "samples in asyncio tasks: %llu\n", (unsigned long long)st.in_task);
	fprintf(stderr, "unlinked tasks: %llu\n", (unsigned long long)a->rec.root_tasks);
	fprintf(stderr, "processes: %zu\n", a->rec.ntargets);
	fprintf(stderr, "symbols cached: %zu\n", symtab_size(a->rec.syms));
}

static void print_stats(struct app *a, double elapsed, const struct sampler_stats *stp,
			uint64_t lost)
{
	const struct sampler_stats st = *stp;
	size_t nstacks, nframes;

	if (a->ureader)
		return print_ustats(a, elapsed);
	fprintf(stderr, "duration: %.1f s\n", elapsed);
	fprintf(stderr, "samples: %llu\n", (unsigned long long)st.stat[STAT_SAMPLES]);
	fprintf(stderr, "python samples: %llu\n", (unsigned long long)st.stat[STAT_PYTHON]);
	fprintf(stderr, "recorded samples: %llu\n", (unsigned long long)profile_total(a->rec.prof));
	fprintf(stderr, "no thread state: %llu\n", (unsigned long long)st.stat[STAT_NO_TSTATE]);
	fprintf(stderr, "truncated: %llu\n", (unsigned long long)st.stat[STAT_TRUNCATED]);
	fprintf(stderr, "read errors: %llu\n", (unsigned long long)st.stat[STAT_READ_ERR]);
	fprintf(stderr,
		"lost: %llu (ring buffer full %llu, malformed %llu, out of memory %llu, untracked "
		"process %llu)\n",
		(unsigned long long)lost, (unsigned long long)st.stat[STAT_LOST],
		(unsigned long long)st.bad_records, (unsigned long long)a->rec.nomem,
		(unsigned long long)a->rec.unknown_pid);
	fprintf(stderr, "unknown frames: %llu (code objects that could not be read)\n",
		(unsigned long long)a->rec.unknown_frames);
	fprintf(stderr, "thread-state lookups: %llu\n",
		(unsigned long long)st.stat[STAT_TSTATE_LOOKUP]);
	if (st.run_cnt)
		fprintf(stderr, "bpf run time per sample: %llu ns (%llu runs)\n",
			(unsigned long long)(st.run_ns / st.run_cnt),
			(unsigned long long)st.run_cnt);
	else if (a->wall)
		fprintf(stderr, "bpf run time per sample: none (wall mode: see bpf run time per "
				"tick)\n");
	else
		fprintf(stderr, "bpf run time per sample: unavailable\n");
	fprintf(stderr, "bpf walker: %s\n", sampler_variant(a->sampler));
	if (st.stat[STAT_PYTHON]) {
		fprintf(stderr, "walk time per python sample: %llu ns\n",
			(unsigned long long)(st.stat[STAT_PY_NS] / st.stat[STAT_PYTHON]));
		fprintf(stderr, "median read time per sample: %.0f ns\n",
			hist_median(st.cost_hist));
	}
	fprintf(stderr, "samples in asyncio tasks: %llu\n", (unsigned long long)st.stat[STAT_TASK]);
	fprintf(stderr, "tasks created: %llu\n", (unsigned long long)st.stat[STAT_TASK_CREATED]);
	fprintf(stderr,
		"unlinked tasks: %llu (distinct tasks heading a chain: no awaiter or creator "
		"known)\n",
		(unsigned long long)a->rec.root_tasks);
	fprintf(stderr, "processes: %zu\n", a->rec.ntargets);
	fprintf(stderr, "symbols cached: %zu (%zu KiB, %llu evicted)\n", symtab_size(a->rec.syms),
		symtab_bytes(a->rec.syms) >> 10, (unsigned long long)symtab_evicted(a->rec.syms));
	fprintf(stderr, "samples over the stack limit: %llu\n",
		(unsigned long long)a->rec.over_limit);
	fprintf(stderr, "processes filtered out: %llu\n", (unsigned long long)a->filtered);
	fprintf(stderr, "task snapshots: %llu (%.3f s CPU)\n", (unsigned long long)a->snap.taken,
		a->snap.cpu);
	print_lifecycle_stats(a);
	fprintf(stderr, "profile: %zu KiB\n", profile_bytes(a->rec.prof, &nstacks) >> 10);
	fprintf(stderr, "memory used: %zu KiB (heap %zu KiB)\n", rss_bytes("\nVmRSS:") >> 10,
		rss_bytes("\nRssAnon:") >> 10);
	fprintf(stderr, "profiler cpu: %.2f s while recording (%.2f%% of a core), %.2f s before\n",
		cpu_total() - a->cpu_start, 100 * (cpu_total() - a->cpu_start) / elapsed,
		a->cpu_start);
	profile_size(a->rec.prof, &nstacks, &nframes);
	fprintf(stderr, "distinct stacks: %zu (%zu distinct frames)\n", nstacks, nframes);
	if (a->wall)
		wallrec_print_stats(a->wall, stderr);
}

int main(int argc, char **argv)
{
	static struct py_target targets[MAX_PIDS];
	struct opts o = {};
	struct app a = { .o = &o };
	struct sampler_opts so = {};
	struct discover *disc = NULL;
	double start, next_scan, next_status;
	struct timespec wall;
	uint64_t start_ns;
	char why[512];
	struct sampler_stats stats;
	enum sampler_err se;
	uint64_t lost;
	int scan_ms = SCAN_INTERVAL_MS;
	int rc, exit_code = -1; /* the command's, when there is one */

	o.cmd = command_split(&argc, argv);
	if (parse_args(argc, argv, &o))
		return EXIT_USAGE;
	/* ELF sections read at each examination are large and short-lived: a fixed
	 * threshold keeps them in mmap, returned on free, instead of fragmenting the heap
	 * of a long recording */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	if (o.reader == READER_BPF && sampler_check_env(why, sizeof(why))) {
		err("%s", why);
		return EXIT_ENV;
	}
	if (o.output && strcmp(o.output, "-") && outfile_check(o.output, why, sizeof(why))) {
		err("%s", why);
		return EXIT_ENV;
	}
	if (o.npids && check_pids(&o, targets))
		return EXIT_TARGET;
	if (record_init(&a.rec)) {
		err("out of memory");
		return EXIT_ENV;
	}
	profile_set_period(a.rec.prof, 1000000000ull / o.freq);
	symtab_set_limit(a.rec.syms, o.mem_per_process);
	a.rec.stack_limit = o.mem_per_process;
	snapshot_init(&a.snap, now_s());

	so.freq = o.freq;
	so.run_stats = o.stats;
	so.verbose = o.verbose;
	so.cb = on_sample;
	so.ctx = &a;
	if (o.reader != READER_BPF) {
		struct ureader_opts uo = {
			.kind = o.reader, .freq = o.freq, .cb = on_sample, .ctx = &a
		};

		a.ureader = ureader_new(&uo);
		a.tracker = a.ureader ? tracker_new_ops(&ureader_taskmaps_ops, a.ureader) : NULL;
	} else {
		se = sampler_open(&a.sampler, &so, why, sizeof(why));
		if (se) {
			err("%s", why);
			record_fini(&a.rec);
			return EXIT_ENV;
		}
		a.tracker = tracker_new(a.sampler);
	}
	if (!a.tracker) {
		err("out of memory");
		rc = EXIT_ENV;
		goto out;
	}
	if (o.wall) {
		struct wallrec_opts wo = { .freq = o.freq,
					   .max_tasks = o.max_tasks,
					   .run_stats = o.stats };

		a.wall = wallrec_new(a.sampler, &a.rec, a.tracker, &wo, why, sizeof(why));
		if (!a.wall) {
			err("%s", why);
			rc = EXIT_ENV;
			goto out;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);

	/* before the first scan, so that no process starts unseen in between (BPF only:
	 * the events come from tracepoints) */
	if (a.sampler) {
		struct lifecycle_ops ops = {
			.examine = examine, .ended = ended, .tracked = tracked, .ctx = &a
		};

		if (lifecycle_open(&a.lc, a.sampler, &ops, why, sizeof(why))) {
			err("warning: %s; processes are found by scanning /proc every second", why);
			scan_ms = 1000;
		}
	} else {
		scan_ms = 1000;
	}

	if (o.npids) {
		for (int i = 0; i < o.npids; i++)
			track(&a, &targets[i]);
		if (a.ureader && !a.rec.ntargets) {
			ureader_free(a.ureader);
			tracker_free(a.tracker);
			record_fini(&a.rec);
			return EXIT_TARGET;
		}
	} else if (o.cmd) {
		/* it waits, and execs once sampling runs */
		if (command_spawn(&a.cmd, o.cmd, why, sizeof(why))) {
			err("%s", why);
			rc = EXIT_ENV;
			goto out;
		}
	} else {
		disc = discover_new(getpid());
		if (!disc || discover_scan(disc, on_found, &a)) {
			err("cannot scan /proc: %s", strerror(errno));
			rc = EXIT_ENV;
			goto out;
		}
	}

	/* tasks already running are known before the first sample */
	refresh_tasks(&a);
	/* wall mode ticks from userspace: no perf events */
	se = a.sampler && !o.wall ? sampler_start(a.sampler, why, sizeof(why)) : SAMPLER_OK;
	if (o.wall && wallrec_start(a.wall)) {
		err("cannot start the wall-clock timer thread");
		rc = EXIT_ENV;
		goto out;
	}
	if (se) {
		err("%s", why);
		rc = EXIT_ENV;
		goto out;
	}
	if (a.cmd && !stop) {
		rc = command_release(a.cmd, why, sizeof(why));
		if (rc) {
			err("%s", why);
			exit_code = rc == -ENOENT ? 127 : 126;
			goto out;
		}
	}
	/* listed processes that exited before the exit tracepoint was attached are found
	 * by reap(): look often, there are few */
	if (o.npids)
		scan_ms = 1000;
	start = now_s();
	a.cpu_start = cpu_total();
	clock_gettime(CLOCK_REALTIME, &wall);
	start_ns = wall.tv_sec * 1000000000ull + wall.tv_nsec;
	next_scan = start + scan_ms / 1000.0;
	next_status = start + 1;
	status_init();
	while (!stop) {
		double t = now_s();
		int wait_ms = 100;

		if (o.duration && t - start >= o.duration)
			break;
		if (o.duration && (o.duration - (t - start)) * 1000 < wait_ms)
			wait_ms = (int)((o.duration - (t - start)) * 1000) + 1;
		refresh_tasks(&a);
		rc = a.ureader ? ureader_poll(a.ureader, wait_ms)
			       : sampler_poll(a.sampler, wait_ms);
		if (rc) {
			err("reading samples: %s", strerror(-rc));
			break;
		}
		/* events lost: look at /proc at once */
		if (a.lc && lifecycle_run(a.lc))
			next_scan = 0;
		if (o.npids && !a.rec.ntargets && !(a.lc && lifecycle_pending(a.lc))) {
			err("all target processes exited; recording ended");
			break;
		}
		if (now_s() >= next_scan) {
			next_scan = now_s() + scan_ms / 1000.0;
			if (a.sampler)
				sampler_poll(a.sampler, 0);
			reap(&a, o.npids > 0);
			if (disc)
				discover_scan(disc, on_found, &a);
		}
		if (a.cmd) {
			command_scan(a.cmd, CMD_SCAN_MS, on_found, on_exec, &a);
			if (command_exited(a.cmd))
				break;
		}
		if (now_s() >= next_status) {
			next_status += 1;
			show_status(&a, now_s() - start);
		}
	}
	if (a.sampler) {
		sampler_stop(a.sampler);
		sampler_poll(a.sampler, 0);
		if (a.wall)
			wallrec_stop(a.wall);
	} else {
		ureader_stop(a.ureader);
		ureader_poll(a.ureader, 20); /* signals sent before the stop */
	}
	status_clear();
	if (a.cmd && !command_pythons(a.cmd))
		err("warning: no Python process ran under '%s'", o.cmd[0]);
	lost = lost_samples(&a, &stats);

	if (a.unexamined)
		err("warning: %u process%s could not be examined (%s)%s", a.unexamined,
		    a.unexamined > 1 ? "es" : "", a.first_unexamined,
		    a.unexamined > 1 && !o.verbose ? "; -v lists them" : "");
	profile_set_lost(a.rec.prof, lost);
	rc = write_output(&a, start_ns, now_s() - start, lost, why, sizeof(why));
	if (rc)
		err("%s", why);
	if (o.stats)
		print_stats(&a, now_s() - start, &stats, lost);
	if (a.cmd) {
		int st = command_finish(a.cmd, stop ? CMD_GRACE : 0);

		/* a signal before the command could start: as if it had killed it */
		if (!rc)
			exit_code = st >= 0 ? st : 128 + stop;
	}
out:
	lifecycle_close(a.lc);
	procfilter_free(&o.filter);
	command_free(a.cmd);
	discover_free(disc);
	wallrec_free(a.wall);
	tracker_free(a.tracker);
	sampler_close(a.sampler);
	ureader_free(a.ureader);
	record_fini(&a.rec);
	if (exit_code >= 0)
		return exit_code;
	return rc ? EXIT_ENV : 0;
}

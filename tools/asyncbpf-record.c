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
#include "discover.h"
#include "lifecycle.h"
#include "procfilter.h"
#include "procfs.h"
#include "record.h"
#include "sampler.h"
#include "snappace.h"
#include "tracker.h"
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

static const char usage[] =
	"usage: asyncbpf-record [-a | -p PID[,PID...]] [-F HZ] [-d SECONDS] [-o FILE]\n"
	"                       [--format collapsed] [--stats] [--no-origins] [-v]\n"
	"                       [--container ID] [--cgroup PATH] [--comm NAME]\n"
	"                       [--container-frame] [--mem-per-process MIB]\n"
	"\n"
	"Samples the stacks of Python processes (CPython 3.8-3.13) from BPF.\n"
	"\n"
	"  -a, --all              all Python processes, including ones started later (default)\n"
	"  -p, --pid PID[,PID]    only these processes\n"
	"  -F, --freq HZ          samples per second per CPU (default 99)\n"
	"  -d, --duration SECONDS stop after this long (default: at SIGINT or SIGTERM)\n"
	"  -o, --output FILE      write here instead of stdout\n"
	"      --format FORMAT    collapsed (default)\n"
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
	"\n"
	"Exit status: 0 done, 1 usage error, 2 environment error (privileges, BTF, perf events,\n"
	"BPF rejected), 3 a -p process cannot be profiled.\n";

struct opts {
	pid_t pids[MAX_PIDS];
	int npids;
	unsigned int freq;
	double duration; /* 0: until a signal */
	const char *output;
	enum out_format format;
	bool stats, verbose;
	bool origins; /* link new tasks to their creators (uprobe on task creation) */
	struct procfilter filter;
	bool container_frame;
	size_t mem_per_process; /* bytes, 0: no cap */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void err(const char *fmt, ...)
{
	va_list ap;

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
		{ "container", required_argument, NULL, 'C' },
		{ "cgroup", required_argument, NULL, 'G' },
		{ "comm", required_argument, NULL, 'N' },
		{ "container-frame", no_argument, NULL, 'R' },
		{ "mem-per-process", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	bool all = false;
	char *end;
	int c;

	o->freq = 99;
	o->origins = true;
	o->mem_per_process = 64 << 20;
	o->format = OUT_COLLAPSED;
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
		case 'R':
			o->container_frame = true;
			break;
		case 'M': {
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
	return 0;
}

struct app {
	struct opts *o;
	struct record rec;
	struct sampler *sampler;
	struct tracker *tracker;
	struct lifecycle *lc;
	unsigned int unexamined;
	uint64_t filtered; /* Python processes the filters left out */
	struct snappace snap;
	double cpu_start; /* CPU time used before sampling started */
	struct warned {
		pid_t pid;
		unsigned long long start;
	} warned[WARNED]; /* the last processes warned about as unsupported */
	size_t nwarned;	  /* -a: processes whose files
									   could not be read */
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
	if (ret) {
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
		if (ret && !tg->origins && a->o->origins)
			watch_creations(a, tg);
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

static void track(struct app *a, const struct py_target *t)
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
	if (sampler_add_proc(a->sampler, t->pid, &t->proc)) {
		err("pid %d: cannot add it to the BPF map", t->pid);
		record_del_target(&a->rec, t->pid);
		return;
	}
	if (a->o->verbose)
		fprintf(stderr, "asyncbpf-record: profiling pid %d (%s, Python %s, %s%s%s)\n",
			t->pid, t->comm, t->version_str, t->binary,
			pl.label[0] ? ", container " : "", pl.label);
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
	sampler_del_proc(a->sampler, pid);
	tracker_forget(a->tracker, pid);
	record_del_target(&a->rec, pid);
	if (a->lc)
		lifecycle_ended(a->lc, pid);
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

	if (pid == getpid() || (a->o->npids && !listed(a->o, pid)))
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

static void print_stats(struct app *a, double elapsed)
{
	struct sampler_stats st;
	size_t nstacks;

	if (sampler_read_stats(a->sampler, &st)) {
		err("cannot read statistics");
		return;
	}
	fprintf(stderr, "duration: %.1f s\n", elapsed);
	fprintf(stderr, "samples: %llu\n", (unsigned long long)st.stat[STAT_SAMPLES]);
	fprintf(stderr, "python samples: %llu\n", (unsigned long long)st.stat[STAT_PYTHON]);
	fprintf(stderr, "recorded samples: %llu\n", (unsigned long long)profile_total(a->rec.prof));
	fprintf(stderr, "no thread state: %llu\n", (unsigned long long)st.stat[STAT_NO_TSTATE]);
	fprintf(stderr, "truncated: %llu\n", (unsigned long long)st.stat[STAT_TRUNCATED]);
	fprintf(stderr, "read errors: %llu\n", (unsigned long long)st.stat[STAT_READ_ERR]);
	fprintf(stderr, "lost: %llu\n", (unsigned long long)(st.stat[STAT_LOST] + st.bad_records));
	fprintf(stderr, "thread-state lookups: %llu\n",
		(unsigned long long)st.stat[STAT_TSTATE_LOOKUP]);
	if (st.run_cnt)
		fprintf(stderr, "bpf run time per sample: %llu ns (%llu runs)\n",
			(unsigned long long)(st.run_ns / st.run_cnt),
			(unsigned long long)st.run_cnt);
	else
		fprintf(stderr, "bpf run time per sample: unavailable\n");
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
	fprintf(stderr, "profile: %zu KiB, %zu stacks\n",
		profile_bytes(a->rec.prof, &nstacks) >> 10, nstacks);
	fprintf(stderr, "memory used: %zu KiB (heap %zu KiB)\n", rss_bytes("\nVmRSS:") >> 10,
		rss_bytes("\nRssAnon:") >> 10);
	fprintf(stderr, "profiler cpu: %.2f s while recording (%.2f%% of a core), %.2f s before\n",
		cpu_total() - a->cpu_start, 100 * (cpu_total() - a->cpu_start) / elapsed,
		a->cpu_start);
}

int main(int argc, char **argv)
{
	static struct py_target targets[MAX_PIDS];
	struct opts o = {};
	struct app a = { .o = &o };
	struct sampler_opts so = {};
	struct discover *disc = NULL;
	double start, next_scan;
	int scan_ms = SCAN_INTERVAL_MS;
	char why[512];
	enum sampler_err se;
	int rc;

	if (parse_args(argc, argv, &o))
		return EXIT_USAGE;
	/* ELF sections read at each examination are large and short-lived: a fixed
	 * threshold keeps them in mmap, returned on free, instead of fragmenting the heap
	 * of a long recording */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	if (sampler_check_env(why, sizeof(why))) {
		err("%s", why);
		return EXIT_ENV;
	}
	if (o.npids && check_pids(&o, targets))
		return EXIT_TARGET;
	if (record_init(&a.rec)) {
		err("out of memory");
		return EXIT_ENV;
	}
	symtab_set_limit(a.rec.syms, o.mem_per_process);
	a.rec.stack_limit = o.mem_per_process;
	snapshot_init(&a.snap, now_s());

	so.freq = o.freq;
	so.run_stats = o.stats;
	so.verbose = o.verbose;
	so.cb = on_sample;
	so.ctx = &a;
	se = sampler_open(&a.sampler, &so, why, sizeof(why));
	if (se) {
		err("%s", why);
		record_fini(&a.rec);
		return EXIT_ENV;
	}

	a.tracker = tracker_new(a.sampler);
	if (!a.tracker) {
		err("out of memory");
		rc = EXIT_ENV;
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	/* before the first scan, so that no process starts unseen in between */
	{
		struct lifecycle_ops ops = {
			.examine = examine, .ended = ended, .tracked = tracked, .ctx = &a
		};

		if (lifecycle_open(&a.lc, a.sampler, &ops, why, sizeof(why))) {
			err("warning: %s; processes are found by scanning /proc every second", why);
			scan_ms = 1000;
		}
	}

	if (o.npids) {
		for (int i = 0; i < o.npids; i++)
			track(&a, &targets[i]);
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
	se = sampler_start(a.sampler, why, sizeof(why));
	if (se) {
		err("%s", why);
		rc = EXIT_ENV;
		goto out;
	}
	/* listed processes that exited before the exit tracepoint was attached are found
	 * by reap(): look often, there are few */
	if (o.npids)
		scan_ms = 1000;
	start = now_s();
	a.cpu_start = cpu_total();
	next_scan = start + scan_ms / 1000.0;
	while (!stop) {
		double t = now_s();
		int wait_ms = 100;

		if (o.duration && t - start >= o.duration)
			break;
		if (o.duration && (o.duration - (t - start)) * 1000 < wait_ms)
			wait_ms = (int)((o.duration - (t - start)) * 1000) + 1;
		refresh_tasks(&a);
		rc = sampler_poll(a.sampler, wait_ms);
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
			sampler_poll(a.sampler, 0);
			reap(&a, o.npids > 0);
			if (disc)
				discover_scan(disc, on_found, &a);
		}
	}
	sampler_poll(a.sampler, 0);

	if (a.unexamined)
		err("warning: %u process%s could not be examined (%s)%s", a.unexamined,
		    a.unexamined > 1 ? "es" : "", a.first_unexamined,
		    a.unexamined > 1 && !o.verbose ? "; -v lists them" : "");
	rc = writer_write(o.output, o.format, a.rec.prof, why, sizeof(why));
	if (rc)
		err("%s", why);
	if (o.stats)
		print_stats(&a, now_s() - start);
out:
	lifecycle_close(a.lc);
	procfilter_free(&o.filter);
	discover_free(disc);
	tracker_free(a.tracker);
	sampler_close(a.sampler);
	record_fini(&a.rec);
	return rc ? EXIT_ENV : 0;
}

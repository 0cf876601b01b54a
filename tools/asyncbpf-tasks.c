// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* asyncbpf-tasks: print the asyncio tasks of a process and who awaits whom, in the
 * format of CPython 3.14's `python -m asyncio pstree`, for 3.8-3.13. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "asyncio/atasks.h"
#include "asyncio/pstree.h"
#include "asyncio/taskthreads.h"
#include "cpython/pyproc.h"
#include "readers/samplertasks.h"
#include "cpython/symbolize.h"
#include "errmsg.h"

#define EXIT_USAGE  1
#define EXIT_ENV    2
#define EXIT_TARGET 3

static const char usage[] =
	"usage: asyncbpf-tasks [--watch SECONDS] PID\n"
	"\n"
	"Prints the asyncio tasks of a Python process (CPython 3.8-3.15) as a tree of who\n"
	"awaits whom, read from its memory without stopping it.\n"
	"\n"
	"  --watch SECONDS  first watch task creation this long (default 1; 0: don't), so\n"
	"                   that a task whose creator has returned shows under its creator\n"
	"\n"
	"Exit status: 0 done, 1 usage error or a cycle in the await graph (reported on\n"
	"stderr), 2 not root, BPF unavailable or the memory could not be read, 3 PID cannot be\n"
	"examined (does not exist, not Python, unsupported version).\n"
	"See asyncbpf-tasks(8).\n";

#define err(msg) errmsg("asyncbpf-tasks", "%s", msg)

static void on_sample(void *ctx, const struct py_sample *s, size_t size)
{
	(void)ctx;
	(void)s;
	(void)size;
}

struct origins {
	struct sampler *s;
	pid_t pid;
};

static int get_link(void *ctx, uint64_t child, uint64_t *serial, struct task_link *out)
{
	struct origins *o = ctx;

	return sampler_get_serial(o->s, o->pid, child, serial) ||
	       (out && sampler_get_link(o->s, o->pid, child, out));
}

/* Loads the sampler without sampling and probes task creation for the given time. */
static int watch(const struct py_target *t, double seconds, struct sampler **out, char *why,
		 size_t len)
{
	struct sampler_opts so = { .cb = on_sample, .no_cpu_samples = true };
	struct timespec ts;
	int ret;

	if (sampler_open(out, &so, why, len))
		return -1;
	ret = sampler_add_proc(*out, t->pid, &t->proc);
	if (!ret)
		ret = sampler_watch_creations(*out, t);
	if (ret == -ENOENT)
		return 0; /* asyncio not imported: nothing to watch */
	if (ret) {
		snprintf(why, len, "pid %d: cannot watch task creation: %s", t->pid,
			 strerror(-ret));
		return -1;
	}
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "watch", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct sampler *sampler = NULL;
	struct py_target t;
	struct atasks a;
	struct task_threads tt;
	struct symtab *st;
	double seconds = 1;
	char why[512], *end;
	long pid;
	int c, ret;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w':
			errno = 0;
			seconds = strtod(optarg, &end);
			if (*end || end == optarg || errno || !(seconds >= 0) || seconds > 3600) {
				fprintf(stderr, "asyncbpf-tasks: invalid --watch '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "asyncbpf-tasks: unknown option '%s' (see --help)\n",
				argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		err("expected one PID (see --help)");
		return EXIT_USAGE;
	}
	errno = 0;
	pid = strtol(argv[optind], &end, 10);
	if (*end || end == argv[optind] || errno || pid <= 0 || pid > INT_MAX) {
		fprintf(stderr, "asyncbpf-tasks: invalid pid '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (sampler_check_env(why, sizeof(why))) {
		err(why);
		return EXIT_ENV;
	}
	if (pyproc_inspect((pid_t)pid, &t, why, sizeof(why)) != PYPROC_OK) {
		err(why);
		return EXIT_TARGET;
	}
	if (seconds > 0 && watch(&t, seconds, &sampler, why, sizeof(why))) {
		err(why);
		sampler_close(sampler);
		return EXIT_ENV;
	}
	if (atasks_snapshot(&t, ATASKS_DETAILS, &a, NULL, why, sizeof(why))) {
		err(why);
		sampler_close(sampler);
		return EXIT_ENV;
	}
	if (sampler) {
		struct origins o = { .s = sampler, .pid = t.pid };

		ret = atasks_add_origins(&a, &t, get_link, &o);
		sampler_close(sampler);
		if (ret) {
			atasks_free(&a);
			err("out of memory");
			return EXIT_ENV;
		}
	}
	/* the tree is whole without the threads: one that cannot be read is left out */
	ret = taskthreads_read(&t, &a, &tt);
	if (ret && ret != -ENOTSUP)
		fprintf(stderr, "asyncbpf-tasks: note: no worker threads shown: %s\n",
			strerror(-ret));
	st = symtab_new();
	if (!st) {
		taskthreads_free(&tt);
		atasks_free(&a);
		err("out of memory");
		return EXIT_ENV;
	}
	ret = pstree_print(stdout, stderr, &a, &tt, &t, st);
	if (ret < 0)
		err("out of memory");
	if (!ret && a.unreadable)
		fprintf(stderr, "asyncbpf-tasks: warning: %zu task%s changed while being read\n",
			a.unreadable, a.unreadable > 1 ? "s" : "");
	symtab_free(st);
	taskthreads_free(&tt);
	atasks_free(&a);
	return ret < 0 ? EXIT_ENV : ret ? 1 : 0;
}

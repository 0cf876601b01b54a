// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder_cli.h"
#include "bpf/wallsample.h"
#include "errmsg.h"

const char recorder_cli_help[] =
	"  -a, --all              all Python processes, including ones started later (default)\n"
	"  -p, --pid PID[,PID]    only these processes\n"
	"  -F, --freq HZ          samples per second per CPU (default 99; wall mode: ticks\n"
	"                         per second, default 100)\n"
	"      --mode MODE        cpu (default): samples of threads on a CPU; wall: at each\n"
	"                         tick every thread and every suspended asyncio task, weighted\n"
	"                         by wall time (collapsed values in microseconds)\n"
	"      --max-tasks N      wall mode: at most N suspended tasks per process per tick,\n"
	"                         chosen at random and re-weighted (default: all that fit in\n"
	"                         half the tick)\n"
	"      --task-ids         tasks by the names they hold (Task-N, module.function):\n"
	"                         by default an automatic name is shown as what the task\n"
	"                         runs, its coroutine's qualname, so that stacks aggregate\n"
	"      --no-origins       do not watch task creation (a uprobe per new asyncio task);\n"
	"                         tasks whose creator returned then show as roots\n"
	"      --container ID     only processes of this container (id prefix, or the label\n"
	"                         shown for it); repeatable\n"
	"      --cgroup PATH      only processes in this cgroup or below; repeatable\n"
	"      --comm NAME        only processes with this name; repeatable\n"
	"      --container-frame  a [container ID] frame above the process of a container\n"
	"      --mem-per-process MIB  cap on each process's symbol cache and on its stack\n"
	"                         table (default 64; 0: none)\n"
	"      --native           native frames too (C extensions, libraries), unwound from a\n"
	"                         copy of each sample's user stack; CPU mode, BPF reader\n"
	"      --native-stack KIB user stack copied per sample (default 32, 4 to 64)\n"
	"      --native-all       with --native, the interpreter's own C functions too\n"
	"  -v, --verbose          libbpf and verifier messages\n"
	"      --reader READER    how stacks are read (needs -p unless bpf): bpf (default), in\n"
	"                         the kernel on cpu-clock; memcpy, by the target itself on\n"
	"                         SIGRTMIN+7 (started with LD_PRELOAD=libasyncbpf-memcpy.so);\n"
	"                         vmreadv, by this process with process_vm_readv. The last two\n"
	"                         sample running threads on a timer and do not watch creations\n";

static int bad(const struct recorder_opts *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	errmsg_v(o->prog, fmt, ap);
	va_end(ap);
	return -1;
}

/* A whole decimal number in [lo, hi]. */
static int number(const char *arg, long lo, long hi, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(arg, &end, 10);
	return *end || end == arg || errno || *out < lo || *out > hi ? -1 : 0;
}

static int parse_pids(struct recorder_cli *cli, struct recorder_opts *o, const char *arg)
{
	const char *p = arg;

	while (*p) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno || v <= 0 || v > INT_MAX || (*end && *end != ','))
			return bad(o, "invalid pid list '%s'", arg);
		if (o->npids == RECORDER_CLI_MAX_PIDS)
			return bad(o, "too many pids (at most %d)", RECORDER_CLI_MAX_PIDS);
		cli->pids[o->npids++] = (pid_t)v;
		p = *end ? end + 1 : end;
	}
	return o->npids ? 0 : bad(o, "invalid pid list '%s'", arg);
}

void recorder_cli_init(struct recorder_cli *cli, struct recorder_opts *o, unsigned int freq)
{
	memset(cli, 0, sizeof(*cli));
	cli->default_freq = freq;
	o->pids = cli->pids;
	o->filter = &cli->filter;
	o->freq = freq;
	o->origins = true;
	o->mem_per_process = 64 << 20;
}

int recorder_cli_option(struct recorder_cli *cli, struct recorder_opts *o, int opt, const char *arg)
{
	char why[256];
	long v;

	switch (opt) {
	case 'a':
		cli->all = true;
		return 1;
	case 'p':
		return parse_pids(cli, o, arg) ? -1 : 1;
	case 'F':
		if (number(arg, 1, 10000, &v))
			return bad(o, "invalid frequency '%s' (1 to 10000 Hz)", arg);
		o->freq = v;
		cli->freq_set = true;
		return 1;
	case 'v':
		o->verbose = true;
		return 1;
	case 'O':
		o->origins = false;
		return 1;
	case 'C':
	case 'G':
	case 'N':
		if (procfilter_add(&cli->filter,
				   opt == 'C'	? FILTER_CONTAINER
				   : opt == 'G' ? FILTER_CGROUP
						: FILTER_COMM,
				   arg, why, sizeof(why)))
			return bad(o, "%s", why);
		return 1;
	case 'K':
		o->container_frame = true;
		return 1;
	case 'P':
		if (number(arg, 0, 1 << 20, &v))
			return bad(o, "invalid --mem-per-process '%s' (MiB, 0 to 1048576)", arg);
		o->mem_per_process = (size_t)v << 20;
		return 1;
	case 'M':
		if (strcmp(arg, "cpu") && strcmp(arg, "wall"))
			return bad(o, "unknown mode '%s' (known: cpu, wall)", arg);
		o->wall = !strcmp(arg, "wall");
		return 1;
	case 'T':
		if (number(arg, 1, WALL_MAX_TASKS, &v))
			return bad(o, "invalid --max-tasks '%s' (1 to %d)", arg, WALL_MAX_TASKS);
		o->max_tasks = v;
		cli->max_set = true;
		return 1;
	case 'X':
		cli->native = true;
		o->native_bytes = o->native_bytes ? o->native_bytes : NATIVE_STACK_DEFAULT;
		return 1;
	case 'S':
		if (number(arg, 4, NATIVE_STACK_MAX / 1024, &v))
			return bad(o, "invalid --native-stack '%s' (KiB, 4 to %d)", arg,
				   NATIVE_STACK_MAX / 1024);
		o->native_bytes = (unsigned int)v << 10;
		cli->native_set = true;
		return 1;
	case 'J':
		o->task_ids = true;
		return 1;
	case 'I':
		o->native_all = true;
		cli->native_set = true;
		return 1;
	case 'R':
		if (reader_parse(arg, &o->reader))
			return bad(o, "unknown reader '%s' (known: bpf, memcpy, vmreadv)", arg);
		return 1;
	}
	return 0;
}

int recorder_cli_parse(struct recorder_cli *cli, struct recorder_opts *o, int argc, char **argv,
		       const char *shortopts, const struct option *longopts,
		       int (*tool)(void *ctx, int opt, char *arg), void *ctx)
{
	char optstring[128];
	int c, taken;

	/* ':' first: a missing value is told apart from an unknown option */
	snprintf(optstring, sizeof(optstring), ":%s%s", RECORDER_CLI_SHORTOPTS, shortopts);
	opterr = 0;
	while ((c = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
		if (c == ':')
			return bad(o, "option '%s' needs a value", argv[optind - 1]);
		if (c == '?')
			return bad(o, "unknown option '%s' (see --help)", argv[optind - 1]);
		taken = recorder_cli_option(cli, o, c, optarg);
		if (taken < 0 || (!taken && tool(ctx, c, optarg)))
			return -1;
	}
	if (optind < argc)
		return bad(o, "unexpected argument '%s' (see --help)", argv[optind]);
	return 0;
}

int recorder_cli_finish(struct recorder_cli *cli, struct recorder_opts *o)
{
	if (cli->all && o->npids)
		return bad(o, "-a and -p exclude each other");
	if (o->cmd && !o->cmd[0])
		return bad(o, "'--' must be followed by a command");
	if (o->cmd && (cli->all || o->npids))
		return bad(o, "-- COMMAND excludes -a and -p");
	if (o->reader != READER_BPF && !o->npids)
		return bad(o, "--reader %s needs -p", reader_name(o->reader));
	if (o->wall && o->reader != READER_BPF)
		return bad(o, "--mode wall reads through BPF: --reader %s does not go with it",
			   reader_name(o->reader));
	if (cli->native_set && !cli->native)
		return bad(o, "--native-stack and --native-all need --native");
	if (cli->native && o->wall)
		return bad(o, "--native goes with --mode cpu only: wall mode reads sleeping "
			      "threads, whose stacks the sampler does not copy");
	if (cli->native && o->reader != READER_BPF)
		return bad(o, "--native needs --reader bpf: the stack copy is taken by the BPF "
			      "sampler");
	if (!cli->native)
		o->native_bytes = 0;
	if (cli->max_set && !o->wall)
		return bad(o, "--max-tasks needs --mode wall");
	if (o->wall && !cli->freq_set)
		o->freq = 100;
	return 0;
}

void recorder_cli_free(struct recorder_cli *cli)
{
	procfilter_free(&cli->filter);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* asyncbpf-record: sample Python processes from BPF and write their stacks. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/command.h"
#include "profile/outfile.h"
#include "profile/profile.h"
#include "recorder/recorder.h"
#include "recorder/recorder_cli.h"
#include "readers/reader.h"
#include "profile/writers.h"

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
	"Samples the stacks of Python processes (CPython 3.8-3.15) from BPF.\n"
	"\n"
	"  -d, --duration SECONDS stop after this long (default: at SIGINT or SIGTERM)\n"
	"  -o, --output FILE      write here instead of stdout\n"
	"      --format FORMAT    collapsed, pprof, speedscope or html (default: from the -o\n"
	"                         name: .pb.gz/.pprof, .json, .html; else collapsed)\n"
	"      --file-mode MODE   permissions of the output file, octal (default 0600)\n"
	"      --stats            print sampling statistics on stderr at the end\n"
	"%s"
	"  -- COMMAND [ARG...]    run COMMAND and profile it and its Python descendants until\n"
	"                         it exits\n"
	"\n"
	"Exit status: 0 done, 1 usage error, 2 environment error (privileges, BTF, perf events,\n"
	"BPF rejected), 3 a -p process cannot be profiled. With a COMMAND: its exit status\n"
	"(128+N if signal N killed it), 127 if it was not found, 126 if it could not be run.\n"
	"See asyncbpf-record(8).\n";

struct opts {
	struct recorder_opts r;
	struct recorder_cli cli;
	double duration; /* 0: until a signal */
	const char *output;
	enum out_format format;
	unsigned int mode; /* of the output file */
	bool format_set;
	bool stats;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = sig;
}

static void handle_signals(void)
{
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
}

#define err(...) recorder_error("asyncbpf-record", __VA_ARGS__)

/* One of asyncbpf-record's own options: 0, or -1 (said). */
static int record_option(void *ctx, int c, char *arg)
{
	struct opts *o = ctx;
	char *end;

	switch (c) {
	case 'd':
		errno = 0;
		o->duration = strtod(arg, &end);
		if (*end || end == arg || errno || !(o->duration > 0) || o->duration > 31536000) {
			err("invalid duration '%s' (seconds, more than 0)", arg);
			return -1;
		}
		break;
	case 'o':
		o->output = arg;
		break;
	case 'f':
		if (writer_format(arg, &o->format)) {
			err("unknown format '%s' (known: %s)", arg, writer_formats());
			return -1;
		}
		o->format_set = true;
		break;
	case 's':
		o->stats = o->r.run_stats = true;
		break;
	case 'm': {
		unsigned long v;

		errno = 0;
		v = strtoul(arg, &end, 8);
		if (*end || end == arg || errno || v > 0777 || arg[0] == '-') {
			err("invalid mode '%s' (octal permissions, 0 to 0777)", arg);
			return -1;
		}
		o->mode = (unsigned int)v;
		break;
	}
	case 'h':
		printf(usage, recorder_cli_help);
		exit(0);
	default:
		err("unknown option (see --help)");
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		RECORDER_CLI_LONGOPTS,
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "stats", no_argument, NULL, 's' },
		{ "file-mode", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};

	o->r.prog = "asyncbpf-record";
	recorder_cli_init(&o->cli, &o->r, 99);
	o->format = OUT_COLLAPSED;
	o->mode = OUTFILE_MODE;
	if (recorder_cli_parse(&o->cli, &o->r, argc, argv, "d:o:h", longopts, record_option, o) ||
	    recorder_cli_finish(&o->cli, &o->r))
		return -1;
	if (!o->format_set)
		o->format = writer_guess(o->output);
	return 0;
}

static int write_output(const struct opts *o, struct profile *prof, const struct recorder_cut *cut)
{
	struct writer_meta meta = {
		.start_ns = cut->start_ns,
		.duration_ns = cut->duration_ns,
		.has_lost = true,
		.lost = cut->lost,
		.has_mode = true,
		.mode = o->mode,
	};
	char why[512];

	if (writer_write_meta(o->output, o->format, prof, &meta, why, sizeof(why))) {
		err("%s", why);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {};
	struct recorder *rec;
	struct recorder_cut cut;
	struct profile *prof;
	char why[512];
	int rc, status;

	o.r.cmd = command_split(&argc, argv);
	if (parse_args(argc, argv, &o)) {
		recorder_cli_free(&o.cli);
		return EXIT_USAGE;
	}
	if (reader_check_env(o.r.reader, why, sizeof(why))) {
		err("%s", why);
		recorder_cli_free(&o.cli);
		return EXIT_ENV;
	}
	if (o.output && strcmp(o.output, "-") && outfile_check(o.output, why, sizeof(why))) {
		err("%s", why);
		recorder_cli_free(&o.cli);
		return EXIT_ENV;
	}
	signal(SIGPIPE, SIG_IGN);
	o.r.stop = &stop;
	o.r.reader_open = handle_signals;
	rc = recorder_start(&rec, &o.r);
	if (rc) {
		recorder_cli_free(&o.cli);
		return rc;
	}
	if (recorder_run(rec, o.duration, &stop) == RECORDER_FAILED)
		rc = EXIT_ENV;
	recorder_stop(rec);
	prof = recorder_cut(rec, &cut);
	if (!prof) {
		err("out of memory");
		rc = EXIT_ENV;
	} else if (write_output(&o, prof, &cut)) {
		rc = EXIT_ENV;
	}
	if (o.stats)
		recorder_print_stats(rec, prof, stderr);
	profile_free(prof);
	/* the command's status, unless the output could not be written */
	status = recorder_command_status(rec, stop, CMD_GRACE);
	recorder_free(rec);
	recorder_cli_free(&o.cli);
	return o.r.cmd && !rc ? status : rc;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The options every recording tool takes — which processes, how often, which mode and
 * reader — parsed into a recorder_opts; each tool adds its own around them. */
#ifndef ASYNCBPF_RECORDER_CLI_H
#define ASYNCBPF_RECORDER_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include "recorder/recorder.h"

#define RECORDER_CLI_MAX_PIDS 1024

/* getopt_long entries of the shared options, and their short letters */
#define RECORDER_CLI_LONGOPTS                                                                      \
	{ "all", no_argument, NULL, 'a' }, { "pid", required_argument, NULL, 'p' },                \
		{ "freq", required_argument, NULL, 'F' }, { "verbose", no_argument, NULL, 'v' },   \
		{ "no-origins", no_argument, NULL, 'O' },                                          \
		{ "reader", required_argument, NULL, 'R' },                                        \
		{ "mode", required_argument, NULL, 'M' },                                          \
		{ "max-tasks", required_argument, NULL, 'T' },                                     \
		{ "container", required_argument, NULL, 'C' },                                     \
		{ "cgroup", required_argument, NULL, 'G' },                                        \
		{ "comm", required_argument, NULL, 'N' },                                          \
		{ "container-frame", no_argument, NULL, 'K' },                                     \
		{ "native", no_argument, NULL, 'X' },                                              \
		{ "native-stack", required_argument, NULL, 'S' },                                  \
		{ "native-all", no_argument, NULL, 'I' }, { "task-ids", no_argument, NULL, 'J' },  \
	{                                                                                          \
		"mem-per-process", required_argument, NULL, 'P'                                    \
	}
#define RECORDER_CLI_SHORTOPTS "ap:F:v"

/* Help lines of the shared options. */
extern const char recorder_cli_help[];

struct recorder_cli {
	pid_t pids[RECORDER_CLI_MAX_PIDS];
	struct procfilter filter;
	bool all, freq_set, max_set, native, native_set;
	unsigned int default_freq; /* -F when not given (wall mode: 100) */
};

/* Sets o's defaults (o->prog already set) and points it at cli's pids and filter. */
void recorder_cli_init(struct recorder_cli *cli, struct recorder_opts *o, unsigned int freq);
/* One option from getopt_long: 1 taken, 0 not a shared option, -1 bad (said on stderr). */
int recorder_cli_option(struct recorder_cli *cli, struct recorder_opts *o, int opt,
			const char *arg);
/* getopt_long over argv with the shared options and a tool's own (shortopts, longopts):
 * the shared ones are taken, every other one goes to tool(ctx, opt, optarg), which
 * returns 0 or -1 (bad, said). A missing value, an unknown option and a stray argument
 * are said on stderr. 0, or -1. */
int recorder_cli_parse(struct recorder_cli *cli, struct recorder_opts *o, int argc, char **argv,
		       const char *shortopts, const struct option *longopts,
		       int (*tool)(void *ctx, int opt, char *arg), void *ctx);
/* After the last option: conflicts between options (said on stderr, -1), and defaults
 * that depend on others. */
int recorder_cli_finish(struct recorder_cli *cli, struct recorder_opts *o);
void recorder_cli_free(struct recorder_cli *cli);

#endif

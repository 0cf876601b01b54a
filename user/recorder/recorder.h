/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One recording: its targets (listed pids, every Python process, or a command's
 * descendants), the reader, task snapshots and creation probes, and the loop that feeds
 * samples into a profile. A tool starts it, runs it in slices, cuts the profile as often
 * as it likes (each cut holds what came since the last one; symbol caches are kept),
 * stops it and prints its statistics. Messages are one line on stderr, prefixed with
 * the tool's name. */
#ifndef ASYNCBPF_RECORDER_H
#define ASYNCBPF_RECORDER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "recorder/recorder_opts.h"

/* Exit statuses the tools share; a command's own status is passed on apart from these. */
#define EXIT_USAGE  1
#define EXIT_ENV    2
#define EXIT_TARGET 3

enum recorder_end {
	RECORDER_TIME,	 /* the slice's time is up */
	RECORDER_SIGNAL, /* *stop was set */
	RECORDER_ENDED,	 /* every listed process exited, or the command did */
	RECORDER_FAILED, /* reading samples failed (said on stderr) */
};

/* What one cut covers. */
struct recorder_cut {
	uint64_t start_ns;    /* CLOCK_REALTIME at the start of the slice */
	uint64_t duration_ns; /* up to the cut */
	uint64_t lost;	      /* samples taken in that time but not in the profile */
};

struct recorder;

/* One message line on stderr, "prog: ...", the status line erased first. */
void recorder_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Checks the environment and the listed pids, loads and attaches the reader, finds the
 * first targets and starts sampling (a command is started once sampling runs). 0, or
 * EXIT_ENV, EXIT_TARGET, 126/127 (the command could not be run), each said on stderr.
 * On failure *out is NULL. */
int recorder_start(struct recorder **out, const struct recorder_opts *o);

/* Records for up to seconds (0: without limit) or until *stop becomes non-zero. */
enum recorder_end recorder_run(struct recorder *rec, double seconds, volatile sig_atomic_t *stop);

/* The profile aggregated since the last cut (or the start), the samples the reader holds
 * taken in first, replaced by an empty one;
 * the caller frees it. NULL when out of memory (nothing is lost: the samples stay for
 * the next cut). */
struct profile *recorder_cut(struct recorder *rec, struct recorder_cut *info);

/* Stops sampling and takes in what is still pending; says what the recording missed
 * (no Python under the command, processes that could not be examined). Cut after it. */
void recorder_stop(struct recorder *rec);

/* Samples in all cuts so far and in the current profile, and samples lost: their sum is
 * every sample taken in a target. */
struct recorder_totals {
	uint64_t taken;	   /* samples of target processes the reader took */
	uint64_t recorded; /* in the profiles */
	uint64_t lost;
	uint64_t unknown_frames; /* frames shown as [unknown] */
};
void recorder_totals(struct recorder *rec, struct recorder_totals *t);
size_t recorder_ntargets(const struct recorder *rec);

/* A process being profiled. */
struct recorder_target {
	pid_t pid;
	char version[32]; /* "3.12.1" */
	uint64_t samples; /* since the start */
	uint64_t lost;	  /* of those, not in any profile (out of memory) */
};
/* The processes profiled now: the first max into out; returns how many there are. */
size_t recorder_targets(const struct recorder *rec, struct recorder_target *out, size_t max);

/* The --stats report; last is the profile of the last cut (its size is reported). */
void recorder_print_stats(struct recorder *rec, const struct profile *last, FILE *f);

/* A command's exit status once it has ended (after grace seconds it is sent SIGTERM),
 * 128+sig when signal sig ended the recording before it could run; -1 without one. */
int recorder_command_status(struct recorder *rec, int sig, double grace);

void recorder_free(struct recorder *rec);

#endif

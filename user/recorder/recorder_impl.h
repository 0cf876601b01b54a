/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Between the recorder's files (recorder.c: start, loop, cut, stop; recorder_targets.c:
 * which processes and their tasks; recorder_stats.c: --stats); no one else needs it. */
#ifndef ASYNCBPF_RECORDER_IMPL_H
#define ASYNCBPF_RECORDER_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "process/command.h"
#include "process/discover.h"
#include "process/lifecycle.h"
#include "profile/joiner.h"
#include "recorder/recorder_opts.h"
#include "readers/reader.h"
#include "asyncio/snappace.h"
#include "asyncio/tracker.h"

#define WARNED 64

struct recorder {
	struct recorder_opts o;
	struct joiner jn;
	struct reader *reader;
	struct tracker *tracker; /* the reader's */
	struct command *cmd;
	struct lifecycle *lc;
	unsigned int unexamined; /* -a: processes whose files could not be read */
	uint64_t origins_gone;	 /* creation probes not attached: the process exited or exec'd */
	uint64_t filtered;	 /* Python processes the filters left out */
	uint64_t refused;	 /* processes the reader cannot read */
	struct snappace snap;
	double cpu_start; /* CPU time used before sampling started */
	struct warned {
		pid_t pid;
		unsigned long long start;
	} warned[WARNED]; /* the last processes warned about as unsupported */
	size_t nwarned;
	char first_unexamined[512];
	/* processes whose tasks, or whose task creation, could not be read, and the first why */
	uint64_t tasks_off, origins_off;
	char tasks_off_why[512], origins_off_why[512];
	/* 3.12+ processes whose code objects the CPU sampler reads (no version counter) */
	uint64_t code_read;
	char code_read_why[256];
	struct discover *disc; /* -a: the /proc scan */
	int scan_ms;	       /* between /proc scans and reaps */
	double start, next_scan, next_status;
	uint64_t cut_ns;   /* CLOCK_REALTIME when the current profile began */
	double cut_at;	   /* and in recorder_now() */
	uint64_t cut_lost; /* lost samples counted in earlier cuts */
	uint64_t recorded; /* samples in earlier cuts */
	bool stopped;
	double elapsed; /* start to stop */
	uint64_t lost;
	struct py_target *listed; /* o.pids, inspected */
};

/* One line on stderr, prefixed with the tool's name. */
void recorder_say(struct recorder *rec, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double recorder_now(void);
/* User and system CPU time of this process, s. */
double recorder_cpu(void);
/* Samples taken in tracked processes that are not in the profile. */
uint64_t recorder_lost(struct recorder *rec);

/* recorder_targets.c: the listed pids inspected (-1: one is bad, said); tracking a
 * process; task snapshots and creation probes of the targets due; the callbacks of
 * discovery, the lifecycle events and a command's scan; dropping targets that exited. */
int targets_check(struct recorder *rec, struct py_target *targets);
void targets_track(struct recorder *rec, const struct py_target *t);
void targets_refresh(struct recorder *rec, double max_s);
enum pyproc_status targets_inspect(void *ctx, pid_t pid);
enum pyproc_status targets_examine(void *ctx, pid_t pid);
void targets_ended(void *ctx, pid_t pid, bool exec);
bool targets_tracked(void *ctx, pid_t pid);
void targets_exec(void *ctx, pid_t pid);
void targets_reap(struct recorder *rec, bool explicit_pids);

#endif

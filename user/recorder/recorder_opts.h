/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What a tool asks of a recording (recorder.h), kept apart so that the recorder's own
 * files can hold it without the whole interface. */
#ifndef ASYNCBPF_RECORDER_OPTS_H
#define ASYNCBPF_RECORDER_OPTS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "process/procfilter.h"
#include "readers/reader.h"

struct recorder_opts {
	const char *prog;  /* prefix of every message */
	const pid_t *pids; /* only these processes ... */
	int npids;
	char **cmd; /* ... or this command (argv) and its descendants; neither: all */
	unsigned int freq;
	bool wall;		/* wall-clock mode */
	unsigned int max_tasks; /* wall mode: suspended tasks per process per tick, 0: all */
	bool origins;		/* link new tasks to their creators (uprobe on task creation) */
	double snapshot_budget; /* share of a core for task snapshots; 0: 0.005 */
	bool verbose;
	bool run_stats; /* the kernel's bpf_stats, for the BPF run time per sample */
	enum reader_kind reader;
	const struct procfilter *filter; /* NULL: none */
	bool container_frame;
	size_t mem_per_process;	     /* bytes of symbols and stacks per process, 0: no cap */
	volatile sig_atomic_t *stop; /* set by a signal: a command not started yet is not run */
	bool no_status;		     /* no progress line on stderr, even on a terminal */
	/* --native: user stack bytes copied per sample (0: no native frames), and the
	 * interpreter's own C functions shown too */
	unsigned int native_bytes;
	bool native_all;
	bool task_ids; /* automatic task names as they are, not grouped by coroutine */
	/* Called once the reader is loaded, before the first targets are found: where a tool
	 * installs its signal handlers, since a handled SIGINT is what tells a bench or a test
	 * that the recorder is about to sample. NULL: none. */
	void (*reader_open)(void);
};

#endif

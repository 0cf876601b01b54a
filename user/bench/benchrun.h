/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One measured run of a workload, alone or under asyncbpf-record. The workload, run as
 * PYTHON SCRIPT REQUESTS WORK DEPTH [MODE], prints READY, waits for a line on stdin, does
 * its work and prints one JSON line: {"result": N, "expected": N, "wall": s, "cpu": s}.
 * The recorder is started on it once it is ready, and the work is released once the
 * recorder samples: start-up is counted against neither. */
#ifndef ASYNCBPF_BENCHRUN_H
#define ASYNCBPF_BENCHRUN_H

#include <stddef.h>

struct bench_workload {
	const char *python, *script;
	int requests, work, depth;
	const char *mode;    /* its MODE argument; NULL: none */
	const char *preload; /* its LD_PRELOAD; NULL: none (unset) */
};

struct bench_recorder {
	const char *path;   /* asyncbpf-record */
	const char *reader; /* bpf, memcpy or vmreadv */
	unsigned int freq;
	const char *output; /* where it writes its collapsed profile */
	const char *stats;  /* where its stderr goes, --stats included */
	int native;	    /* with --native (bpf) */
	int origins;	    /* with the creation probe: without --no-origins (bpf) */
};

struct bench_result {
	double wall, cpu;	  /* the workload's wall and CPU seconds for the work */
	double prof_cpu;	  /* the recorder's CPU seconds */
	double cost_ns;		  /* read cost per sample: the median of the run's samples */
	double p90_ns;		  /* their 90th percentile */
	double mean_ns;		  /* and their mean */
	double reads, read_bytes; /* reads of the target's memory per sample (bpf, vmreadv) */
	double native_bytes;	  /* --native: user stack bytes copied per sample */
	double unwind_ns;	  /* --native: the recorder's unwind time per native stack */
	double taken, recorded, lost;
	double work_linked;   /* pool workers' samples drawn under their task (bpf) */
	double work_unlinked; /* theirs whose item no task awaited */
	double in_task;	      /* samples that walked a task chain (in an asyncio task) */
	int ok; /* the work finished with the expected result, the recorder exited 0 */
};

/* rec NULL: the workload alone. What fails is said on stderr after prog's name; the
 * values not measured are NAN. */
struct bench_result bench_run(const char *prog, const struct bench_workload *w,
			      const struct bench_recorder *rec);

/* The recorder's CPU before its first sample (--stats' "profiler cpu ... s before"),
 * started n times in turn on one waiting workload, with extra arguments args (NULL
 * ended: a mode, say) and its stderr into stats: out[0..n), NAN for a start that failed
 * (said on stderr). Returns how many failed. */
int bench_startup(const char *prog, const struct bench_workload *w, const char *record,
		  char *const args[], const char *output, const char *stats, double *out, int n);

/* A whole file, NUL-terminated, its length in *len: "" when it cannot be read, NULL when
 * out of memory. The caller frees it. */
char *bench_read_file(const char *path, size_t *len);

#endif

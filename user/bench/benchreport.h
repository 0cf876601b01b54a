/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* asyncbpf-bench's measurements and what it writes of them: the readers' table and its CSV,
 * the start-up and thread work tables, the depth sweep as a CSV and a plot. */
#ifndef ASYNCBPF_BENCHREPORT_H
#define ASYNCBPF_BENCHREPORT_H

#include <stddef.h>

#include "bench/benchrun.h"

#define BENCH_MAX_REPS	 20
#define BENCH_NREADERS	 4 /* bpf, memcpy, vmreadv, then bpf with --native */
#define BENCH_MEMCPY	 1
#define BENCH_NATIVE	 3
#define BENCH_NFREQS	 2
#define BENCH_NCONFIGS	 (1 + BENCH_NREADERS * BENCH_NFREQS)
#define BENCH_MAX_DEPTHS 8
/* the rounds of each measurement of a profiling signal's cost */
#define BENCH_SIGNAL_ROUNDS 20000
/* start-up: the recorder started this many times in each mode, with the default options
 * (the creation probe too) */
#define BENCH_STARTUPS 5
#define BENCH_NMODES   2
/* thread work: the workload's modes (workload.py): a pool worker's items awaited by tasks
 * (its samples linked to them), and the same function in a plain thread (no link); bpf at
 * BENCH_TW_FREQ with the creation probe, which makes each new task known at once */
#define BENCH_NTW      2
#define BENCH_TW_FREQ  999
#define BENCH_TW_DEPTH 30 /* fn's Python calls above its burn loop */
/* the long-lived chain (workload.py's "chain": three tasks of BENCH_CHAIN_DEPTH coroutines
 * each), under bpf, memcpy and vmreadv at BENCH_TW_FREQ */
#define BENCH_CHAIN_READERS 3
#define BENCH_CHAIN_DEPTH   40

extern const char *const bench_readers[BENCH_NREADERS];
extern const unsigned int bench_freqs[BENCH_NFREQS];
extern const char *const bench_modes[BENCH_NMODES];
extern const char *const bench_tw_modes[BENCH_NTW];

/* A configuration: no profiler (cfg[0]), then each reader at each rate, in the order of
 * bench_readers and bench_freqs. */
struct bench_config {
	int reader; /* index in bench_readers, -1: none */
	unsigned int freq;
	struct bench_result runs[BENCH_MAX_REPS];
	int nruns;
	/* how much its profile has in common with bpf's at its rate, stacks and leaves (NAN
	 * for none and bpf itself), and its even runs' with its odd runs' */
	double overlap_bpf, overlap_bpf_leaves, overlap_self;
};

struct bench_report {
	struct bench_config cfg[BENCH_NCONFIGS];
	int reps;
	double signal_ns[BENCH_MAX_REPS];		   /* a profiling signal's cost, each rep */
	double startup_s[BENCH_NMODES][BENCH_STARTUPS];	   /* recorder CPU before its 1st sample */
	struct bench_result tw[BENCH_NTW][BENCH_MAX_REPS]; /* thread work, each repetition */
	struct bench_result chain[BENCH_CHAIN_READERS][BENCH_MAX_REPS]; /* the long chain */
	/* the readers' profiles against each other at each rate: bpf-memcpy, bpf-vmreadv,
	 * memcpy-vmreadv; whole stacks, and the leaf frames alone */
	double pair_overlap[BENCH_NFREQS][3], pair_overlap_leaves[BENCH_NFREQS][3];
	/* the depth sweep at 999 Hz: cost per sample (ns) of each reader at each depth */
	double depth_cost[BENCH_NREADERS][BENCH_MAX_DEPTHS];
	const int *depths;
	int ndepths;
};

/* Sets each configuration's reader and rate. */
void bench_report_init(struct bench_report *r);

/* "none" or "READER @ FREQ Hz", in buf. */
const char *bench_config_name(const struct bench_config *c, char *buf, size_t len);

/* Writes DIR/readers.md, readers.csv, depth.csv and depth.svg: 0, or -1 with why. */
int bench_report_write(const char *dir, const struct bench_report *r, char *why, size_t len);

#endif

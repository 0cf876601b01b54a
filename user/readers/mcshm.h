/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The memory the memcpy reader shares with a target: preload/asyncbpf-memcpy.c creates
 * it in the target at start (/dev/shm/asyncbpf-memcpy.PID), asyncbpf-record --reader
 * memcpy opens it. The profiler writes the process record and the asyncio tables (what
 * BPF gets from maps), the target's signal handler writes sample records into the ring
 * and its own counters. */
#ifndef ASYNCBPF_MCSHM_H
#define ASYNCBPF_MCSHM_H

#include <stdint.h>

#include "bpf/asyncbpf.h"
#include "asyncio/taskmaps.h"

#define MC_MAGIC   0x316d7063796e7361ULL /* "asyncpm1" */
#define MC_VERSION 4
#define MC_PATH	   "/dev/shm/asyncbpf-memcpy.%d"
/* the profiling signal: SIGRTMIN + 7 (glibc's SIGRTMIN is 34, it keeps 32 and 33) */
#define MC_SIGNAL_OFFSET 7
#define MC_SLOTS	 256

struct mc_slot {
	uint64_t ready; /* ring position + 1 once the record is complete */
	struct py_sample s;
};

struct mc_shm {
	/* written by the target at start */
	uint64_t magic;
	uint32_t version;
	int32_t pid;
	int32_t signo;
	uint32_t size; /* sizeof(struct mc_shm) as the target was built */
	/* written by the profiler: proc_ready is set once proc is complete, and cleared
	 * when it detaches */
	uint64_t proc_ready;
	struct py_proc proc;
	/* the target's counters */
	uint64_t handled __attribute__((aligned(64))); /* handler runs that walked */
	uint64_t handler_ns;			       /* time inside those runs */
	uint64_t idle;				       /* handler runs with no profiler attached */
	uint64_t lost;				       /* ring full */
	uint64_t faults;			       /* walks ended by a caught SIGSEGV/SIGBUS */
	uint64_t cost_hist[COST_BUCKETS];	       /* handler time, by cost_bucket() */
	uint64_t mem_reads, mem_bytes;		       /* the walks' guarded copies */
	uint64_t head __attribute__((aligned(64)));    /* next ring position to claim */
	uint64_t tail __attribute__((aligned(64)));    /* next position the profiler reads */
	struct taskmaps maps __attribute__((aligned(64)));
	struct mc_slot ring[MC_SLOTS];
};

#endif

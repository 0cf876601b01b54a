/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The two userspace readers, driven by the profiler's own timer: on each tick, the
 * target threads that are running (state R in /proc/PID/task/TID/stat, as the BPF
 * sampler's cpu-clock sees only threads on a CPU) are sampled, either
 *  - vmreadv: walked from here with process_vm_readv (bpf/pywalk.h through
 *    user/cpython/vmwalk.h), the target not stopped, or
 *  - memcpy: sent SIGRTMIN+7, on which preload/asyncbpf-memcpy.c walks the thread in the
 *    target and writes the record to shared memory (user/readers/mcshm.h), read back here.
 * Both produce the BPF sampler's struct py_sample records. */
#ifndef ASYNCBPF_UREADER_H
#define ASYNCBPF_UREADER_H

#include <stdint.h>

#include "cpython/pyproc.h"
#include "readers/reader.h"
#include "readers/sampler.h"
#include "asyncio/tracker.h"

struct ureader_opts {
	enum reader_kind kind; /* READER_MEMCPY or READER_VMREADV */
	unsigned int freq;     /* ticks per second */
	sampler_cb cb;
	void *ctx;
};

struct ureader;

struct ureader *ureader_new(const struct ureader_opts *o);
void ureader_free(struct ureader *u);

/* Starts reading t; -1 with a one-line reason (memcpy: the library is not loaded). */
int ureader_add_proc(struct ureader *u, const struct py_target *t, char *why, size_t len);
void ureader_del_proc(struct ureader *u, pid_t pid);

/* The asyncio tables of the tracked processes, for tracker_new_ops(.., u). */
extern const struct taskmaps_ops ureader_taskmaps_ops;

/* Stops the timer: no sample is taken after it returns (records may still be
 * delivered by ureader_poll). */
void ureader_stop(struct ureader *u);

/* Starts the timer if needed and delivers records for about timeout_ms, delivering records to the
 * callback. */
int ureader_poll(struct ureader *u, int timeout_ms);

struct ureader_stats {
	uint64_t ticks, missed_ticks; /* timer ticks run, ticks skipped when late */
	uint64_t samples;	      /* running threads sampled (walked, or signalled) */
	uint64_t records;	      /* records delivered */
	uint64_t no_tstate, truncated, read_err, in_task;
	uint64_t lost;			  /* memcpy: ring full or malformed records */
	uint64_t read_ns, read_cnt;	  /* vmreadv: time walking; memcpy: in the handler */
	uint64_t mem_reads, mem_bytes;	  /* process_vm_readv calls, memcpy's copies; bytes */
	uint64_t faults, idle;		  /* memcpy: caught faults, handler runs not attached */
	uint64_t cost_hist[COST_BUCKETS]; /* read_ns per sample, by cost_bucket() */
};

void ureader_read_stats(struct ureader *u, struct ureader_stats *st);

#endif

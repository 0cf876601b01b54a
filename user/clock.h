/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The one clock the library and the tools measure intervals with: CLOCK_MONOTONIC, in
 * seconds or nanoseconds; a thread's CPU clock; and CLOCK_REALTIME for the dates
 * profiles and queues carry. Header-only, shared by every folder like hash.h. */
#ifndef ASYNCBPF_CLOCK_H
#define ASYNCBPF_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC, s */
static inline double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CLOCK_MONOTONIC, ns */
static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* CLOCK_THREAD_CPUTIME_ID, ns: the calling thread's CPU time (a BPF iterator it reads
 * runs in its syscalls) */
static inline uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* CLOCK_REALTIME, ns since the epoch */
static inline uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#endif

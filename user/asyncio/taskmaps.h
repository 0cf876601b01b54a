/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The sampler's three asyncio maps (coroutine -> task, task -> serial, task -> link) as
 * fixed open-addressing tables in plain memory, for the readers that walk in userspace:
 * the vmreadv reader keeps them in its own memory, the memcpy reader in memory shared
 * with the target, where the profiler writes them while the target's signal handler
 * reads. One writer; readers copy an entry and check its sequence number, so a reader
 * never sees a half-written entry (it misses it, as a sample racing a BPF map update
 * may). The lookups are async-signal-safe and take no lock. */
#ifndef ASYNCBPF_TASKMAPS_H
#define ASYNCBPF_TASKMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "bpf/asyncbpf.h"

#define TM_SLOTS (1u << 14) /* per table */
#define TM_PROBE 64	    /* slots a lookup or an insertion looks at */

enum tm_state { TM_EMPTY = 0, TM_USED = 1, TM_TOMB = 2 };

/* seq is odd while the writer changes the entry */
struct tm_coro {
	uint64_t seq;
	struct task_key key; /* key.pad holds the tm_state */
	struct task_id val;
};

struct tm_serial {
	uint64_t seq;
	struct task_key key;
	uint64_t val;
};

struct tm_link {
	uint64_t seq;
	struct task_key key;
	struct task_link val;
};

struct taskmaps {
	struct tm_coro coro[TM_SLOTS];
	struct tm_serial serial[TM_SLOTS];
	struct tm_link link[TM_SLOTS];
};

static inline uint32_t tm_hash(uint32_t pid, uint64_t addr)
{
	uint64_t h = (addr >> 4) * 0x9E3779B97F4A7C15ULL ^ pid;

	return (uint32_t)(h >> 40) & (TM_SLOTS - 1);
}

/* Reader side: copies the value of (pid, addr) into out; 0 when found. */
#define TM_LOOKUP(table, P_, A_, out)                                                              \
	({                                                                                         \
		int found_ = -1;                                                                   \
		uint32_t h_ = tm_hash((P_), (A_));                                                 \
		for (uint32_t i_ = 0; i_ < TM_PROBE; i_++) {                                       \
			__typeof__(&(table)[0]) e_ = &(table)[(h_ + i_) & (TM_SLOTS - 1)];         \
			uint64_t s1_ = __atomic_load_n(&e_->seq, __ATOMIC_ACQUIRE);                \
			struct task_key k_ = e_->key;                                              \
			__typeof__(e_->val) v_ = e_->val;                                          \
			__atomic_thread_fence(__ATOMIC_ACQUIRE);                                   \
			if ((s1_ & 1) || __atomic_load_n(&e_->seq, __ATOMIC_RELAXED) != s1_)       \
				continue;                                                          \
			if (k_.pad == TM_EMPTY)                                                    \
				break;                                                             \
			if (k_.pad == TM_USED && k_.pid == (P_) && k_.addr == (A_)) {              \
				*(out) = v_;                                                       \
				found_ = 0;                                                        \
				break;                                                             \
			}                                                                          \
		}                                                                                  \
		found_;                                                                            \
	})

static inline int tm_get_coro_task(const struct taskmaps *m, __u32 pid, __u64 coro,
				   struct task_id *out)
{
	return TM_LOOKUP(m->coro, pid, coro, out);
}

static inline int tm_get_serial(const struct taskmaps *m, __u32 pid, __u64 task, __u64 *out)
{
	return TM_LOOKUP(m->serial, pid, task, out);
}

static inline int tm_get_link(const struct taskmaps *m, __u32 pid, __u64 task,
			      struct task_link *out)
{
	return TM_LOOKUP(m->link, pid, task, out);
}

/* Writer side (one writer): -ENOSPC when the probe window is full, -ENOENT on a
 * deletion of a missing key. */
void tm_init(struct taskmaps *m);
int tm_set_coro_task(struct taskmaps *m, pid_t pid, uint64_t coro, const struct task_id *id);
int tm_del_coro_task(struct taskmaps *m, pid_t pid, uint64_t coro);
int tm_set_serial(struct taskmaps *m, pid_t pid, uint64_t task, uint64_t serial);
int tm_del_serial(struct taskmaps *m, pid_t pid, uint64_t task);
int tm_set_link(struct taskmaps *m, pid_t pid, uint64_t child, const struct task_link *l);
int tm_del_link(struct taskmaps *m, pid_t pid, uint64_t child);
/* Drops every entry of pid. */
void tm_forget(struct taskmaps *m, pid_t pid);

#endif

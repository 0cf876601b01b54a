// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>

#include "asyncio/taskmaps.h"
#include "asyncio/tracker.h"

void tm_init(struct taskmaps *m)
{
	memset(m, 0, sizeof(*m));
}

/* Index of (pid, addr) in the table, or of the first free slot on its probe path
 * (*found 0); -1 when neither is in the window. */
#define TM_FIND(table, P_, A_, found)                                                              \
	({                                                                                         \
		int64_t at_ = -1;                                                                  \
		uint32_t h_ = tm_hash((P_), (A_));                                                 \
		*(found) = 0;                                                                      \
		for (uint32_t i_ = 0; i_ < TM_PROBE; i_++) {                                       \
			uint32_t j_ = (h_ + i_) & (TM_SLOTS - 1);                                  \
			const struct task_key *k_ = &(table)[j_].key;                              \
			if (k_->pad == TM_USED && k_->pid == (uint32_t)(P_) && k_->addr == (A_)) { \
				at_ = j_;                                                          \
				*(found) = 1;                                                      \
				break;                                                             \
			}                                                                          \
			if (k_->pad != TM_USED && at_ < 0)                                         \
				at_ = j_;                                                          \
			if (k_->pad == TM_EMPTY)                                                   \
				break;                                                             \
		}                                                                                  \
		at_;                                                                               \
	})

#define TM_WRITE(e, body)                                                                          \
	do {                                                                                       \
		__atomic_store_n(&(e)->seq, (e)->seq + 1, __ATOMIC_RELAXED);                       \
		__atomic_thread_fence(__ATOMIC_RELEASE);                                           \
		body;                                                                              \
		__atomic_store_n(&(e)->seq, (e)->seq + 1, __ATOMIC_RELEASE);                       \
	} while (0)

#define TM_SET(table, P_, A_, value)                                                               \
	({                                                                                         \
		int f_, ret_ = -ENOSPC;                                                            \
		int64_t at_ = TM_FIND(table, P_, A_, &f_);                                         \
		if (at_ >= 0) {                                                                    \
			__typeof__(&(table)[0]) e_ = &(table)[at_];                                \
			TM_WRITE(e_, ({                                                            \
					 e_->key = (struct task_key){ .pid = (P_),                 \
								      .pad = TM_USED,              \
								      .addr = (A_) };              \
					 e_->val = (value);                                        \
				 }));                                                              \
			ret_ = 0;                                                                  \
		}                                                                                  \
		ret_;                                                                              \
	})

#define TM_DEL(table, P_, A_)                                                                      \
	({                                                                                         \
		int f_, ret_ = -ENOENT;                                                            \
		int64_t at_ = TM_FIND(table, P_, A_, &f_);                                         \
		if (f_) {                                                                          \
			__typeof__(&(table)[0]) e_ = &(table)[at_];                                \
			TM_WRITE(e_, e_->key.pad = TM_TOMB);                                       \
			ret_ = 0;                                                                  \
		}                                                                                  \
		ret_;                                                                              \
	})

int tm_set_coro_task(struct taskmaps *m, pid_t pid, uint64_t coro, const struct task_id *id)
{
	return TM_SET(m->coro, pid, coro, *id);
}

int tm_del_coro_task(struct taskmaps *m, pid_t pid, uint64_t coro)
{
	return TM_DEL(m->coro, pid, coro);
}

int tm_set_serial(struct taskmaps *m, pid_t pid, uint64_t task, uint64_t serial)
{
	return TM_SET(m->serial, pid, task, serial);
}

int tm_del_serial(struct taskmaps *m, pid_t pid, uint64_t task)
{
	return TM_DEL(m->serial, pid, task);
}

int tm_set_link(struct taskmaps *m, pid_t pid, uint64_t child, const struct task_link *l)
{
	return TM_SET(m->link, pid, child, *l);
}

int tm_del_link(struct taskmaps *m, pid_t pid, uint64_t child)
{
	return TM_DEL(m->link, pid, child);
}

#define TM_FORGET(table, P_)                                                                       \
	do {                                                                                       \
		for (uint32_t j_ = 0; j_ < TM_SLOTS; j_++) {                                       \
			__typeof__(&(table)[0]) e_ = &(table)[j_];                                 \
			if (e_->key.pad == TM_USED && e_->key.pid == (uint32_t)(P_))               \
				TM_WRITE(e_, e_->key.pad = TM_TOMB);                               \
		}                                                                                  \
	} while (0)

void tm_forget(struct taskmaps *m, pid_t pid)
{
	TM_FORGET(m->coro, pid);
	TM_FORGET(m->serial, pid);
	TM_FORGET(m->link, pid);
}

#define TM_OP(op, ...)                                                                             \
	static int op_##op(void *ctx, pid_t pid, uint64_t addr, __VA_ARGS__)                       \
	{                                                                                          \
		return tm_##op(ctx, pid, addr, v);                                                 \
	}
TM_OP(set_coro_task, const struct task_id *v)
TM_OP(get_coro_task, struct task_id *v)
TM_OP(set_serial, uint64_t v)
TM_OP(set_link, const struct task_link *v)
TM_OP(get_link, struct task_link *v)

static int op_get_serial(void *ctx, pid_t pid, uint64_t addr, uint64_t *v)
{
	__u64 sn = 0;
	int ret = tm_get_serial(ctx, pid, addr, &sn);

	*v = sn;
	return ret;
}

static int op_del_coro_task(void *ctx, pid_t pid, uint64_t addr)
{
	return tm_del_coro_task(ctx, pid, addr);
}

static int op_del_serial(void *ctx, pid_t pid, uint64_t addr)
{
	return tm_del_serial(ctx, pid, addr);
}

static int op_del_link(void *ctx, pid_t pid, uint64_t addr)
{
	return tm_del_link(ctx, pid, addr);
}

const struct taskmaps_ops taskmaps_ops = {
	.set_coro_task = op_set_coro_task,
	.get_coro_task = op_get_coro_task,
	.del_coro_task = op_del_coro_task,
	.set_serial = op_set_serial,
	.get_serial = op_get_serial,
	.del_serial = op_del_serial,
	.set_link = op_set_link,
	.get_link = op_get_link,
	.del_link = op_del_link,
};

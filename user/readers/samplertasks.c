// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <limits.h>
#include <stdint.h>

#include "asyncio/atasks.h"
#include "readers/samplertasks.h"

#define BPF_OP(op, ...)                                                                            \
	static int bpf_##op(void *ctx, pid_t pid, uint64_t addr, __VA_ARGS__)                      \
	{                                                                                          \
		return sampler_##op(ctx, pid, addr, v);                                            \
	}
BPF_OP(set_coro_task, const struct task_id *v)
BPF_OP(get_coro_task, struct task_id *v)
BPF_OP(set_serial, uint64_t v)
BPF_OP(get_serial, uint64_t *v)
BPF_OP(set_link, const struct task_link *v)
BPF_OP(get_link, struct task_link *v)
BPF_OP(set_name, const struct name_ent *v)

static int bpf_del_coro_task(void *ctx, pid_t pid, uint64_t addr)
{
	return sampler_del_coro_task(ctx, pid, addr);
}

static int bpf_del_serial(void *ctx, pid_t pid, uint64_t addr)
{
	return sampler_del_serial(ctx, pid, addr);
}

static int bpf_del_link(void *ctx, pid_t pid, uint64_t addr)
{
	return sampler_del_link(ctx, pid, addr);
}

static int bpf_set_work(void *ctx, pid_t pid, const struct py_work *w)
{
	return sampler_set_work(ctx, pid, w);
}

const struct taskmaps_ops sampler_taskmaps_ops = {
	.set_coro_task = bpf_set_coro_task,
	.get_coro_task = bpf_get_coro_task,
	.del_coro_task = bpf_del_coro_task,
	.set_serial = bpf_set_serial,
	.get_serial = bpf_get_serial,
	.del_serial = bpf_del_serial,
	.set_link = bpf_set_link,
	.get_link = bpf_get_link,
	.del_link = bpf_del_link,
	.set_name = bpf_set_name,
	.set_work = bpf_set_work,
};

int sampler_watch_creations(struct sampler *s, const struct py_target *t)
{
	char path[PATH_MAX + 64];
	uint64_t off;
	int ret = atasks_task_init(t, path, sizeof(path), &off);

	if (!ret)
		ret = sampler_attach_task_init(s, t->pid, path, off);
	if (ret)
		return ret;
	/* without it the names are right still, copied at every sample: counted, not fatal */
	if (atasks_task_set_name(t, path, sizeof(path), &off) ||
	    sampler_attach_set_name(s, t->pid, path, off))
		sampler_count_unwatched(s);
	if (!sampler_task_lives(s))
		return ret;
	ret = atasks_task_dealloc(t, path, sizeof(path), &off);
	return ret ? ret : sampler_attach_task_free(s, t->pid, path, off);
}

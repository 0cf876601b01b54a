/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The maps the CPU sampler (sampler.bpf.c) owns and the other programs share: userspace
 * makes wall.bpf.c and lifecycle.bpf.c reuse the sampler's fds (bpf_map__reuse_fd), so
 * the definitions must match. An includer that walks (after pywalk.h) defines MAPS_WALK
 * for the asyncio maps and the lookups on them (a map declared and unused would still be
 * allocated). */
#ifndef ASYNCBPF_MAPS_H
#define ASYNCBPF_MAPS_H

#include "asyncbpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PROCS);
	__type(key, __u32);
	__type(value, struct py_proc);
} procs SEC(".maps");

/* (tgid << 32 | tid) -> PyThreadState, revalidated on every use. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} tstates SEC(".maps");

#ifdef MAPS_WALK
/* The thread state of thread_id ((tgid << 32 | tid) is key), from the cache while it
 * still belongs to the thread; *looked_up (if given) says whether it had to be searched. */
static __always_inline __u64 pw_cached_tstate(struct pw_reader *r, const struct py_proc *p,
					      __u64 key, __u64 thread_id, bool *looked_up)
{
	__u64 *cached = bpf_map_lookup_elem(&tstates, &key);
	__u64 ts;

	if (cached && pw_tstate_owned_by(r, p, *cached, thread_id))
		return *cached;
	if (looked_up)
		*looked_up = true;
	ts = pw_find_tstate(r, p, thread_id, 0);
	if (ts)
		bpf_map_update_elem(&tstates, &key, &ts, BPF_ANY);
	else if (cached)
		bpf_map_delete_elem(&tstates, &key);
	return ts;
}

/* coroutine -> the task running it, from userspace snapshots and task creation */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 17);
	__type(key, struct task_key);
	__type(value, struct task_id);
} coro_task SEC(".maps");

/* task address -> serial of the task that lives there now, and its short name */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 17);
	__type(key, struct task_key);
	__type(value, struct task_serial);
} task_serials SEC(".maps");

/* task -> the task it is linked to: an awaiter (userspace) or its creator */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 17);
	__type(key, struct task_key);
	__type(value, struct task_link);
} task_links SEC(".maps");

/* wall mode: the newest creations, per CPU (struct task_birth) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BIRTH_SLOTS + 1);
	__type(key, __u32);
	__type(value, struct task_birth);
} task_births SEC(".maps");

/* task -> its name as copied (pw_copy_name), read by userspace for NAME_CACHED */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 14);
	__type(key, struct name_key);
	__type(value, struct name_ent);
} task_names SEC(".maps");

/* a new entry starts as this and is filled in place: it is too big for the stack */
const struct name_ent no_name;

/* the name cache pywalk.h declares; key is somewhere other than the stack, which the walk
 * has used up: each includer says where (NAME_KEY(r)) */
static __always_inline struct name_ent *name_lookup(struct name_key *key, __u32 pid, __u64 task,
						    __u64 name, __u64 serial, __u32 gen)
{
	key->pid = pid;
	key->gen = gen;
	key->task = task;
	key->name_obj = name;
	key->serial = serial;
	return bpf_map_lookup_elem(&task_names, key);
}

static __always_inline int pw_name_cached(struct pw_reader *r, __u32 pid, __u64 task, __u64 serial,
					  __u64 name, __u32 gen, __u32 *kind, char *buf)
{
	struct name_ent *c = name_lookup(NAME_KEY(r), pid, task, name, serial, gen);

	if (!c || c->serial != serial || c->name_obj != name || c->gen != gen)
		return 0;
	*kind = c->kind;
	if (c->kind != NAME_CACHED)
		__builtin_memcpy(buf, c->name, TASK_NAME_LEN);
	else
		__builtin_memcpy(buf, &gen, sizeof(gen));
	name_stat(NAME_STAT_HIT);
	return 1;
}

static __always_inline struct name_ent *pw_name_slot(struct pw_reader *r, __u32 pid, __u64 task,
						     __u64 name, __u64 serial, __u32 gen)
{
	struct name_key *key = NAME_KEY(r);
	struct name_ent *c = name_lookup(key, pid, task, name, serial, gen);

	if (!c) {
		bpf_map_update_elem(&task_names, key, &no_name, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&task_names, key);
	}
	if (c)
		name_stat(NAME_STAT_COPY);
	return c;
}

/* the asyncio lookups pywalk.h declares */
static __always_inline const struct task_id *pw_coro_task(__u32 pid, __u64 coro)
{
	struct task_key key = { .pid = pid, .addr = coro };

	return bpf_map_lookup_elem(&coro_task, &key);
}

static __always_inline struct task_serial *pw_serial_slot(__u32 pid, __u64 task)
{
	struct task_key key = { .pid = pid, .addr = task };

	return bpf_map_lookup_elem(&task_serials, &key);
}

static __always_inline int pw_task_serial(__u32 pid, __u64 task, __u64 *serial)
{
	struct task_serial *e = pw_serial_slot(pid, task);

	if (!e)
		return -1;
	*serial = e->serial;
	return 0;
}

#ifdef PW_SERIAL_NAMES
static __always_inline int pw_task_serial_name(struct pw_scratch *s, __u32 pid, __u64 task,
					       __u64 *serial)
{
	struct task_serial *e = pw_serial_slot(pid, task);

	if (!e)
		return -1;
	__builtin_memcpy(&s->sname, e, sizeof(*e));
	s->sname_of = task;
	*serial = s->sname.serial;
	return 0;
}
#endif

static __always_inline const struct task_link *pw_task_link(__u32 pid, __u64 task)
{
	struct task_key key = { .pid = pid, .addr = task };

	return bpf_map_lookup_elem(&task_links, &key);
}
#endif

#endif

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "readers/bpfstats.h"
#include "readers/wall.h"
#include "wall.skel.h"

struct iter {
	pid_t pid;
	struct bpf_link *link;
};

struct wall {
	struct wall_bpf *skel;
	struct ring_buffer *rb, *lives;
	struct iter *iters;
	size_t niters;
	int stats_fd;
	wall_cb cb;
	wall_life_cb life;
	void *ctx;
	uint64_t bad_records, bad_lives;
};

static const char *const shared_maps[] = { "procs",	 "tstates",    "coro_task",  "task_serials",
					   "task_links", "task_names", "task_births" };

static int handle_record(void *ctx, void *data, size_t size)
{
	struct wall *w = ctx;
	const struct wall_sample *ws = data;
	const struct sample_hdr *h = &ws->s.hdr;

	if (size < offsetof(struct wall_sample, s.frames) || h->nframes > MAX_FRAMES ||
	    h->ncoro > MAX_CORO_FRAMES || h->ntasks > MAX_TASKS ||
	    size < offsetof(struct wall_sample, s.frames) +
			    (h->nframes + h->ncoro) * sizeof(struct frame_rec)) {
		w->bad_records++;
		return 0;
	}
	w->cb(w->ctx, ws, size);
	return 0;
}

static int handle_life(void *ctx, void *data, size_t size)
{
	struct wall *w = ctx;

	if (size < sizeof(struct task_life)) {
		w->bad_lives++;
		return 0;
	}
	w->life(w->ctx, data);
	return 0;
}

static bool has_enum_value(const struct btf *btf, const char *type, const char *name)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_ENUM);
	const struct btf_type *t = id < 0 ? NULL : btf__type_by_id(btf, id);
	const struct btf_enum *e = t ? btf_enum(t) : NULL;

	for (int i = 0; t && i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, e[i].name_off), name))
			return true;
	return false;
}

static bool has_member(const struct btf *btf, const char *type, int kind, const char *name)
{
	int id = btf__find_by_name_kind(btf, type, kind);
	const struct btf_type *t = id < 0 ? NULL : btf__type_by_id(btf, id);
	const struct btf_member *m = t ? btf_members(t) : NULL;

	for (int i = 0; t && i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, m[i].name_off), name))
			return true;
	return false;
}

/* What wall.bpf.c needs of the kernel, from its BTF; 0, or -1 with the missing features
 * and the Linux version each appeared in. */
static int check_kernel(char *err, size_t errlen)
{
	const char *path = getenv("ASYNCBPF_BTF");
	struct btf *btf = path && *path ? btf__parse(path, NULL) : btf__load_vmlinux_btf();
	struct {
		bool ok;
		const char *what;
	} need[3];
	struct utsname u;
	size_t n = 0, len;

	if (!btf) {
		snprintf(err, errlen, "wall mode: cannot read the kernel's BTF: %s",
			 strerror(errno));
		return -1;
	}
	need[0].ok = has_enum_value(btf, "bpf_func_id", "BPF_FUNC_loop");
	need[0].what = "bpf_loop (Linux 5.17)";
	need[1].ok = has_enum_value(btf, "bpf_func_id", "BPF_FUNC_copy_from_user_task");
	need[1].what = "bpf_copy_from_user_task and sleepable task iterators (Linux 5.18)";
	need[2].ok = has_member(btf, "bpf_iter_link_info", BTF_KIND_UNION, "task");
	need[2].what = "the task iterator's pid filter (Linux 6.1)";
	btf__free(btf);
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");
	len = snprintf(err, errlen,
		       "wall mode needs kernel features this kernel (%s) lacks:", u.release);
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (need[i].ok)
			continue;
		if (len < errlen)
			len += snprintf(err + len, errlen - len, "%s %s", n ? "," : "",
					need[i].what);
		n++;
	}
	return n ? -1 : 0;
}

struct wall *wall_open(struct sampler *s, bool run_stats, wall_cb cb, wall_life_cb life, void *ctx,
		       char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct wall *w;
	int ret;

	if (check_kernel(err, errlen))
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->stats_fd = -1;
	w->cb = cb;
	w->life = life;
	w->ctx = ctx;
	open_opts.kernel_log_level = sampler_kernel_log_level();
	w->skel = wall_bpf__open_opts(&open_opts);
	if (!w->skel) {
		snprintf(err, errlen, "cannot open the wall-clock BPF object: %s", strerror(errno));
		goto fail;
	}
	for (size_t i = 0; i < sizeof(shared_maps) / sizeof(shared_maps[0]); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(w->skel->obj, shared_maps[i]);
		int fd = sampler_map_fd(s, shared_maps[i]);

		if (!m || fd < 0 || bpf_map__reuse_fd(m, fd)) {
			snprintf(err, errlen, "cannot share the sampler's map %s", shared_maps[i]);
			goto fail;
		}
	}
	ret = wall_bpf__load(w->skel);
	if (ret) {
		snprintf(err, errlen, "the kernel rejected the wall-clock BPF program (%s)%s",
			 strerror(-ret), sampler_verifier_hint());
		goto fail;
	}
	ret = libbpf_num_possible_cpus();
	if (ret <= 0 || ret > WALL_BIRTH_CPUS) {
		snprintf(err, errlen,
			 "wall mode reads the task creations of at most %d CPUs, this "
			 "host has %d",
			 WALL_BIRTH_CPUS, ret);
		goto fail;
	}
	w->skel->bss->nr_cpus = ret;
	if (run_stats)
		w->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	w->rb = ring_buffer__new(bpf_map__fd(w->skel->maps.wall_events), handle_record, w, NULL);
	if (!w->rb) {
		snprintf(err, errlen, "cannot open the wall-clock ring buffer: %s",
			 strerror(errno));
		goto fail;
	}
	w->lives = ring_buffer__new(sampler_map_fd(s, "task_lives"), handle_life, w, NULL);
	if (!w->lives) {
		snprintf(err, errlen, "cannot open the task creation ring buffer: %s",
			 strerror(errno));
		goto fail;
	}
	return w;
fail:
	wall_close(w);
	return NULL;
}

void wall_close(struct wall *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->niters; i++)
		bpf_link__destroy(w->iters[i].link);
	free(w->iters);
	ring_buffer__free(w->rb);
	ring_buffer__free(w->lives);
	wall_bpf__destroy(w->skel);
	if (w->stats_fd >= 0)
		close(w->stats_fd);
	free(w);
}

static struct iter *find(struct wall *w, pid_t pid)
{
	for (size_t i = 0; i < w->niters; i++)
		if (w->iters[i].pid == pid)
			return &w->iters[i];
	return NULL;
}

int wall_add_proc(struct wall *w, pid_t pid)
{
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	union bpf_iter_link_info linfo = {};
	struct iter *it;
	struct bpf_link *link;

	if (find(w, pid))
		return 0;
	it = realloc(w->iters, (w->niters + 1) * sizeof(*it));
	if (!it)
		return -ENOMEM;
	w->iters = it;
	/* only the threads of this process */
	linfo.task.pid = pid;
	opts.link_info = &linfo;
	opts.link_info_len = sizeof(linfo);
	link = bpf_program__attach_iter(w->skel->progs.wall_tick, &opts);
	if (!link)
		return -errno;
	w->iters[w->niters++] = (struct iter){ .pid = pid, .link = link };
	return 0;
}

void wall_del_proc(struct wall *w, pid_t pid)
{
	struct iter *it = find(w, pid);

	if (!it)
		return;
	bpf_link__destroy(it->link);
	*it = w->iters[--w->niters];
}

int wall_run(struct wall *w, pid_t pid, const struct wall_task *tasks, uint32_t n,
	     uint64_t born_after, uint64_t keep)
{
	struct iter *it = find(w, pid);
	char buf[64];
	ssize_t got;
	int fd, ret = 0;

	if (!it)
		return -ENOENT;
	if (n > WALL_MAX_TASKS)
		n = WALL_MAX_TASKS;
	if (n)
		memcpy(w->skel->bss->tasks, tasks, n * sizeof(*tasks));
	w->skel->bss->ntasks = n;
	w->skel->bss->tasks_pending = 1;
	w->skel->bss->births_pending = 1;
	w->skel->bss->births_after = born_after;
	w->skel->bss->birth_keep = keep;
	fd = bpf_iter_create(bpf_link__fd(it->link));
	if (fd < 0)
		return -errno;
	/* the program writes nothing to the seq file: reading runs it over every thread */
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		;
	if (got < 0)
		ret = -errno;
	close(fd);
	w->skel->bss->tasks_pending = 0;
	w->skel->bss->births_pending = 0;
	if (ring_buffer__consume(w->rb) < 0 && !ret)
		ret = -EIO;
	return ret;
}

int wall_drain_lives(struct wall *w)
{
	return ring_buffer__consume(w->lives) < 0 ? -EIO : 0;
}

int wall_read_stats(struct wall *w, struct wall_stats *st)
{
	int ret;

	memset(st, 0, sizeof(*st));
	ret = bpfstats_sum_percpu(w->skel->maps.wstats, WSTAT_MAX, st->stat);
	if (ret)
		return ret;
	if (w->stats_fd >= 0)
		bpfstats_prog_run(w->skel->progs.wall_tick, &st->run_ns, &st->run_cnt);
	st->bad_records = w->bad_records;
	st->bad_lives = w->bad_lives;
	return 0;
}

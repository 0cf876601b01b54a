/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loads the BPF sampler, attaches it to cpu-clock on every online CPU, and feeds its
 * ring buffer to a callback. */
#ifndef ASYNCBPF_SAMPLER_H
#define ASYNCBPF_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/asyncbpf.h"
#include "cpython/codever.h"

/* Called for each record; data is a struct py_sample holding hdr.nframes frames. */
typedef void (*sampler_cb)(void *ctx, const struct py_sample *s, size_t size);

struct sampler_opts {
	unsigned int freq; /* Hz */
	bool run_stats;	   /* enable the kernel's bpf_stats for run time per sample */
	bool verbose;	   /* libbpf and verifier messages on stderr */
	/* programs not loaded, each the verifier's work at start-up: the perf-event sampler
	 * (wall mode, the task-creation watch) and the task-creation probe (--no-origins) */
	bool no_cpu_samples, no_task_init;
	/* wall mode: the creation probe always (no links with no_task_init), a probe on the
	 * task's free, both sending to the task_lives ring buffer */
	bool task_lives;
	/* --native: user stack bytes copied per sample, 0 for none (at most NATIVE_STACK_MAX) */
	unsigned int native_bytes;
	sampler_cb cb;
	void *ctx;
};

enum sampler_err {
	SAMPLER_OK = 0,
	SAMPLER_EPRIV, /* not root / missing CAP_BPF, CAP_PERFMON */
	SAMPLER_EBTF,  /* no kernel BTF */
	SAMPLER_EPERF, /* perf events unavailable */
	SAMPLER_ELOAD, /* BPF object rejected */
	SAMPLER_EOTHER,
};

struct sampler;

/* Privileges and kernel BTF, checked before anything else is attempted. */
enum sampler_err sampler_check_env(char *err, size_t errlen);

/* Loads the BPF object; on failure returns the kind and writes a one-line reason in err.
 * Sampling starts with sampler_start, so the maps can be filled first. */
enum sampler_err sampler_open(struct sampler **out, const struct sampler_opts *o, char *err,
			      size_t errlen);
enum sampler_err sampler_start(struct sampler *s, char *err, size_t errlen);
/* Detaches from the perf events: no sample is taken after this (pending ones can still be
 * polled), so counts read afterwards match what was delivered. */
void sampler_stop(struct sampler *s);
void sampler_close(struct sampler *s);
/* After a failed BPF load: prints the verifier log's last lines with -v, and returns what
 * to append to the error ("" when the kernel gave no verifier log). */
const char *sampler_verifier_hint(void);
/* The verifier log level for the BPF objects that share the sampler's maps (4, its
 * statistics, with ASYNCBPF_VERIFIER_STATS=1). */
int sampler_kernel_log_level(void);
/* Which BPF programs run the walker's loops: "bpf_loop", or the bounded-loop variant. */
const char *sampler_variant(const struct sampler *s);

int sampler_add_proc(struct sampler *s, pid_t pid, const struct py_proc *p);
int sampler_del_proc(struct sampler *s, pid_t pid);
/* The pool worker whose items link to their tasks in pid's samples (struct py_work). */
int sampler_set_work(struct sampler *s, pid_t pid, const struct py_work *w);

/* The asyncio maps: which task runs a coroutine, and which task a task is linked to. */
int sampler_set_coro_task(struct sampler *s, pid_t pid, uint64_t coro, const struct task_id *id);
int sampler_get_coro_task(struct sampler *s, pid_t pid, uint64_t coro, struct task_id *out);
int sampler_del_coro_task(struct sampler *s, pid_t pid, uint64_t coro);
int sampler_set_serial(struct sampler *s, pid_t pid, uint64_t task, uint64_t serial);
int sampler_get_serial(struct sampler *s, pid_t pid, uint64_t task, uint64_t *out);
int sampler_del_serial(struct sampler *s, pid_t pid, uint64_t task);
int sampler_set_link(struct sampler *s, pid_t pid, uint64_t child, const struct task_link *l);
/* A name copied by userspace into task_names, as the walk would copy it (NAME_CACHED). */
int sampler_set_name(struct sampler *s, pid_t pid, uint64_t task, const struct name_ent *e);
int sampler_del_link(struct sampler *s, pid_t pid, uint64_t child);
int sampler_get_link(struct sampler *s, pid_t pid, uint64_t child, struct task_link *out);

/* Links each new asyncio task of pid to its creator: a uprobe on _asyncio.Task's
 * constructor at offset in path. Detached by sampler_del_proc. */
int sampler_attach_task_init(struct sampler *s, pid_t pid, const char *path, uint64_t offset);
/* The task_free probe (task_lives only) on the _asyncio.Task type's tp_dealloc. */
int sampler_attach_task_free(struct sampler *s, pid_t pid, const char *path, uint64_t offset);
bool sampler_task_lives(const struct sampler *s);
/* The task_set_name probe on its set_name method: pid's task names may be found in the
 * caches again from now on (without it, each is copied at every sample). */
int sampler_attach_set_name(struct sampler *s, pid_t pid, const char *path, uint64_t offset);
/* A process whose set_name could not be probed (--stats counts them). */
void sampler_count_unwatched(struct sampler *s);

/* The fd of one of the BPF object's maps by name (for another object to share it: the
 * lifecycle tracepoints, the wall-clock iterator), -ENOENT if there is none. */
int sampler_map_fd(struct sampler *s, const char *name);
/* The prover of the records' frames whose code objects were left unread (codever.h), for
 * the creation sites' (tasksites.h): used on the thread that polls. */
struct codever *sampler_codever(struct sampler *s);

/* Delivers pending records to the callback, waiting up to timeout_ms; -errno on error. */
int sampler_poll(struct sampler *s, int timeout_ms);

struct sampler_stats {
	uint64_t stat[STAT_MAX];	  /* summed over CPUs */
	uint64_t run_ns, run_cnt;	  /* from bpf_stats, 0 when not enabled */
	uint64_t bad_records;		  /* malformed ring-buffer records dropped */
	uint64_t renames_unwatched;	  /* processes without the task_set_name probe */
	uint64_t cost_hist[COST_BUCKETS]; /* time per Python sample, by cost_bucket() */
	struct codever_stats code;	  /* frames proven by code version */
};

int sampler_read_stats(struct sampler *s, struct sampler_stats *st);

#endif

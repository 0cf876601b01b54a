// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "readers/bpfstats.h"
#include "cpython/codever.h"
#include "readers/sampler.h"
#include "sampler.skel.h"
#include "sampler_bounded.skel.h"

#define CAP_PERFMON_BIT	  38
#define CAP_BPF_BIT	  39
#define CAP_SYS_ADMIN_BIT 21

struct probe {
	pid_t pid;
	struct bpf_link *link;
};

/* The loaded object, whichever variant (the two have the same maps and programs). */
struct sampler_objs {
	struct bpf_object *obj;
	struct {
		struct bpf_map *events, *procs, *coro_task, *task_serials, *task_links, *task_names,
			*stats, *cost_hist, *native_out;
	} maps;
	struct {
		struct bpf_program *sample_cpu, *task_init, *task_free, *task_set_name;
	} progs;
	bool *reject_for_test, *task_lives_on, *origins_on;
	__u32 *native_pages;
};

#define SAMPLER_OBJS(o, sk)                                                                        \
	do {                                                                                       \
		(o)->obj = (sk)->obj;                                                              \
		(o)->maps.events = (sk)->maps.events;                                              \
		(o)->maps.procs = (sk)->maps.procs;                                                \
		(o)->maps.coro_task = (sk)->maps.coro_task;                                        \
		(o)->maps.task_serials = (sk)->maps.task_serials;                                  \
		(o)->maps.task_links = (sk)->maps.task_links;                                      \
		(o)->maps.task_names = (sk)->maps.task_names;                                      \
		(o)->maps.stats = (sk)->maps.stats;                                                \
		(o)->maps.cost_hist = (sk)->maps.cost_hist;                                        \
		(o)->maps.native_out = (sk)->maps.native_out;                                      \
		(o)->progs.sample_cpu = (sk)->progs.sample_cpu;                                    \
		(o)->progs.task_init = (sk)->progs.task_init;                                      \
		(o)->progs.task_free = (sk)->progs.task_free;                                      \
		(o)->progs.task_set_name = (sk)->progs.task_set_name;                              \
		(o)->reject_for_test = &(sk)->rodata->reject_for_test;                             \
		(o)->task_lives_on = &(sk)->rodata->task_lives_on;                                 \
		(o)->origins_on = &(sk)->rodata->origins_on;                                       \
		(o)->native_pages = &(sk)->rodata->native_pages;                                   \
	} while (0)

struct sampler {
	struct sampler_bpf *skel;	     /* the bpf_loop variant, or */
	struct sampler_bounded_bpf *bounded; /* the bounded-loop one */
	struct sampler_objs o;
	const char *variant;
	struct probe *probes;
	size_t nprobes;
	struct ring_buffer *rb;
	struct bpf_link **links;
	int nlinks;
	int stats_fd;
	sampler_cb cb;
	void *ctx;
	bool no_cpu_samples, no_task_init, task_lives;
	uint64_t bad_records, renames_unwatched;
	/* frames whose code objects the walk left unread, proven in the unpacked record */
	struct codever *cv;
	struct py_sample *unpacked; /* RECORD_MAX bytes */
	unsigned int freq;
};

/* libbpf hands over a rejected program's verifier log as one message: keep its last lines
 * so that -v can show where the verifier stopped, rather than thousands of lines. */
#define LOG_LINES     40
#define VERIFIER_MARK "-- BEGIN PROG LOAD LOG --"
static char log_tail[LOG_LINES][256];
static int log_next;
static bool log_verbose;

static void keep_verifier_log(const char *msg)
{
	const char *p = strstr(msg, VERIFIER_MARK), *nl;

	log_next = 0;
	for (p += strlen(VERIFIER_MARK); *p; p = nl + 1) {
		nl = strchrnul(p, '\n');
		if (nl > p)
			snprintf(log_tail[log_next++ % LOG_LINES], sizeof(log_tail[0]), "%.*s",
				 (int)(nl - p), p);
		if (!*nl)
			break;
	}
}

/* ASYNCBPF_VERIFIER_STATS=1: the kernel's statistics of each program it accepts (log
 * level 4), one line each, for measuring what start-up spends in the verifier. */
static bool verifier_stats;

static void print_verifier_stats(const char *msg)
{
	const char *prog = strstr(msg, "prog '"), *t = strstr(msg, "verification time "),
		   *n = strstr(msg, "processed "), *d = strstr(msg, "stack depth ");
	int plen = 0;

	if (prog) {
		prog += strlen("prog '");
		plen = (int)strcspn(prog, "'");
	}
	fprintf(stderr, "asyncbpf: verifier: %.*s: %.*s, %.*s%s%.*s\n", plen, prog ? prog : "",
		t ? (int)strcspn(t, "\n") : 0, t ? t : "", (int)strcspn(n, "\n"), n, d ? ", " : "",
		d ? (int)strcspn(d, "\n") : 0, d ? d : "");
}

int sampler_kernel_log_level(void)
{
	return verifier_stats ? 4 : 0;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg;

	if (vasprintf(&msg, fmt, ap) < 0)
		return 0;
	if (strstr(msg, VERIFIER_MARK) && verifier_stats && strstr(msg, "processed "))
		print_verifier_stats(msg);
	else if (strstr(msg, VERIFIER_MARK))
		keep_verifier_log(msg);
	else if (log_verbose && level != LIBBPF_DEBUG)
		fputs(msg, stderr);
	free(msg);
	return 0;
}

static void print_log_tail(void)
{
	int start = log_next > LOG_LINES ? log_next - LOG_LINES : 0;

	fprintf(stderr, "asyncbpf: verifier log, last %d lines:\n", log_next - start);
	for (int i = start; i < log_next; i++)
		fprintf(stderr, "  %s\n", log_tail[i % LOG_LINES]);
}

const char *sampler_verifier_hint(void)
{
	bool seen = log_next > 0;

	if (seen && log_verbose)
		print_log_tail();
	log_next = 0;
	/* a load can fail before the verifier runs (a missing kfunc): no log to point to */
	return !seen	     ? ""
	       : log_verbose ? "; verifier log above"
			     : "; run with -v for the verifier log";
}

/* NULL when the effective capabilities allow BPF and perf events, else what is missing. */
static const char *missing_caps(void)
{
	unsigned long long eff = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	bool bpf, perfmon;

	if (!f)
		return geteuid() == 0 ? NULL : "root";
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	if (eff & (1ULL << CAP_SYS_ADMIN_BIT))
		return NULL;
	bpf = eff & (1ULL << CAP_BPF_BIT);
	perfmon = eff & (1ULL << CAP_PERFMON_BIT);
	return bpf && perfmon	  ? NULL
	       : !bpf && !perfmon ? "CAP_BPF and CAP_PERFMON"
	       : !bpf		  ? "CAP_BPF"
				  : "CAP_PERFMON";
}

/* The kernel's BTF, or the file ASYNCBPF_BTF names (for a kernel that does not expose
 * its own: CO-RE relocations are then made against that file). */
static const char *btf_path(void)
{
	const char *p = getenv("ASYNCBPF_BTF");

	return p && *p ? p : "/sys/kernel/btf/vmlinux";
}

/* A record of the largest size handle_record takes */
#define RECORD_MAX (sizeof(struct py_sample) + sizeof(struct native_hdr) + NATIVE_STACK_MAX)

/* Whether a frame of smp was left unread: all of them in a walk that left code objects
 * unread, kept ones copied from such a walk in another. */
static bool versioned(const struct py_sample *smp)
{
	uint32_t n = smp->hdr.nframes + smp->hdr.ncoro;

	if (smp->hdr.code_epoch)
		return true;
	for (uint32_t i = 0; i < n && i < MAX_FRAMES + MAX_CORO_FRAMES; i++)
		if (smp->frames[i].fp == FP_VERSIONED)
			return true;
	return false;
}

/* The record's FP_VERSIONED frames proven, and the counter the walk saw confirmed to
 * the map when it moved. */
static void prove(struct sampler *s, struct py_sample *smp)
{
	struct py_proc p;
	uint32_t confirmed;
	__u32 key = smp->hdr.pid;

	if (versioned(smp))
		codever_prove(s->cv, smp);
	if (codever_confirm(s->cv, smp, &confirmed) &&
	    !bpf_map__lookup_elem(s->o.maps.procs, &key, sizeof(key), &p, sizeof(p), 0)) {
		p.code_confirmed = confirmed;
		bpf_map__update_elem(s->o.maps.procs, &key, sizeof(key), &p, sizeof(p), BPF_EXIST);
	}
}

/* A packed record (SAMPLE_REC, then a native part with SAMPLE_NATIVE) unpacked into
 * s->unpacked as a struct py_sample with its native part after the frames. */
static int handle_record(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	struct py_sample *smp = s->unpacked;
	const struct sample_hdr *h = data;
	size_t used, tasks, frames, native = 0;
	const struct native_hdr *n;

	if (size < sizeof(*h) || h->nframes > MAX_FRAMES || h->ncoro > MAX_CORO_FRAMES ||
	    h->ntasks > MAX_TASKS || size < SAMPLE_REC(h->ntasks, h->nframes + h->ncoro)) {
		s->bad_records++;
		return 0;
	}
	used = SAMPLE_REC(h->ntasks, h->nframes + h->ncoro);
	n = (const void *)((const char *)data + used);
	if (h->flags & SAMPLE_NATIVE &&
	    (size < used + sizeof(*n) || n->stack_len > NATIVE_STACK_MAX ||
	     size < used + sizeof(*n) + n->stack_len)) {
		s->bad_records++;
		return 0;
	}
	if (h->flags & SAMPLE_NATIVE)
		native = sizeof(*n) + n->stack_len;
	tasks = h->ntasks * sizeof(struct task_rec);
	frames = (h->nframes + h->ncoro) * sizeof(struct frame_rec);
	memcpy(smp, data, offsetof(struct py_sample, tasks) + tasks);
	memcpy(smp->frames, (const char *)data + offsetof(struct py_sample, tasks) + tasks, frames);
	/* the native part after the frames, where native_of finds it */
	memcpy((char *)smp->frames + frames, n, native);
	prove(s, smp);
	s->cb(s->ctx, smp, offsetof(struct py_sample, frames) + frames + native);
	return 0;
}

/* Parses a CPU list such as "0-3,5" into online[0..n). */
static int read_online_cpus(bool *online, int n)
{
	char buf[4096], *p = buf, *end;
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	int ok = f && fgets(buf, sizeof(buf), f);

	if (f)
		fclose(f);
	if (!ok)
		return -1;
	while (*p && *p != '\n') {
		long a = strtol(p, &end, 10), b = a;

		if (end == p || a < 0)
			return -1;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1 || b < a)
				return -1;
			p = end;
		}
		for (long c = a; c <= b && c < n; c++)
			online[c] = true;
		if (*p == ',')
			p++;
	}
	return 0;
}

static enum sampler_err attach_cpus(struct sampler *s, unsigned int freq, char *err, size_t len)
{
	int ncpus = libbpf_num_possible_cpus();
	bool *online;

	if (ncpus <= 0) {
		snprintf(err, len, "cannot count CPUs: %s", strerror(-ncpus));
		return SAMPLER_EOTHER;
	}
	s->links = calloc(ncpus, sizeof(*s->links));
	online = calloc(ncpus, sizeof(*online));
	if (!s->links || !online || read_online_cpus(online, ncpus)) {
		free(online);
		snprintf(err, len, "cannot read the online CPU list");
		return SAMPLER_EOTHER;
	}
	for (int cpu = 0; cpu < ncpus; cpu++) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.size = sizeof(attr),
			.freq = 1,
			.sample_freq = freq,
		};
		int fd;

		if (!online[cpu])
			continue;
		fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* went offline meanwhile */
			snprintf(err, len, "perf events unavailable: cpu-clock on CPU %d: %s", cpu,
				 strerror(errno));
			free(online);
			return SAMPLER_EPERF;
		}
		s->links[s->nlinks] = bpf_program__attach_perf_event(s->o.progs.sample_cpu, fd);
		if (!s->links[s->nlinks]) {
			snprintf(err, len, "cannot attach to cpu-clock on CPU %d: %s", cpu,
				 strerror(errno));
			close(fd);
			free(online);
			return SAMPLER_EPERF;
		}
		s->nlinks++;
	}
	free(online);
	if (!s->nlinks) {
		snprintf(err, len, "perf events unavailable: no online CPU accepted cpu-clock");
		return SAMPLER_EPERF;
	}
	return SAMPLER_OK;
}

enum sampler_err sampler_check_env(char *err, size_t errlen)
{
	const char *caps = missing_caps();

	if (caps) {
		snprintf(err, errlen,
			 "must run as root (missing %s; needs CAP_BPF and CAP_PERFMON, or "
			 "CAP_SYS_ADMIN)",
			 caps);
		return SAMPLER_EPRIV;
	}
	if (access(btf_path(), R_OK)) {
		snprintf(err, errlen,
			 "kernel has no BTF (%s: %s); asyncbpf needs a kernel built with "
			 "CONFIG_DEBUG_INFO_BTF, or ASYNCBPF_BTF naming a BTF file for it",
			 btf_path(), strerror(errno));
		return SAMPLER_EBTF;
	}
	return SAMPLER_OK;
}

enum sampler_err sampler_open(struct sampler **out, const struct sampler_opts *o, char *err,
			      size_t errlen)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	struct sampler *s;
	enum sampler_err rc;
	int ret;

	*out = NULL;
	rc = sampler_check_env(err, errlen);
	if (rc)
		return rc;
	log_verbose = o->verbose;
	libbpf_set_print(libbpf_print);

	s = calloc(1, sizeof(*s));
	if (s) {
		s->cv = codever_new();
		s->unpacked = malloc(RECORD_MAX);
	}
	if (!s || !s->cv || !s->unpacked) {
		if (s) {
			codever_free(s->cv);
			free(s);
		}
		snprintf(err, errlen, "out of memory");
		return SAMPLER_EOTHER;
	}
	s->stats_fd = -1;
	verifier_stats = getenv("ASYNCBPF_VERIFIER_STATS") != NULL;
	if (verifier_stats)
		open_opts.kernel_log_level = 4;
	s->cb = o->cb;
	s->ctx = o->ctx;
	if (getenv("ASYNCBPF_BTF"))
		open_opts.btf_custom_path = btf_path();
	/* bpf_loop (5.17) runs the walker's loops; without it, bounded loops of global
	 * functions do (bpf/pwbounded.h). ASYNCBPF_TEST_BOUNDED=1 takes them anyway. */
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL) == 1 &&
	    !getenv("ASYNCBPF_TEST_BOUNDED")) {
		s->variant = "bpf_loop";
		s->skel = sampler_bpf__open_opts(&open_opts);
		if (s->skel)
			SAMPLER_OBJS(&s->o, s->skel);
	} else {
		s->variant = "bounded loops (no bpf_loop: Linux 5.17)";
		s->bounded = sampler_bounded_bpf__open_opts(&open_opts);
		if (s->bounded)
			SAMPLER_OBJS(&s->o, s->bounded);
	}
	if (!s->o.obj) {
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		rc = SAMPLER_ELOAD;
		goto fail;
	}
	if (o->no_cpu_samples)
		bpf_program__set_autoload(s->o.progs.sample_cpu, false);
	if (o->no_task_init && !o->task_lives) {
		bpf_program__set_autoload(s->o.progs.task_init, false);
		bpf_program__set_autoload(s->o.progs.task_set_name, false);
	}
	if (!o->task_lives)
		bpf_program__set_autoload(s->o.progs.task_free, false);
	*s->o.task_lives_on = o->task_lives;
	*s->o.origins_on = !o->no_task_init;
	s->no_cpu_samples = o->no_cpu_samples;
	s->no_task_init = o->no_task_init && !o->task_lives;
	s->task_lives = o->task_lives;
	if (o->verbose)
		fprintf(stderr, "asyncbpf: CPU sampler: %s\n", s->variant);
	if (getenv("ASYNCBPF_TEST_REJECT_BPF"))
		*s->o.reject_for_test = true;
	if (o->native_bytes) {
		/* whole pages: the first is rsp's own, partly */
		*s->o.native_pages = (o->native_bytes + 4095) / 4096;
		/* records of up to 73 KiB (8-26 KiB measured): some seconds of 8 busy CPUs at
		 * 99 Hz, which the timer drains 10 times a second */
		bpf_map__set_max_entries(s->o.maps.events, 64 << 20);
		ret = libbpf_num_possible_cpus();
		if (ret < 0) {
			snprintf(err, errlen, "cannot count the possible CPUs: %s", strerror(-ret));
			rc = SAMPLER_EOTHER;
			goto fail;
		}
		bpf_map__set_max_entries(s->o.maps.native_out, (__u32)ret);
	}
	/* a ring buffer too small for the load, to test that losses are accounted */
	if (getenv("ASYNCBPF_TEST_RINGBUF_BYTES"))
		bpf_map__set_max_entries(
			s->o.maps.events,
			(__u32)strtoul(getenv("ASYNCBPF_TEST_RINGBUF_BYTES"), NULL, 0));
	ret = s->skel ? sampler_bpf__load(s->skel) : sampler_bounded_bpf__load(s->bounded);
	if (ret) {
		snprintf(err, errlen, "the kernel rejected the BPF program (%s)%s", strerror(-ret),
			 sampler_verifier_hint());
		rc = ret == -EPERM ? SAMPLER_EPRIV : SAMPLER_ELOAD;
		goto fail;
	}
	if (o->run_stats) {
		s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (s->stats_fd < 0 && o->verbose)
			fprintf(stderr, "asyncbpf: bpf_stats unavailable: %s\n", strerror(errno));
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->o.maps.events), handle_record, s, NULL);
	if (!s->rb) {
		snprintf(err, errlen, "cannot open the BPF ring buffer: %s", strerror(errno));
		rc = SAMPLER_EOTHER;
		goto fail;
	}
	s->freq = o->freq;
	*out = s;
	return SAMPLER_OK;
fail:
	sampler_close(s);
	return rc;
}

enum sampler_err sampler_start(struct sampler *s, char *err, size_t errlen)
{
	if (s->no_cpu_samples) {
		snprintf(err, errlen, "the CPU sampler was opened without its perf-event program");
		return SAMPLER_EOTHER;
	}
	return attach_cpus(s, s->freq, err, errlen);
}

void sampler_stop(struct sampler *s)
{
	for (int i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	s->nlinks = 0;
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	for (size_t i = 0; i < s->nprobes; i++)
		bpf_link__destroy(s->probes[i].link);
	free(s->probes);
	free(s->links);
	ring_buffer__free(s->rb);
	sampler_bpf__destroy(s->skel);
	sampler_bounded_bpf__destroy(s->bounded);
	if (s->stats_fd >= 0)
		close(s->stats_fd);
	codever_free(s->cv);
	free(s->unpacked);
	free(s);
}

int sampler_add_proc(struct sampler *s, pid_t pid, const struct py_proc *p)
{
	__u32 key = pid;
	int ret = codever_add(s->cv, pid, p);

	return ret ? ret
		   : bpf_map__update_elem(s->o.maps.procs, &key, sizeof(key), p, sizeof(*p),
					  BPF_ANY);
}

int sampler_set_work(struct sampler *s, pid_t pid, const struct py_work *w)
{
	struct py_proc p;
	__u32 key = pid;
	int ret = bpf_map__lookup_elem(s->o.maps.procs, &key, sizeof(key), &p, sizeof(p), 0);

	if (ret)
		return ret;
	p.work = *w;
	return bpf_map__update_elem(s->o.maps.procs, &key, sizeof(key), &p, sizeof(p), BPF_EXIST);
}

/* Attaches prog at path + offset for pid, kept until sampler_del_proc. */
static int attach_probe(struct sampler *s, struct bpf_program *prog, pid_t pid, const char *path,
			uint64_t offset)
{
	struct probe *p = realloc(s->probes, (s->nprobes + 1) * sizeof(*p));
	struct bpf_link *link;

	if (!p)
		return -ENOMEM;
	s->probes = p;
	link = bpf_program__attach_uprobe(prog, false, pid, path, offset);
	if (!link)
		return -errno;
	s->probes[s->nprobes++] = (struct probe){ .pid = pid, .link = link };
	return 0;
}

/* Tells BPF that pid's task creations (creations) or renames (else) are watched from now
 * on. */
static int proc_watched(struct sampler *s, pid_t pid, bool creations)
{
	struct py_proc p;
	__u32 key = pid;
	int ret = bpf_map__lookup_elem(s->o.maps.procs, &key, sizeof(key), &p, sizeof(p), 0);

	if (ret)
		return ret;
	if (creations)
		p.creations = 1;
	else if (!p.creations)
		return 0; /* a name cached under a serial a snapshot gave is not proven */
	else
		p.renames = 1;
	return bpf_map__update_elem(s->o.maps.procs, &key, sizeof(key), &p, sizeof(p), BPF_EXIST);
}

int sampler_attach_task_init(struct sampler *s, pid_t pid, const char *path, uint64_t offset)
{
	int ret;

	if (s->no_task_init)
		return -ENOTSUP;
	ret = attach_probe(s, s->o.progs.task_init, pid, path, offset);
	/* from now on every new task is numbered at birth: serials tell tasks apart (pw_kept) */
	return ret ? ret : proc_watched(s, pid, true);
}

int sampler_attach_set_name(struct sampler *s, pid_t pid, const char *path, uint64_t offset)
{
	int ret;

	if (s->no_task_init)
		return -ENOTSUP;
	ret = attach_probe(s, s->o.progs.task_set_name, pid, path, offset);
	/* from now on every rename is seen: names may be found again (pw_name_gen) */
	return ret ? ret : proc_watched(s, pid, false);
}

void sampler_count_unwatched(struct sampler *s)
{
	s->renames_unwatched++;
}

int sampler_attach_task_free(struct sampler *s, pid_t pid, const char *path, uint64_t offset)
{
	if (!s->task_lives)
		return -ENOTSUP;
	return attach_probe(s, s->o.progs.task_free, pid, path, offset);
}

bool sampler_task_lives(const struct sampler *s)
{
	return s->task_lives;
}

int sampler_del_proc(struct sampler *s, pid_t pid)
{
	__u32 key = pid;

	for (size_t i = 0; i < s->nprobes;) {
		if (s->probes[i].pid != pid) {
			i++;
			continue;
		}
		bpf_link__destroy(s->probes[i].link);
		s->probes[i] = s->probes[--s->nprobes];
	}
	int ret = bpf_map__delete_elem(s->o.maps.procs, &key, sizeof(key), 0);

	codever_del(s->cv, pid);
	return ret == -ENOENT ? 0 : ret;
}

static int del_ok(int ret)
{
	return ret == -ENOENT ? 0 : ret;
}

int sampler_set_coro_task(struct sampler *s, pid_t pid, uint64_t coro, const struct task_id *id)
{
	struct task_key key = { .pid = pid, .addr = coro };

	return bpf_map__update_elem(s->o.maps.coro_task, &key, sizeof(key), id, sizeof(*id),
				    BPF_ANY);
}

int sampler_get_coro_task(struct sampler *s, pid_t pid, uint64_t coro, struct task_id *out)
{
	struct task_key key = { .pid = pid, .addr = coro };

	return bpf_map__lookup_elem(s->o.maps.coro_task, &key, sizeof(key), out, sizeof(*out), 0);
}

int sampler_set_serial(struct sampler *s, pid_t pid, uint64_t task, uint64_t serial)
{
	struct task_key key = { .pid = pid, .addr = task };
	struct task_serial v = { .serial = serial }, old;

	/* the task_set_name probe's mark of a task renamed before it had a serial */
	if (!bpf_map__lookup_elem(s->o.maps.task_serials, &key, sizeof(key), &old, sizeof(old),
				  0) &&
	    !old.serial)
		v.name_odd = old.name_odd;
	return bpf_map__update_elem(s->o.maps.task_serials, &key, sizeof(key), &v, sizeof(v),
				    BPF_ANY);
}

int sampler_get_serial(struct sampler *s, pid_t pid, uint64_t task, uint64_t *out)
{
	struct task_key key = { .pid = pid, .addr = task };
	struct task_serial v;
	int ret = bpf_map__lookup_elem(s->o.maps.task_serials, &key, sizeof(key), &v, sizeof(v), 0);

	if (!ret)
		*out = v.serial;
	return ret;
}

int sampler_del_serial(struct sampler *s, pid_t pid, uint64_t task)
{
	struct task_key key = { .pid = pid, .addr = task };

	return del_ok(bpf_map__delete_elem(s->o.maps.task_serials, &key, sizeof(key), 0));
}

int sampler_del_coro_task(struct sampler *s, pid_t pid, uint64_t coro)
{
	struct task_key key = { .pid = pid, .addr = coro };

	return del_ok(bpf_map__delete_elem(s->o.maps.coro_task, &key, sizeof(key), 0));
}

int sampler_set_link(struct sampler *s, pid_t pid, uint64_t child, const struct task_link *l)
{
	struct task_key key = { .pid = pid, .addr = child };

	return bpf_map__update_elem(s->o.maps.task_links, &key, sizeof(key), l, sizeof(*l),
				    BPF_ANY);
}

int sampler_set_name(struct sampler *s, pid_t pid, uint64_t task, const struct name_ent *e)
{
	struct name_key key = { .pid = pid,
				.gen = e->gen,
				.task = task,
				.name_obj = e->name_obj,
				.serial = e->serial };

	return bpf_map__update_elem(s->o.maps.task_names, &key, sizeof(key), e, sizeof(*e),
				    BPF_ANY);
}

int sampler_del_link(struct sampler *s, pid_t pid, uint64_t child)
{
	struct task_key key = { .pid = pid, .addr = child };

	return del_ok(bpf_map__delete_elem(s->o.maps.task_links, &key, sizeof(key), 0));
}

int sampler_get_link(struct sampler *s, pid_t pid, uint64_t child, struct task_link *out)
{
	struct task_key key = { .pid = pid, .addr = child };

	return bpf_map__lookup_elem(s->o.maps.task_links, &key, sizeof(key), out, sizeof(*out), 0);
}

int sampler_poll(struct sampler *s, int timeout_ms)
{
	/* BPF wakes us only when the ring fills up: drain it after the wait either way */
	int ret = ring_buffer__poll(s->rb, timeout_ms);

	if (ret < 0 && ret != -EINTR)
		return ret;
	ret = ring_buffer__consume(s->rb);
	return ret < 0 && ret != -EINTR ? ret : 0;
}

int sampler_read_stats(struct sampler *s, struct sampler_stats *st)
{
	int ret;

	memset(st, 0, sizeof(*st));
	ret = bpfstats_sum_percpu(s->o.maps.stats, STAT_MAX, st->stat);
	if (!ret)
		ret = bpfstats_sum_percpu(s->o.maps.cost_hist, COST_BUCKETS, st->cost_hist);
	if (ret)
		return ret;
	if (s->stats_fd >= 0)
		bpfstats_prog_run(s->o.progs.sample_cpu, &st->run_ns, &st->run_cnt);
	st->bad_records = s->bad_records;
	st->renames_unwatched = s->renames_unwatched;
	codever_stats(s->cv, &st->code);
	return 0;
}

struct codever *sampler_codever(struct sampler *s)
{
	return s->cv;
}

int sampler_map_fd(struct sampler *s, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(s->o.obj, name);

	return m ? bpf_map__fd(m) : -ENOENT;
}

const char *sampler_variant(const struct sampler *s)
{
	return s->variant;
}

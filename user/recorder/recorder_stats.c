// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The --stats report of a recording. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/procfs.h"
#include "recorder/recorder.h"
#include "recorder/recorder_impl.h"

/* Resident memory of this process, bytes: all of it (VmRSS, which counts the ring
 * buffers' pages as they are first read) or the heap (RssAnon). */
static size_t rss_bytes(const char *field)
{
	char buf[4096], *p;
	ssize_t n = proc_read("/proc/self/status", buf, sizeof(buf));

	p = n > 0 ? strstr(buf, field) : NULL;
	return p ? strtoull(p + strlen(field), NULL, 10) << 10 : 0;
}

static void print_lifecycle_stats(struct recorder *rec, FILE *f)
{
	static const char *const names[LCM_MAX] = { "procs", "tstates", "coro_task", "task_serials",
						    "task_links" };
	struct lifecycle_stats ls;

	if (!rec->lc)
		return;
	lifecycle_stats(rec->lc, &ls);
	fprintf(f, "process events: %llu exec, %llu fork, %llu exit, %llu lost\n",
		(unsigned long long)ls.execs, (unsigned long long)ls.forks,
		(unsigned long long)ls.exits, (unsigned long long)ls.lost);
	fprintf(f,
		"examinations: %llu (%llu retries, %llu gave up waiting for a runtime, %zu "
		"pending)\n",
		(unsigned long long)ls.examined, (unsigned long long)ls.retries,
		(unsigned long long)ls.gave_up, ls.pending);
	fprintf(f, "map entries freed: %llu\n", (unsigned long long)ls.swept);
	if (ls.sweep_errors)
		fprintf(f, "map walks failed: %llu (their entries stay until a later sweep)\n",
			(unsigned long long)ls.sweep_errors);
	fprintf(f, "map entries:");
	for (int m = 0; m < LCM_MAX; m++)
		fprintf(f, " %s %zu", names[m], ls.entries[m]);
	fputc('\n', f);
	fprintf(f, "stale map entries:");
	for (int m = 0; m < LCM_MAX; m++)
		fprintf(f, " %s %zu", names[m], ls.stale[m]);
	fputc('\n', f);
}

/* Processes profiled without their asyncio tasks, or without task creation watched: none
 * is a silent answer. */
static void print_task_support(const struct recorder *rec, FILE *f)
{
	fprintf(f, "processes without asyncio tasks: %llu%s%s%s\n",
		(unsigned long long)rec->tasks_off, rec->tasks_off ? " (first: " : "",
		rec->tasks_off_why, rec->tasks_off ? ")" : "");
	fprintf(f, "processes without task creation watched: %llu%s%s%s\n",
		(unsigned long long)rec->origins_off, rec->origins_off ? " (first: " : "",
		rec->origins_off_why, rec->origins_off ? ")" : "");
	fprintf(f,
		"processes 3.12+ with their code objects read: %llu (no code-version counter "
		"known%s%s%s)\n",
		(unsigned long long)rec->code_read, rec->code_read ? "; first: " : "",
		rec->code_read_why, rec->code_read ? "" : "");
}

/* Samples whose thread shows its OS name for a read that failed: none is a silent answer. */
static void print_thread_names(const struct recorder *rec, FILE *f)
{
	struct pythreads_stats ps;

	pythreads_stats(rec->jn.threads, &ps);
	fprintf(f,
		"thread names: %llu samples named by Python, %llu by their OS name for a failed "
		"read%s%s%s; %llu reads of threading._active (%llu failed)\n",
		(unsigned long long)ps.named, (unsigned long long)ps.unread,
		ps.first_why[0] ? " (first: " : "", ps.first_why, ps.first_why[0] ? ")" : "",
		(unsigned long long)ps.reads, (unsigned long long)ps.read_fails);
}

struct stats_ctx {
	struct recorder *rec;
	const struct profile *last;
};

static void print_native(void *ctx, FILE *f, double stack_bytes)
{
	struct recorder *rec = ((struct stats_ctx *)ctx)->rec;
	struct unwinder_stats us;

	if (!rec->jn.unw)
		return;
	unwinder_stats(rec->jn.unw, &us);
	fprintf(f, "native stacks: %llu (%llu frames), %.0f stack bytes per sample\n",
		(unsigned long long)us.stacks, (unsigned long long)us.frames, stack_bytes);
	fprintf(f,
		"native stacks short of the root: %llu (the copy ended, or %d frames), %llu "
		"(no registers, no module or no CFI)\n",
		(unsigned long long)us.ended_copy, NATIVE_MAX_FRAMES,
		(unsigned long long)us.ended_error);
	fprintf(f, "native unwind time per stack: %llu ns; module reads: %llu (%.3f s)\n",
		(unsigned long long)(us.stacks ? us.ns / us.stacks : 0),
		(unsigned long long)us.reports, (double)us.report_ns / 1e9);
	fprintf(f,
		"native unwind time per known stack: %llu ns (%llu stacks whose frames were all "
		"named before)\n",
		(unsigned long long)(us.warm ? us.warm_ns / us.warm : 0),
		(unsigned long long)us.warm);
	fprintf(f, "native stacks unwound by libdw: %llu (a frame with no simple CFI rule)\n",
		(unsigned long long)us.slow);
	fprintf(f, "native stacks cut at a return address outside code: %llu\n",
		(unsigned long long)us.bad_returns);
	fprintf(f, "native stacks interrupted in code of no ELF file: %llu\n",
		(unsigned long long)us.stubs);
	if (us.checked)
		fprintf(f, "native stacks checked against libdw: %llu, %llu differ\n",
			(unsigned long long)us.checked, (unsigned long long)us.mismatches);
}

/* What a userspace reader's report ends with. */
static void print_brief(const struct recorder *rec, FILE *f)
{
	print_task_support(rec, f);
	fprintf(f, "unlinked tasks: %llu\n", (unsigned long long)rec->jn.root_tasks);
	fprintf(f, "task names unreadable: %llu\n",
		(unsigned long long)tasknames_unreadable(rec->jn.names, NULL, NULL));
	print_thread_names(rec, f);
	fprintf(f, "processes: %zu\n", rec->jn.ntargets);
	fprintf(f, "symbols cached: %zu\n", symtab_size(rec->jn.syms));
}

static void print_tasks(const struct recorder *rec, FILE *f)
{
	uint64_t absent, replaced, gone, copy, unreadable;

	fprintf(f,
		"task-creation probes not attached: %llu (the process exited or exec'd "
		"meanwhile)\n",
		(unsigned long long)rec->origins_gone);
	print_task_support(rec, f);
	fprintf(f,
		"unlinked tasks: %llu (distinct tasks heading a chain: no awaiter or creator "
		"known)\n",
		(unsigned long long)rec->jn.root_tasks);
	fprintf(f,
		"thread work samples: %llu (pool workers' samples in a pool frame outside any "
		"task; the next five add up to it)\n",
		(unsigned long long)rec->jn.work_frames);
	fprintf(f,
		"thread work linked: %llu (pool workers' samples drawn under the task awaiting "
		"their item)\n",
		(unsigned long long)rec->jn.work_linked);
	fprintf(f,
		"thread work unlinked: %llu (pool workers' samples whose item no task awaits "
		"now)\n",
		(unsigned long long)rec->jn.work_stale);
	fprintf(f,
		"thread work without a future: %llu (no asyncio future stands for the item: "
		"submitted outside asyncio or just submitted; anyio's worker between items)\n",
		(unsigned long long)rec->jn.work_no_future);
	fprintf(f,
		"thread work task unseen: %llu (the awaiting task not yet seen by a task "
		"snapshot)\n",
		(unsigned long long)rec->jn.work_unseen);
	fprintf(f, "thread work unreadable: %llu (a read along the link failed)\n",
		(unsigned long long)rec->jn.work_unreadable);
	tasksites_misses(rec->jn.sites, &absent, &replaced);
	fprintf(f,
		"creators without their creation site: %llu (not drawn; sites looked up and "
		"absent %llu, of another task %llu)\n",
		(unsigned long long)rec->jn.sites_unknown, (unsigned long long)absent,
		(unsigned long long)replaced);
	fprintf(f,
		"creation chains stopped: %llu (a task made by a task running the same "
		"coroutine function: a server's next request)\n",
		(unsigned long long)rec->jn.creation_cuts);
	fprintf(f,
		"automatic task names of no known group: %llu (samples shown with <task "
		"[unknown]>: no readable frame of the Task-N showed its coroutine by the cut)\n",
		(unsigned long long)rec->jn.groups_unknown);
	fprintf(f,
		"automatic task names grouped late: %llu (task frames shown whole until a "
		"later sample showed the function the name is of; grouped at the profile's "
		"cut)\n",
		(unsigned long long)rec->jn.groups_late);
	unreadable = tasknames_unreadable(rec->jn.names, &gone, &copy);
	fprintf(f,
		"task names unreadable: %llu (shown as <task ?>: %llu copies replaced or "
		"evicted before they were read, %llu names the walk could not read)\n",
		(unsigned long long)unreadable, (unsigned long long)gone, (unsigned long long)copy);
}

static void print_recording(void *ctx, FILE *f, bool brief)
{
	struct stats_ctx *c = ctx;
	struct recorder *rec = c->rec;
	const struct profile *last = c->last ? c->last : rec->jn.prof;
	size_t nstacks, nframes;
	struct mallinfo2 mi;

	if (brief)
		return print_brief(rec, f);
	print_tasks(rec, f);
	print_thread_names(rec, f);
	fprintf(f, "processes: %zu\n", rec->jn.ntargets);
	fprintf(f, "symbols cached: %zu (%zu KiB, %llu evicted)\n", symtab_size(rec->jn.syms),
		symtab_bytes(rec->jn.syms) >> 10, (unsigned long long)symtab_evicted(rec->jn.syms));
	fprintf(f, "samples over the stack limit: %llu\n", (unsigned long long)rec->jn.over_limit);
	fprintf(f, "processes filtered out: %llu\n", (unsigned long long)rec->filtered);
	fprintf(f, "task snapshots: %llu (%.3f s CPU)\n", (unsigned long long)rec->snap.taken,
		rec->snap.cpu);
	print_lifecycle_stats(rec, f);
	fprintf(f, "profile: %zu KiB\n", profile_bytes(last, &nstacks) >> 10);
	mi = mallinfo2();
	fprintf(f, "memory used: %zu KiB (heap %zu KiB, %zu KiB of it allocated)\n",
		rss_bytes("\nVmRSS:") >> 10, rss_bytes("\nRssAnon:") >> 10,
		(mi.uordblks + mi.hblkhd) >> 10);
	fprintf(f, "profiler cpu: %.2f s while recording (%.2f%% of a core), %.3f s before\n",
		recorder_cpu() - rec->cpu_start,
		100 * (recorder_cpu() - rec->cpu_start) / rec->elapsed, rec->cpu_start);
	profile_size(last, &nstacks, &nframes);
	fprintf(f, "distinct stacks: %zu (%zu distinct frames)\n", nstacks, nframes);
}

/* The reader's report, with the recording's lines where the reader puts them. */
void recorder_print_stats(struct recorder *rec, const struct profile *last, FILE *f)
{
	struct stats_ctx ctx = { .rec = rec, .last = last };
	struct reader_report rep = { .elapsed = rec->elapsed,
				     .recorded = rec->recorded + profile_total(rec->jn.prof),
				     .lost = rec->lost,
				     .jn = &rec->jn,
				     .native = print_native,
				     .recording = print_recording,
				     .ctx = &ctx };

	reader_print_stats(rec->reader, f, &rep);
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Structs and constants shared by the BPF sampler and its userspace loader. */
#ifndef ASYNCBPF_H
#define ASYNCBPF_H

#include "pyasync.h"
#include "pylayout.h"

#define MAX_FRAMES	256 /* frames kept per sample; deeper stacks are marked truncated */
#define MAX_TASKS	16  /* tasks per stacked stack: the running one and its awaiters */
#define MAX_CORO_FRAMES 128 /* suspended coroutine frames per sample, all awaiters together */
#define MAX_THREADS	256 /* thread states examined when looking one up */
#define MAX_PROCS	8192
#define TASK_COMM_LEN	16

/* Where an instance keeps one of its attributes: a slot of the values it shares its keys
 * with its class (objects made by __init__ do), read as pw_attr does. */
enum py_attr_model {
	PY_ATTR_DICT = 1,   /* 3.8-3.10: dict at obj + at, its split values at dict + values */
	PY_ATTR_VALUES = 2, /* 3.11: values pointer at obj + at */
	PY_ATTR_TAGGED = 3, /* 3.12: values pointer minus one (bit 0 set) at obj + at */
	PY_ATTR_INLINE = 4, /* 3.13+: values inline at obj + at, byte 3 of their header set */
};

struct py_attr {
	__s16 at;
	__u16 values;
	__u16 slot; /* byte offset of the attribute in the values */
	__u8 model; /* enum py_attr_model, 0: unknown */
	__u8 pad;
};

/* The pools whose workers' frames name the item they run, so that a sample of one is
 * drawn under the task awaiting that item (pw_first_task). Found by userspace in the
 * process's modules (user/asyncio/threadwork.c); a code object 0 is a pool not (yet)
 * found. */
enum work_kind {
	WORK_ANYIO = 0, /* anyio's WorkerThread.run */
	WORK_POOL = 1,	/* concurrent.futures' _WorkItem.run (run_in_executor, to_thread) */
	WORK_KINDS = 2,
};

struct py_work {
	__u64 code[WORK_KINDS]; /* the worker frame's code object */
	/* WORK_ANYIO: local slots of the item's asyncio future, which the task awaits, and
	 * of the contextvars.Context the item runs in */
	__u16 anyio_future, anyio_context;
	/* WORK_POOL: _WorkItem.run's self; the index of destination (the asyncio future) in
	 * the closure of the done-callback wrap_future puts on the concurrent future */
	__u16 pool_self, pool_cell;
	struct py_attr item_future;    /* _WorkItem.future: the concurrent future */
	struct py_attr done_callbacks; /* its _done_callbacks (a list) */
	__u64 set_state_code;	       /* that callback's code (_chain_future's _call_set_state) */
	__u64 pool_inner; /* 3.14+: WorkerContext.run, the pool's frame inside _WorkItem.run */
	/* object offsets the pool link reads: list size and items, function code and
	 * closure, cell contents */
	__u16 list_size, list_items, func_code, func_closure, cell_ref;
	/* a job queued, not started (wall mode): the index of source (the concurrent
	 * future) in the closure of the callback wrap_future puts first on the asyncio
	 * future, that callback's code (_chain_future's _call_check_cancel, 0: unknown), the
	 * concurrent future's _state and the str it holds while queued ('PENDING') */
	__u16 check_cell;
	__u16 pad[2];
	__u64 check_cancel_code;
	struct py_attr future_state;
	__u64 pending_state;
};

/* Per-process record pushed by userspace, keyed by host tgid. */
struct py_proc {
	__u64 runtime;	 /* address of _PyRuntime in the process */
	__u64 code_type; /* address of PyCode_Type, 0 when unknown (no type check) */
	/* generator types the coroutine walk steps through; 0 when unknown */
	__u64 coro_type, gen_type, asend_type, corowrapper_type;
	__u64 str_type, long_type; /* to copy task names, 0 when unknown */
	struct py_layout layout;
	struct py_async_layout async; /* zero (yf_kind 0) until known */
	struct py_work work;
	/* nonzero once the process's set_name calls are watched, and its creations too */
	__u64 renames;
	/* nonzero once its task creations are watched (task_init): each task object made
	 * from then on gets a serial of its own */
	__u64 creations;
	/* 3.12+: address of the counter code objects take their co_version from (0: none
	 * known, code objects are read): the CPU sampler then reads it instead of each
	 * frame's code object, and userspace proves the frames (user/cpython/codever.c) */
	__u64 code_counter;
	/* the main interpreter, and where a thread state names its own: the counter dates
	 * only the main interpreter's threads' code objects */
	__u64 main_interp;
	__u64 tstate_interp;
	/* the counter's value when userspace last checked the code objects it knows: a walk
	 * that reads another leaves the frames' code objects read (see codever.c) */
	__u32 code_confirmed;
	/* for userspace: co_version's offset, _PyRuntime.interpreters.next_id's */
	__u16 code_version, interp_next_id;
};

/* One Python frame. fp guards the symbol cache against code-object address reuse. */
struct frame_rec {
	__u64 code;  /* PyCodeObject address, FRAME_ENTRY in bit 0 */
	__u32 fp;    /* fingerprint, see pw_code_fingerprint() */
	__s32 instr; /* byte offset of the current instruction in the bytecode, -1 unknown */
};

enum sample_flags {
	SAMPLE_TRUNCATED = 1 << 0, /* more than MAX_FRAMES frames */
	SAMPLE_NO_TSTATE = 1 << 1, /* thread has no Python thread state */
	SAMPLE_READ_ERR = 1 << 2,  /* walk ended on a failed or inconsistent read */
	SAMPLE_SUSPENDED = 1 << 3, /* a suspended task's stacked stack, no thread frames */
	SAMPLE_NATIVE = 1 << 4,	   /* a struct native_hdr and its stack copy follow the frames */
	/* a pool worker running an item a task awaits: tasks[0] is that task, suspended, and
	 * running_idx the worker's frame (it and the frames outside it are the pool's) */
	SAMPLE_WORK = 1 << 5,
	SAMPLE_WORK_STALE = 1 << 6, /* a worker frame whose item no task awaits now */
	/* a pool worker's frame outside any task: the link was tried. Without SAMPLE_WORK
	 * or SAMPLE_WORK_STALE, why it stopped: one of the two below, else a read failed */
	SAMPLE_WORK_FRAME = 1 << 7,
	/* no asyncio future stands for the item: submitted outside asyncio or too recently
	 * to have one; an anyio worker between items */
	SAMPLE_WORK_NO_FUTURE = 1 << 8,
	SAMPLE_WORK_UNSEEN = 1 << 9, /* the awaiting task is not in the maps yet */
	/* a suspended task awaiting a thread pool's job that has not started (wall mode) */
	SAMPLE_QUEUED = 1 << 10,
};

/* --native: the interrupted user registers and a copy of the user stack from rsp up,
 * unwound in userspace. Registers in DWARF order (x86-64: rax rdx rcx rbx rsi rdi rbp rsp
 * r8-r15 rip). */
#define NATIVE_REGS 17
/* most copied, perf's limit: 32 KiB reach the eval loop from BLAS, deep await chains
 * (a C call per awaiting coroutine) take more */
#define NATIVE_STACK_PAGES   16
#define NATIVE_STACK_MAX     (NATIVE_STACK_PAGES * 4096)
#define NATIVE_STACK_DEFAULT (32 << 10)

enum native_flags {
	NATIVE_NO_REGS = 1 << 0,   /* in the kernel with no way to the user registers */
	NATIVE_STACK_END = 1 << 1, /* the copy reached an unreadable page: the whole stack */
};

#define NATIVE_MAX_SHIMS 16

struct native_hdr {
	__u64 regs[NATIVE_REGS];
	__u64 stack_start; /* user address of the copy's first byte (rsp) */
	__u32 stack_len;   /* bytes copied, after this header */
	__u32 flags;
	/* 3.12+: each C call of the eval loop keeps a shim frame on its own C stack, so the
	 * native frame whose stack holds shim[i] runs the thread's Python frames
	 * [shim_at[i - 1], shim_at[i]) (innermost first; shim_at[-1] = 0) */
	__u64 shim[NATIVE_MAX_SHIMS];
	__u32 shim_at[NATIVE_MAX_SHIMS];
	__u32 nshims;
	__u32 pad;
};

/* Bit 0 of frame_rec.code (code objects are 8-byte aligned): 3.11's is_entry, the
 * outermost frame of one C call of the eval loop, where native frames join (before 3.11
 * each frame is one call; 3.12+ mark a call by its shim frame, native_hdr.shim). */
#define FRAME_ENTRY   1ULL
#define FRAME_CODE(f) ((f)->code & ~FRAME_ENTRY)

/* Frame fingerprint 0 means the code object could not be read or is not a code object;
 * in a record with sample_hdr.code_epoch set, FP_VERSIONED that it was not read and
 * userspace proves it. A fingerprint may be 1 too: such a frame kept from an earlier walk
 * is proven like the others, and gets that fingerprint back. */
#define FP_INVALID   0
#define FP_VERSIONED 1

#define RUNNING_NONE 0xffff

struct sample_hdr {
	__u64 time_ns;
	__u64 tstate;
	__u32 pid;     /* host tgid */
	__u32 tid;     /* host tid */
	__u32 nframes; /* thread frames, innermost first */
	__u32 flags;
	__u32 ncoro;  /* suspended coroutine frames of awaiting tasks, after the thread frames */
	__u16 ntasks; /* tasks[0] runs on this thread, tasks[1..] await it, outward */
	__u16 running_idx; /* thread frame of tasks[0]'s coroutine, RUNNING_NONE if no task */
	char comm[TASK_COMM_LEN]; /* thread name at sample time */
	/* the code-version counter as read before the walk (0: not read), and as read
	 * before and after it when the frames' code objects were not read (FP_VERSIONED;
	 * else 0), and ns from time_ns to the walk's last read */
	__u32 code_seen, code_epoch, code_epoch_end;
	__u32 walk_ns;
};

enum task_flags {
	TASK_ORIGIN = 1 << 0,	 /* reached through its creator link, not an awaiter link: its
				  * frames are where it created the task before it (task_sites) */
	TASK_ENDED = 1 << 1,	 /* no longer alive: only its identity is known */
	TASK_CYCLE = 1 << 2,	 /* its awaiter is already in the chain: the walk ends here */
	TASK_TRUNCATED = 1 << 3, /* more coroutine frames than recorded */
	TASK_MORE = 1 << 4,	 /* it has awaiters beyond MAX_TASKS */
	TASK_MEMO = 1 << 5,	 /* wall mode: walked earlier in this run; its chain from here
				  * is that walk's, joined by userspace (user/readers/walljoin.c) */
};

#define TASK_NAME_LEN 32
#define TASK_NAME_MAX 255  /* characters of a name kept, as CPython's own remote reader */
#define NAME_BYTES    1024 /* TASK_NAME_MAX characters of 4 bytes, a power of two */

enum name_kind {
	NAME_NONE = 0,
	NAME_ASCII = 1,	 /* the characters, NUL-padded */
	NAME_LONG = 2,	 /* a PyLong's size word then its digits (3.12+ keeps Task-N as N) */
	NAME_CACHED = 3, /* any other str: in task_names under (pid, name generation, task,
			  * name object, serial); the generation in the name's first 4 bytes */
};

/* A name's generation: a copy of a task's name is known right only for the name object
 * and for the task's renames seen (task_serial.name_gen, below NAME_STAMP) when it was
 * copied. A process whose renames are not watched (no set_name probe yet, --no-origins)
 * has every copy stamped instead (NAME_STAMP and a number no other copy has while the
 * map may hold it), never found again. */
#define NAME_STAMP (1U << 31)
/* A stamp: the writer's slot (0-2 the walk's programs, see pw_name_stamp; 3 userspace),
 * its CPU and its count of copies, each cut to its bits. */
#define NAME_STAMP_OF(slot, cpu, n)                                                                \
	(NAME_STAMP | ((slot)&3U) << 29 | ((cpu)&0x3ffU) << 19 | ((n)&0x7ffffU))

/* Key of task_names: a task keeps one entry per name object and generation, so that a
 * rename does not take the copy from under the samples that showed the old name, a name
 * at the address of an old one is not the old one, and a new task at the same address
 * has its own. */
struct name_key {
	__u32 pid;
	__u32 gen;
	__u64 task;
	__u64 name_obj;
	__u64 serial;
};

/* task_serials' value: the serial of the task at an address, its renames and, filled in
 * by the CPU walk, its short name (NAME_ASCII or NAME_LONG, as task_rec keeps it) for
 * name_serial, name_obj and fill_gen, so that the walk that checked a task alive has its
 * name without another lookup. The walk writes the name part in place from any CPU, into
 * an entry that an update (a new task at the address) may meanwhile have handed to another
 * key: check, a mix of the name part's words (bpf/pywalk.h, pw_serial_check), says it was
 * written whole by one writer, and name_serial for which task. */
struct task_serial {
	__u64 serial;
	__u32 name_gen; /* set_name calls seen (the task_set_name probe) */
	__u32 name_odd; /* one of them was given something other than a str: never cached */
	__u64 name_serial;
	__u64 name_obj;
	__u32 name_kind;
	__u32 fill_gen;
	char name[TASK_NAME_LEN];
	__u64 check;
};

/* Key of task_sites: a task's address is soon another task's, whose site must not
 * replace the one its predecessor's samples still ask for. */
struct site_key {
	__u32 pid;
	__u32 pad;
	__u64 task;
	__u64 serial;
};

/* A task's name as copied once per serial and name object (the task_names map): while a
 * task keeps both, the object is alive (the task holds it) and a str never changes. kind
 * NAME_ASCII and NAME_LONG keep it in name as task_rec does; NAME_CACHED in chars. */
struct name_ent {
	__u64 serial, name_obj;
	__u32 kind;
	__u32 length; /* the str's length in characters: more than nchars when cut */
	__u16 width;  /* bytes per character: 1 (ASCII or Latin-1), 2 (UCS-2), 4 (UCS-4) */
	__u16 nchars; /* characters in chars */
	__u32 gen;    /* the name generation of the copy (its key's) */
	char name[TASK_NAME_LEN];
	__u8 chars[NAME_BYTES];
};

/* A task as the sampler saw it: address and coroutine identify it (an address alone can
 * be reused). Its name is copied at sample time when it is a short ASCII str or a
 * number, or found in task_names (NAME_CACHED); NAME_NONE: it could not be read. */
struct task_rec {
	__u64 addr;
	__u64 coro;
	__u64 serial;
	__u64 name_obj;
	__u16 first; /* its coroutine frames: frames[first .. first + nframes) */
	__u16 nframes;
	__u32 flags;
	__u32 name_kind;
	char name[TASK_NAME_LEN];
};

/* Built in per-CPU scratch. The CPU sampler's ring record (SAMPLE_REC) is packed: the
 * header, hdr.ntasks tasks, then hdr.nframes + hdr.ncoro frames (then a native part);
 * userspace unpacks it into this struct (user/readers/sampler.c). */
struct py_sample {
	struct sample_hdr hdr;
	struct task_rec tasks[MAX_TASKS];
	struct frame_rec frames[MAX_FRAMES + MAX_CORO_FRAMES];
};
#define SAMPLE_REC(ntasks, nframes)                                                                \
	(offsetof(struct py_sample, tasks) + (ntasks) * sizeof(struct task_rec) +                  \
	 (nframes) * sizeof(struct frame_rec))

/* A suspended awaiter's coroutine frames, as walked while it awaited the task waiter: its
 * frames still while it awaits that same task, pending (bpf/pywalk.h, pw_kept). Keyed by
 * struct task_key. */
#define KEPT_FRAMES 64
struct kept_ent {
	__u64 gen; /* odd while being written */
	__u64 serial;
	__u64 coro;
	__u64 waiter, waiter_serial, waiter_coro;
	__u32 nframes, flags;
	struct frame_rec frames[KEPT_FRAMES];
};

/* Key of the per-process maps of tasks and coroutines. */
struct task_key {
	__u32 pid;
	__u32 pad;
	__u64 addr;
};

enum link_kind {
	LINK_AWAITER = 1, /* the parent awaits the child (directly or through a future) */
	LINK_ORIGIN = 2,  /* the parent created the child */
};

/* A task and its serial: a number given to each task once (by the creation probe, or by
 * userspace for tasks that were there before). A task and its coroutine are allocated
 * and freed together, so a new pair often takes both addresses of an old one: only the
 * serial tells them apart. 0 when unknown. */
struct task_id {
	__u64 task;
	__u64 serial;
};

#define SERIAL_USER (1ULL << 62) /* serials userspace gives start here */

/* child task -> parent. A link holds only while the child is child_serial (and runs
 * child_coro); its parent is alive while it is parent_serial and runs parent_coro. A
 * link made at creation carries the parent's name as it was then: the parent may be
 * gone by the time a sample shows it. */
struct task_link {
	__u64 child_serial;
	__u64 child_coro;
	__u64 parent;
	__u64 parent_coro;
	__u64 parent_serial;
	__u64 name_obj;
	__u32 kind;
	__u32 name_kind;
	char name[TASK_NAME_LEN];
};

/* Wall mode: a task created or freed (task_lives ring buffer), so each tick knows the
 * live tasks however short their lives, without waiting for the next snapshot. */
enum task_life_kind {
	TASK_BORN = 1,
	TASK_FREED = 2,
};

struct task_life {
	__u32 kind;
	__u32 pid;
	__u64 task;
	__u64 coro;   /* TASK_BORN */
	__u64 serial; /* TASK_FREED: 0 when the task was never numbered */
	__u64 ns;     /* CLOCK_MONOTONIC */
};

/* Wall mode: each CPU's newest task creations (task_births, a per-CPU ring of BIRTH_SLOTS)
 * with the time of their TASK_BORN, so that a tick also walks the tasks created after
 * userspace made its list. gen is odd while the slot is written (a seqlock: the tick reads
 * it from another CPU); the entry at BIRTH_SLOTS is the ring's head, its gen the number of
 * slots written, raised once a slot is whole. */
#define BIRTH_SLOTS 64
struct task_birth {
	__u32 gen, pid;
	__u64 task, coro, serial, ns;
};

#define SITE_FRAMES 24 /* creator frames kept per creation site */
#define SITE_OUTER  4  /* of which the outermost, when there are more */

/* Where a task was created (task_sites, keyed by the new task): its creator's frames at
 * that moment, innermost first, from the create call out to the creator's coroutine,
 * always last. When there are more, the innermost SITE_FRAMES - SITE_OUTER and the
 * outermost SITE_OUTER (the coroutine's and what it runs: a wrapper's, anyio 4's, is
 * told apart by them) are kept, and more says how many between them are not. */
struct task_site {
	__u64 serial; /* the created task's */
	__u32 nframes;
	__u32 more;
	/* 3.12+, as sample_hdr's: the code-version counter before the walk (0: not read)
	 * and after it (0: not read, or the code objects were read), and when the walk
	 * ended; frames of fp FP_VERSIONED had their code objects left unread */
	__u32 code_seen, code_epoch_end;
	__u64 end_ns;
	struct frame_rec frames[SITE_FRAMES];
};

enum stat_idx {
	STAT_SAMPLES,	    /* program runs */
	STAT_PYTHON,	    /* runs in a known Python process */
	STAT_NO_TSTATE,	    /* Python process, thread without a thread state */
	STAT_TRUNCATED,	    /* stacks deeper than MAX_FRAMES */
	STAT_READ_ERR,	    /* walks ended by a failed read */
	STAT_LOST,	    /* ring buffer full */
	STAT_TSTATE_LOOKUP, /* thread-state cache misses (list walks) */
	STAT_TASK,	    /* samples in a task */
	STAT_TASK_CREATED,  /* tasks created while recording (seen by the task_init probe) */
	STAT_PY_NS,	    /* time spent on STAT_PYTHON runs, from the process lookup on */
	STAT_READS,	    /* reads of user memory in STAT_PYTHON runs (page-cache misses) */
	STAT_READ_BYTES,    /* their bytes */
	STAT_NATIVE,	    /* samples with native registers and stack (--native) */
	STAT_NATIVE_BYTES,  /* their stack copies' bytes */
	STAT_NAME_COPIES,   /* task names copied into task_names (a name's first sample) */
	/* STAT_PY_NS by phase: thread-state lookup, frame walk, task walk, output */
	STAT_NS_TSTATE,
	STAT_NS_FRAMES,
	STAT_NS_TASKS,
	STAT_NS_OUTPUT,
	STAT_TASK_FREED,     /* tasks freed (the task_free probe, wall mode) */
	STAT_TASK_LIFE_LOST, /* task_lives events the ring buffer had no room for */
	STAT_KEPT_HITS,	     /* suspended awaiters' frames taken from kept_frames */
	STAT_KEPT_FILLS,     /* ... walked and kept there */
	STAT_RENAMES,	     /* set_name calls (the task_set_name probe) */
	STAT_WORK_HINTED,    /* pool links proven from the worker's last (pw_pool_link) */
	STAT_INIT_WALKS,     /* the creation probe's walks of the creating thread */
	STAT_INIT_READS,     /* ... their reads of user memory, to the creator found */
	STAT_MAX,
};

/* Histogram of the time per sample, in quarter-octave buckets: robust medians on a
 * machine where a timed section can be preempted. */
#define COST_BUCKETS 128

static inline __u32 cost_bucket(__u64 ns)
{
	__u64 v = ns;
	__u32 msb = 0, idx;

	if (v >> 32) {
		msb += 32;
		v >>= 32;
	}
	if (v >> 16) {
		msb += 16;
		v >>= 16;
	}
	if (v >> 8) {
		msb += 8;
		v >>= 8;
	}
	if (v >> 4) {
		msb += 4;
		v >>= 4;
	}
	if (v >> 2) {
		msb += 2;
		v >>= 2;
	}
	if (v >> 1)
		msb += 1;
	if (msb < 2)
		return (__u32)ns;
	idx = msb * 4 + ((ns >> (msb - 2)) & 3);
	return idx < COST_BUCKETS ? idx : COST_BUCKETS - 1;
}

#endif

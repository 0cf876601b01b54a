/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Structs and constants shared by the BPF sampler and its userspace loader. */
#ifndef ASYNCBPF_H
#define ASYNCBPF_H

#include "pyasync.h"
#include "pylayout.h"

#define MAX_FRAMES 256   /* frames kept per sample; deeper stacks are marked truncated */
#define MAX_THREADS 256  /* thread states examined when looking one up */
#define MAX_PROCS 8192
#define TASK_COMM_LEN 16

/* Per-process record pushed by userspace, keyed by host tgid. */
struct py_proc {
	__u64 runtime;   /* address of _PyRuntime in the process */
	__u64 code_type; /* address of PyCode_Type, 0 when unknown (no type check) */
	/* generator types the coroutine walk steps through; 0 when unknown */
	__u64 coro_type, gen_type, asend_type, corowrapper_type;
	struct py_layout layout;
	struct py_async_layout async; /* zero (yf_kind 0) until known */
};

/* One Python frame. fp guards the symbol cache against code-object address reuse. */
struct frame_rec {
	__u64 code;  /* PyCodeObject address */
	__u32 fp;    /* fingerprint, see pw_code_fingerprint() */
	__s32 instr; /* byte offset of the current instruction in the bytecode, -1 unknown */
};

enum sample_flags {
	SAMPLE_TRUNCATED = 1 << 0, /* more than MAX_FRAMES frames */
	SAMPLE_NO_TSTATE = 1 << 1, /* thread has no Python thread state */
	SAMPLE_READ_ERR = 1 << 2,  /* walk ended on a failed or inconsistent read */
};

/* Frame fingerprint 0 means the code object could not be read or is not a code object. */
#define FP_INVALID 0

struct sample_hdr {
	__u64 time_ns;
	__u64 tstate;
	__u32 pid; /* host tgid */
	__u32 tid; /* host tid */
	__u32 nframes;
	__u32 flags;
	char comm[TASK_COMM_LEN]; /* thread name at sample time */
};

/* Built in per-CPU scratch, sent with only nframes frames. Innermost frame first. */
struct py_sample {
	struct sample_hdr hdr;
	struct frame_rec frames[MAX_FRAMES];
};

enum stat_idx {
	STAT_SAMPLES,       /* program runs */
	STAT_PYTHON,        /* runs in a known Python process */
	STAT_NO_TSTATE,     /* Python process, thread without a thread state */
	STAT_TRUNCATED,     /* stacks deeper than MAX_FRAMES */
	STAT_READ_ERR,      /* walks ended by a failed read */
	STAT_LOST,          /* ring buffer full */
	STAT_TSTATE_LOOKUP, /* thread-state cache misses (list walks) */
	STAT_MAX,
};

#endif

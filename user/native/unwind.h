/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Native frames of a sample (--native): the user registers and stack copy the BPF sampler
 * took, unwound with elfutils' libdw from the modules' CFI (no frame pointers needed), one
 * Dwfl per process, and each frame named. */
#ifndef ASYNCBPF_UNWIND_H
#define ASYNCBPF_UNWIND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/asyncbpf.h"

#define NATIVE_MAX_FRAMES 512
/* a frame in executable memory of no file (a libffi closure's trampoline, JIT code) */
#define ANON_CODE "[anonymous code]"

enum native_kind {
	NATIVE_OTHER,  /* a frame of some library or executable: shown */
	NATIVE_EVAL,   /* a C call of CPython's eval loop: where Python frames go */
	NATIVE_INTERP, /* another function of the interpreter's own ELF: hidden by default */
};

struct native_frame {
	const char *name; /* "symbol" or "library+0xOFFSET", valid until the process is forgotten */
	enum native_kind kind;
	int shim; /* 3.12+: the sample's shim (native_hdr.shim) on this frame's stack, -1: none */
};

enum native_end {
	NATIVE_END_ROOT,  /* the outermost frame was reached */
	NATIVE_END_COPY,  /* the stack copy ended first (or NATIVE_MAX_FRAMES were unwound):
			   * frames towards the root are unknown */
	NATIVE_END_ERROR, /* no registers, an address in no module, or CFI missing */
};

struct native_stack {
	struct native_frame f[NATIVE_MAX_FRAMES]; /* leaf first */
	unsigned int n;
	enum native_end end;
	unsigned int nshims; /* the sample's: C calls of the eval loop are found by them */
};

/* A sampler record's native part (SAMPLE_NATIVE), its stack copy right after it; NULL if
 * it has none. The sampler has checked that the copy fits in size. */
const struct native_hdr *native_of(const struct py_sample *s, size_t size);

struct unwinder;

/* interp_names: name the interpreter's own C functions (else they are "[interpreter]",
 * which --native-all would show; the eval loop is found without its name). */
struct unwinder *unwinder_new(bool interp_names);
void unwinder_free(struct unwinder *u);

/* Unwinds one thread's sample of process pid, taken at time_ns (CLOCK_MONOTONIC); interp
 * is the path (as the process maps it) of the ELF holding the interpreter. stack points
 * to h->stack_len bytes copied from h->stack_start. 0, or -ENOMEM. */
int unwinder_unwind(struct unwinder *u, pid_t pid, pid_t tid, const char *interp, uint64_t time_ns,
		    const struct native_hdr *h, const uint8_t *stack, struct native_stack *out);

/* Forgets a process (exited): its Dwfl and its names' cache. */
void unwinder_forget(struct unwinder *u, pid_t pid);

struct unwinder_stats {
	uint64_t stacks, frames;
	uint64_t ended_copy, ended_error; /* stacks by how they ended short of the root */
	uint64_t reports;		  /* times a process's modules were (re)read */
	uint64_t report_ns;		  /* time spent on those */
	uint64_t ns; /* time spent unwinding and naming (frames new to the cache: their ELF's
		      * symbols and CFI read on first use) */
	uint64_t warm, warm_ns; /* stacks whose frames were all named before, and their time */
	uint64_t slow;	      /* stacks left to libdw's unwinder (a frame without a simple rule) */
	uint64_t bad_returns; /* stacks cut at a return address outside code */
	uint64_t stubs;	      /* stacks interrupted in code of no ELF file (ANON_CODE or not) */
	uint64_t checked, mismatches; /* ASYNCBPF_NATIVE_CHECK=1: stacks unwound both ways */
};

void unwinder_stats(const struct unwinder *u, struct unwinder_stats *st);

#endif

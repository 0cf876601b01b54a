/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The fast path of native unwinding: each pc's CFI rule, asked of libdw once and cached
 * in a compact form (CFA = rsp or rbp + offset; each callee-saved register and the return
 * address unchanged, undefined, or saved at CFA + offset), then applied to a stack copy
 * with no call into libdw. A pc whose rule is anything else (a DWARF expression, a signal
 * frame) is left to libdw's own unwinder. */
#ifndef ASYNCBPF_CFIRULES_H
#define ASYNCBPF_CFIRULES_H

#include <elfutils/libdwfl.h>
#include <stdint.h>

#include "bpf/asyncbpf.h"

/* x86-64 registers by DWARF number; valid: a bit per register */
struct cfi_regs {
	uint64_t r[NATIVE_REGS];
	uint32_t valid;
};

enum cfi_step {
	CFI_STEP_OK,   /* r is the caller's */
	CFI_STEP_ROOT, /* the return address is undefined: the outermost frame */
	CFI_STEP_COPY, /* a saved register lies outside the stack copy */
	CFI_STEP_SLOW, /* no simple rule here (or no CFI): libdw must unwind this stack */
};

struct cfi_cache;

struct cfi_cache *cfi_cache_new(void);
void cfi_cache_free(struct cfi_cache *c);
/* Forgets every rule (the process's modules were read again). */
void cfi_cache_clear(struct cfi_cache *c);

/* The module that holds pc, NULL if none: dwfl_addrmodule itself gives the highest
 * module for any address above it (the stack, 0x7ffffffff000: ld.so). */
Dwfl_Module *cfi_module(Dwfl *dwfl, uint64_t pc);

/* One frame up from the frame at pc (a return address minus one, or the interrupted pc)
 * with registers r, reading saved registers from the copy of h->stack_len bytes at
 * h->stack_start. */
enum cfi_step cfi_step(struct cfi_cache *c, Dwfl *dwfl, uint64_t pc, struct cfi_regs *r,
		       const struct native_hdr *h, const uint8_t *stack);

#endif

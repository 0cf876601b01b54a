// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "native/cfirules.h"

#include "hash.h"

#include <dwarf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define REG_RSP 7
#define REG_RBP 6
#define REG_RA	16

/* the registers a caller may rely on after a call (System V x86-64), and the return
 * address: rbx rbp r12 r13 r14 r15 ra */
static const int tracked[] = { 3, 6, 12, 13, 14, 15, REG_RA };
#define NTRACKED (int)(sizeof(tracked) / sizeof(tracked[0]))

enum reg_rule { R_SAME, R_UNDEF, R_AT, R_VAL };

struct rule {
	uint64_t pc; /* 0: empty slot */
	bool simple; /* false: libdw unwinds (the rest unused) */
	uint8_t cfa_reg;
	int64_t cfa_off;
	uint8_t kind[NTRACKED];
	int64_t off[NTRACKED];
};

struct cfi_cache {
	struct rule *v;
	size_t n, cap;
};

struct cfi_cache *cfi_cache_new(void)
{
	return calloc(1, sizeof(struct cfi_cache));
}

void cfi_cache_free(struct cfi_cache *c)
{
	if (c)
		free(c->v);
	free(c);
}

void cfi_cache_clear(struct cfi_cache *c)
{
	free(c->v);
	c->v = NULL;
	c->n = c->cap = 0;
}

static size_t slot_of(const struct cfi_cache *c, uint64_t pc)
{
	size_t i = hash_u64(pc) & (c->cap - 1);

	while (c->v[i].pc && c->v[i].pc != pc)
		i = (i + 1) & (c->cap - 1);
	return i;
}

static int grow(struct cfi_cache *c)
{
	struct rule *old = c->v;
	size_t ocap = c->cap, cap = ocap ? 2 * ocap : 1024;

	c->v = calloc(cap, sizeof(*c->v));
	if (!c->v) {
		c->v = old;
		return -1;
	}
	c->cap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].pc)
			c->v[slot_of(c, old[i].pc)] = old[i];
	free(old);
	return 0;
}

/* A register's rule as libdw gives it: see dwarf_frame_register. */
static bool reg_rule(Dwarf_Frame *fr, int regno, uint8_t *kind, int64_t *off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t n = 0;

	if (dwarf_frame_register(fr, regno, mem, &ops, &n))
		return false;
	if (!n) {
		*kind = ops ? R_UNDEF : R_SAME;
		return true;
	}
	/* DW_OP_call_frame_cfa [DW_OP_plus_uconst N] [DW_OP_stack_value] */
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	*off = 0;
	*kind = R_AT;
	for (size_t i = 1; i < n; i++) {
		if (ops[i].atom == DW_OP_plus_uconst && i == 1)
			*off = (int64_t)ops[i].number; /* negative offsets wrap */
		else if (ops[i].atom == DW_OP_stack_value && i == n - 1)
			*kind = R_VAL;
		else
			return false;
	}
	return true;
}

Dwfl_Module *cfi_module(Dwfl *dwfl, uint64_t pc)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
	Dwarf_Addr lo, hi;

	if (mod &&
	    (!dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL) || pc < lo || pc >= hi))
		return NULL;
	return mod;
}

static void make_rule(Dwfl *dwfl, uint64_t pc, struct rule *r)
{
	Dwfl_Module *mod = cfi_module(dwfl, pc);
	Dwarf_Addr bias;
	Dwarf_CFI *cfi;
	Dwarf_Frame *fr = NULL;
	Dwarf_Op *ops;
	size_t n;
	bool signal = false;

	memset(r, 0, sizeof(*r));
	r->pc = pc;
	if (!mod)
		return;
	cfi = dwfl_module_eh_cfi(mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &fr)) {
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &fr))
			return;
	}
	if (dwarf_frame_info(fr, NULL, NULL, &signal) != REG_RA || signal)
		goto out;
	/* CFA = register + offset: DW_OP_bregx (libdw's form) or DW_OP_bregN */
	if (dwarf_frame_cfa(fr, &ops, &n) || n != 1)
		goto out;
	if (ops[0].atom == DW_OP_bregx) {
		r->cfa_reg = (uint8_t)ops[0].number;
		r->cfa_off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		r->cfa_reg = ops[0].atom - DW_OP_breg0;
		r->cfa_off = (int64_t)ops[0].number;
	} else {
		goto out;
	}
	if (r->cfa_reg != REG_RSP && r->cfa_reg != REG_RBP)
		goto out;
	for (int i = 0; i < NTRACKED; i++)
		if (!reg_rule(fr, tracked[i], &r->kind[i], &r->off[i]))
			goto out;
	r->simple = true;
out:
	free(fr);
}

static bool read8(const struct native_hdr *h, const uint8_t *stack, uint64_t addr, uint64_t *v)
{
	if (addr < h->stack_start || addr - h->stack_start + 8 > h->stack_len)
		return false;
	memcpy(v, stack + (addr - h->stack_start), 8);
	return true;
}

enum cfi_step cfi_step(struct cfi_cache *c, Dwfl *dwfl, uint64_t pc, struct cfi_regs *r,
		       const struct native_hdr *h, const uint8_t *stack)
{
	struct cfi_regs out = *r;
	struct rule *ru;
	uint64_t cfa;
	size_t i;

	if ((c->n + 1) * 2 > c->cap && grow(c))
		return CFI_STEP_SLOW;
	i = slot_of(c, pc);
	ru = &c->v[i];
	if (!ru->pc) {
		make_rule(dwfl, pc, ru);
		c->n++;
	}
	if (!ru->simple || !(r->valid & 1u << ru->cfa_reg))
		return CFI_STEP_SLOW;
	cfa = r->r[ru->cfa_reg] + (uint64_t)ru->cfa_off;
	for (int k = 0; k < NTRACKED; k++) {
		int reg = tracked[k];
		uint64_t at = cfa + (uint64_t)ru->off[k];

		switch (ru->kind[k]) {
		case R_UNDEF:
			out.valid &= ~(1u << reg);
			break;
		case R_AT:
			/* as libdw: a register saved out of reach is unknown, not an end */
			if (read8(h, stack, at, &out.r[reg]))
				out.valid |= 1u << reg;
			else if (reg == REG_RA)
				return CFI_STEP_COPY;
			else
				out.valid &= ~(1u << reg);
			break;
		case R_VAL:
			out.r[reg] = at;
			out.valid |= 1u << reg;
			break;
		}
	}
	if (!(out.valid & 1u << REG_RA) || !out.r[REG_RA])
		return CFI_STEP_ROOT;
	out.r[REG_RSP] = cfa;
	out.valid |= 1u << REG_RSP;
	*r = out;
	return CFI_STEP_OK;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Code object -> qualname, file name and line, read once per (pid, address, fingerprint). */
#ifndef ASYNCBPF_SYMBOLIZE_H
#define ASYNCBPF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpython/pyproc.h"

struct py_code {
	char *qualname; /* co_qualname (3.11+) or co_name; never NULL when valid */
	char *filename; /* co_filename */
	int firstlineno;
	uint8_t *linetable; /* co_lnotab / co_linetable bytes */
	size_t linetable_len;
	int valid; /* 0: unreadable, stale (fingerprint mismatch) or not a code object */
};

struct symtab;

struct symtab *symtab_new(void);
void symtab_free(struct symtab *st);

/* The code object at code in t's process, as of fingerprint fp (see pw_code_fingerprint).
 * Reads it on first sight and caches the result, valid or not; never returns NULL
 * (an entry that cannot be read has valid == 0 and prints as [unknown]). */
const struct py_code *symtab_code(struct symtab *st, const struct py_target *t, uint64_t code,
				  uint32_t fp);

/* Source line of the instruction at byte offset instr (-1: unknown, gives firstlineno). */
int py_code_line(const struct py_code *c, uint32_t version, int32_t instr);

/* Drops every entry of pid (process exited or exec'ed). */
void symtab_forget(struct symtab *st, pid_t pid);

/* Entries cached, for --stats. */
size_t symtab_size(const struct symtab *st);

/* Caps the memory of each process's entries: beyond it the least recently used go
 * (and are read again if needed). 0: no cap. */
void symtab_set_limit(struct symtab *st, size_t bytes_per_process);
size_t symtab_bytes(const struct symtab *st);
uint64_t symtab_evicted(const struct symtab *st);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Line of a bytecode offset from a code object's line table, as CPython's
 * PyCode_Addr2Line() computes it for each table format. Pure functions: every decode is
 * bounded by the table length and never reads past it. */
#ifndef ASYNCBPF_LINETABLE_H
#define ASYNCBPF_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/* Each returns the line of the instruction at byte offset off, firstlineno when off < 0,
 * and -1 where CPython has no line: an instruction marked "no line" (3.10+), an offset
 * past the table's end (3.10+) or a table that ends in the middle of an entry. */

/* 3.8-3.9 co_lnotab: (byte delta, signed line delta) pairs. */
int lnotab_line(const uint8_t *tab, size_t len, int firstlineno, int32_t off);
/* 3.10 co_linetable (PEP 626): (byte delta, line delta or -128 for "no line") pairs. */
int linetable310_line(const uint8_t *tab, size_t len, int firstlineno, int32_t off);
/* 3.11+ co_linetable location table (Objects/locations.md). */
int locations_line(const uint8_t *tab, size_t len, int firstlineno, int32_t off);

/* Dispatches on a PY_VERSION_HEX; -1 for versions before 3.8. */
int linetable_line(uint32_t version, const uint8_t *tab, size_t len, int firstlineno, int32_t off);

#endif

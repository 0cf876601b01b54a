/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Python str and bytes objects read from another process, validated as untrusted. */
#ifndef ASYNCBPF_PYSTR_H
#define ASYNCBPF_PYSTR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../bpf/pylayout.h"

#define PYSTR_MAX_CHARS 4096 /* longer strings are cut and end with PYSTR_CUT */
#define PYSTR_CUT	"..."
#define PYSTR_MAX_LEN	(1L << 30) /* a str claiming more characters is garbage */
#define PYBYTES_MAX	(1 << 20)

/* Reads the str at addr in pid into *out, a malloc'd NUL-terminated UTF-8 string. Only
 * compact strings (every str CPython creates for code objects) are read; code points
 * UTF-8 cannot carry (surrogates, NUL, beyond U+10FFFF, non-ASCII in an ASCII string)
 * become U+FFFD. Returns 0, -EFAULT (unreadable), -EINVAL (not a compact str: legacy
 * form, bad kind, length out of range) or -ENOMEM. */
int py_str_read(pid_t pid, const struct py_layout *l, uint64_t addr, char **out);

/* Reads the contents of the bytes object at addr in pid into *out (malloc'd, *len bytes
 * plus a NUL). Returns 0, -EFAULT, -EINVAL (negative size), -E2BIG (more than max bytes)
 * or -ENOMEM. */
int py_bytes_read(pid_t pid, const struct py_layout *l, uint64_t addr, size_t max, uint8_t **out,
		  size_t *len);

#endif

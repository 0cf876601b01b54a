/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Python str and bytes objects read from another process, validated as untrusted. */
#ifndef ASYNCBPF_PYSTR_H
#define ASYNCBPF_PYSTR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/pylayout.h"

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

/* The same, at most max characters, a longer string cut with cut after them. */
int py_str_read_max(pid_t pid, const struct py_layout *l, uint64_t addr, size_t max,
		    const char *cut, char **out);

/* A compact str's first characters as they are in memory: at most max of them into data
 * (max * 4 bytes), *width bytes each, *n of them; *len is its whole length. */
int py_str_chars(pid_t pid, const struct py_layout *l, uint64_t addr, size_t max, uint8_t *data,
		 int *width, int *ascii, size_t *n, int64_t *len);

/* n characters of width bytes (ascii: ASCII only) to NUL-terminated UTF-8 in out, which
 * holds n * 4 + 1 bytes; returns the bytes written. Code points UTF-8 cannot carry become
 * U+FFFD. */
size_t py_chars_utf8(const uint8_t *data, size_t n, int width, int ascii, char *out);

/* Reads the contents of the bytes object at addr in pid into *out (malloc'd, *len bytes
 * plus a NUL). Returns 0, -EFAULT, -EINVAL (negative size), -E2BIG (more than max bytes)
 * or -ENOMEM. */
int py_bytes_read(pid_t pid, const struct py_layout *l, uint64_t addr, size_t max, uint8_t **out,
		  size_t *len);

#endif

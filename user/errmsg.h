/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The one form of an error or notice on stderr: "PROG: message\n". Header-only, shared
 * by every folder like hash.h; the tools and the recorder print through it. */
#ifndef ASYNCBPF_ERRMSG_H
#define ASYNCBPF_ERRMSG_H

#include <stdarg.h>
#include <stdio.h>

static inline void errmsg_v(const char *prog, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static inline __attribute__((format(printf, 2, 3))) void errmsg(const char *prog, const char *fmt,
								...)
{
	va_list ap;

	va_start(ap, fmt);
	errmsg_v(prog, fmt, ap);
	va_end(ap);
}

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Output formats and writing a profile to a file or stdout. */
#ifndef ASYNCBPF_WRITERS_H
#define ASYNCBPF_WRITERS_H

#include <stddef.h>
#include <stdio.h>

#include "profile.h"

enum out_format {
	OUT_COLLAPSED,
};

int writer_format(const char *name, enum out_format *out);
const char *writer_formats(void);

/* Writes prof to path (NULL or "-": stdout). A file is written under a temporary name
 * in the same directory, never through a symlink, mode 0600, and renamed into place
 * when complete. 0 on success, else -1 with a one-line reason in why. */
int writer_write(const char *path, enum out_format fmt, struct profile *prof, char *why,
		 size_t whylen);

/* Collapsed stacks: "frame;frame;...;frame COUNT" per line, root first; in a weighted
 * profile the value is the stack's wall time in microseconds. */
int write_collapsed(FILE *f, struct profile *prof);

#endif

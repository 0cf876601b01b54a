/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Output formats and writing a profile to a file or stdout. */
#ifndef ASYNCBPF_WRITERS_H
#define ASYNCBPF_WRITERS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "profile.h"

enum out_format {
	OUT_COLLAPSED,
};

int writer_format(const char *name, enum out_format *out);
const char *writer_formats(void);

/* Writes prof to path (NULL or "-": stdout). A file is written with user/outfile.c:
 * under a temporary name in the same directory, never through a symlink, with mode, and
 * renamed into place when complete. 0 on success, else -1 with a one-line reason in why. */
int writer_write(const char *path, enum out_format fmt, struct profile *prof, mode_t mode,
		 char *why, size_t whylen);

/* Collapsed stacks: "frame;frame;...;frame COUNT" per line, root first; samples lost
 * (profile_lost) end the file as one more line, "[lost samples] COUNT". */
#define COLLAPSED_LOST "[lost samples]"

int write_collapsed(FILE *f, struct profile *prof);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Output files written safely by a root process: never through a symlink (neither in the
 * directory path nor at the final name), under a temporary name in the same directory,
 * with an exact mode, and renamed into place only when complete. */
#ifndef ASYNCBPF_OUTFILE_H
#define ASYNCBPF_OUTFILE_H

#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

#define OUTFILE_MODE 0600 /* default */

struct outfile {
	FILE *f; /* write here between outfile_open and outfile_commit */
	int dirfd;
	char base[NAME_MAX + 1];
	char tmp[NAME_MAX + 1];
	const char *path;
};

/* What outfile_open would refuse, checked without leaving anything behind (a temporary
 * file is created and removed): so a recording fails before it starts, not after. An
 * existing device or FIFO passes (the writers write those in place). 0 or -1 with a
 * one-line reason in why. */
int outfile_check(const char *path, char *why, size_t whylen);

/* Creates the temporary file for path with mode. 0 or -1 with a reason in why. */
int outfile_open(struct outfile *o, const char *path, mode_t mode, char *why, size_t whylen);

/* Flushes, syncs and renames the temporary file to path; on failure it is removed. 0 or
 * -1 with a reason in why. */
int outfile_commit(struct outfile *o, char *why, size_t whylen);

/* Removes the temporary file. */
void outfile_abort(struct outfile *o);

#endif

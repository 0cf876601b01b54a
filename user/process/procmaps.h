/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* /proc/PID/maps, parsed. */
#ifndef ASYNCBPF_PROCMAPS_H
#define ASYNCBPF_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct procmap {
	uint64_t start, end, offset;
	char perms[5]; /* "r-xp" */
	unsigned int dev_major, dev_minor;
	uint64_t inode;
	bool deleted;	  /* the kernel appended " (deleted)"; path has it stripped */
	const char *path; /* "" for anonymous mappings, "[heap]", "/usr/lib/..." */
};

struct procmaps {
	struct procmap *v;
	size_t n;
	char *text; /* paths point into it */
};

/* Parses maps text (need not be NUL-terminated). Malformed or overlong lines make
 * the whole parse fail: 0 or -EINVAL / -ENOMEM. */
int procmaps_parse(const char *buf, size_t len, struct procmaps *m);

/* Reads and parses /proc/PID/maps. 0 or -errno (-ENOENT / -ESRCH: no such process). */
int procmaps_read(pid_t pid, struct procmaps *m);

void procmaps_free(struct procmaps *m);

/* The mapping holding addr, or NULL. */
const struct procmap *procmaps_find(const struct procmaps *m, uint64_t addr);

#endif

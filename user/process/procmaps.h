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

/* Whether process pid exec'd since then was read from its maps: 1 yes, 0 no, or -errno
 * (the process is gone, or its maps cannot be read). An exec keeps the pid and the start
 * time but maps a new image: the vDSO moves (ASLR), and the lowest file mapping moves
 * or is another file. */
int procmaps_exec_since(pid_t pid, const struct procmaps *then);

/* Into path, a name of the file that mapping m of process pid maps, for open() and for
 * uprobes, whatever mount namespace and root the process has: its own file through
 * /proc/PID/map_files/ (which needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), else its
 * path under /proc/PID/root. 0 or -errno (-ENOENT: anonymous, or deleted and no access
 * to map_files). */
int procmap_file(pid_t pid, const struct procmap *m, char *path, size_t len);

#endif

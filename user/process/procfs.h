/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef ASYNCBPF_PROCFS_H
#define ASYNCBPF_PROCFS_H

#include <stddef.h>
#include <sys/types.h>

/* Reads a small /proc file into buf, NUL-terminated: bytes read or -errno. */
ssize_t proc_read(const char *path, char *buf, size_t len);

/* Start time of pid (clock ticks since boot, /proc/PID/stat field 22): with the pid it
 * names one process incarnation. -errno on failure (-ENOENT: gone, zombies included). */
int proc_start_time(pid_t pid, unsigned long long *out);

/* /proc/PID/comm without the newline. -errno on failure. */
int proc_comm(pid_t pid, char *buf, size_t len);

#endif

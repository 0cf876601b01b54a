/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef ASYNCBPF_MEMREAD_H
#define ASYNCBPF_MEMREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads len bytes at addr in pid with process_vm_readv. 0 on success, -errno on
 * failure; a short read is -EFAULT. */
int mem_read(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Reads each bytes at every addrs[i] into buf + i * each, as few system calls as it
 * takes; ok[i] says whether that piece was read whole. 0, or -errno when the process
 * cannot be read at all. */
int mem_read_many(pid_t pid, const uint64_t *addrs, size_t n, size_t each, void *buf, uint8_t *ok);

#endif

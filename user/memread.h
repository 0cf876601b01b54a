/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef ASYNCBPF_MEMREAD_H
#define ASYNCBPF_MEMREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads len bytes at addr in pid with process_vm_readv. 0 on success, -errno on
 * failure; a short read is -EFAULT. */
int mem_read(pid_t pid, uint64_t addr, void *buf, size_t len);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* bpf/pywalk.h compiled for userspace over process_vm_readv: the same walk the BPF
 * sampler does, reading the process set with vmwalk_target() (per thread). */
#ifndef ASYNCBPF_VMWALK_H
#define ASYNCBPF_VMWALK_H

#include <string.h>
#include <sys/types.h>

#include "memread.h"

static _Thread_local pid_t vmwalk_pid;

static inline __attribute__((unused)) void vmwalk_target(pid_t pid)
{
	vmwalk_pid = pid;
}

static inline __attribute__((unused)) int pw_read(void *dst, __u32 len, __u64 addr)
{
	return mem_read(vmwalk_pid, addr, dst, len) ? -1 : 0;
}

#define PW_INLINE inline __attribute__((unused))
#define PW_LOAD(type, buf, off)                                                                    \
	({                                                                                         \
		type v_;                                                                           \
		memcpy(&v_, (const __u8 *)(buf) + (off), sizeof(type));                            \
		v_;                                                                                \
	})
#define PW_LOOP(max, fn, ctx)                                                                      \
	do {                                                                                       \
		for (__u32 i_ = 0; i_ < (max); i_++)                                               \
			if ((fn)(i_, (ctx)))                                                       \
				break;                                                             \
	} while (0)

#include "pywalk.h"

#endif

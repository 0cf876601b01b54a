/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "process/memread.h"

int mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (len == 0)
		return 0;
	if (addr < 4096)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

#define MANY_BATCH 256 /* remote iovecs per call, below IOV_MAX */

int mem_read_many(pid_t pid, const uint64_t *addrs, size_t n, size_t each, void *buf, uint8_t *ok)
{
	struct iovec local[MANY_BATCH], remote[MANY_BATCH];
	size_t i = 0;

	memset(ok, 0, n);
	while (i < n) {
		size_t k = 0, done;
		ssize_t got;

		/* a low address is no object: left unread, and the batch goes on after it */
		for (; i + k < n && k < MANY_BATCH && addrs[i + k] >= 4096; k++) {
			local[k] = (struct iovec){ (uint8_t *)buf + (i + k) * each, each };
			remote[k] = (struct iovec){ (void *)(uintptr_t)addrs[i + k], each };
		}
		if (!k) {
			i++;
			continue;
		}
		got = process_vm_readv(pid, local, k, remote, k, 0);
		if (got < 0 && errno != EFAULT)
			return -errno;
		done = got < 0 ? 0 : (size_t)got / each;
		memset(ok + i, 1, done);
		/* the call stops at the first piece it cannot read whole: skip that one */
		i += done < k ? done + 1 : k;
	}
	return 0;
}

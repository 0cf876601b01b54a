/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Reads of a walked thread's memory through a cache of whole pages, kept for one walk. A
 * walk's reads crowd into few pages: a thread's frames lie side by side in its data
 * stack, code objects of one module next to each other, a task beside its coroutine. A
 * read within a cached page is a copy; a read across a page boundary, or of a page that
 * cannot be read, goes to memory directly. The cache is emptied at the start of every
 * walk (pw_pages_reset): nothing read in one walk is seen by the next. The includer
 * defines, before including this file,
 *   PW_PAGES_RAW(dst, len, addr)   a read of the walked memory, 0 on success
 *   PW_PAGES_COPY(dst, len, src)   a copy out of the cache, 0 on success
 * and pywalk.h's pw_view on pw_pages_view (and pw_read on pw_pages_read, or on
 * pw_pages_raw to count reads that bypass the cache) of a struct pw_pages its reader
 * handle holds. */
#ifndef ASYNCBPF_PWPAGES_H
#define ASYNCBPF_PWPAGES_H

#include "asyncbpf.h"

#ifdef __bpf__
#define PW_PAGES_CLAMP(v, mask) __asm__ __volatile__("%0 &= %1" : "+r"(v) : "i"(mask))
#else
#define PW_PAGES_CLAMP(v, mask) ((v) &= (mask))
#endif
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* PW_PAGES_LAZY 1: a page is read whole at its second read in a walk, its first is read
 * directly (where a read costs by the cache lines it touches, as BPF's here: a lone
 * object is cheaper read alone); 0: at its first (where a read costs per call, as
 * process_vm_readv's system call). */
#ifndef PW_PAGES_LAZY
#define PW_PAGES_LAZY 0
#endif
#ifndef PW_PAGE_SIZE
#define PW_PAGE_SIZE 4096
#endif
/* pages per walk, direct-mapped by page number: 7 keep a per-CPU map value under the
 * 32 KiB a per-CPU allocation allows, and spread consecutive pages */
#ifndef PW_PAGES
#define PW_PAGES 7
#endif

#define PW_PAGES_VIEW_MAX 256 /* bytes of a view at most */

struct pw_pages {
	__u64 addr[PW_PAGES]; /* page address (bit 0: unreadable, bit 1: read once), 0: empty */
	__u32 reads;	      /* reads of user memory this walk, and their bytes */
	__u32 bytes;
	__u8 data[PW_PAGES][PW_PAGE_SIZE];
	__u8 slack[256];
	/* a view's bytes when they cannot be in data: in the same map value, so that the
	 * verifier sees one kind of pointer (a second would double its states) */
	__u8 buf[PW_PAGES_VIEW_MAX];
};

static __always_inline void pw_pages_reset(struct pw_pages *c)
{
	for (__u32 i = 0; i < PW_PAGES; i++)
		c->addr[i] = 0;
	c->reads = 0;
	c->bytes = 0;
}

static __always_inline int pw_pages_raw(struct pw_pages *c, void *dst, __u32 len, __u64 addr)
{
	int ret = PW_PAGES_RAW(dst, len, addr);

	c->reads++;
	c->bytes += len;
	return ret;
}

/* Where addr's len bytes lie in c->data (filled from its page if need be), as an offset
 * from c->data; PW_PAGES_NONE if not there: across a page boundary or unreadable.
 * Direct-mapped (no search loop: each slot compared would be a path of its own for the
 * verifier). */
#define PW_PAGES_NONE (PW_PAGES * PW_PAGE_SIZE)
static __always_inline __u64 pw_pages_find(struct pw_pages *c, __u32 len, __u64 addr)
{
	__u64 off = addr & (PW_PAGE_SIZE - 1), page = addr - off, at;
	__u32 k = (__u32)((page / PW_PAGE_SIZE) % PW_PAGES);

	if (!page || off + len > PW_PAGE_SIZE)
		return PW_PAGES_NONE;
	/* the bound checked on the register that indexes (clang would check a copy) */
	__asm__ __volatile__("" : "+r"(k));
	if (k >= PW_PAGES || c->addr[k] == (page | 1))
		return PW_PAGES_NONE;
	if (PW_PAGES_LAZY && c->addr[k] != page && c->addr[k] != (page | 2)) {
		c->addr[k] = page | 2;
		return PW_PAGES_NONE;
	}
	if (c->addr[k] != page) {
		/* an unreadable page (not present, a guard page) is marked (bit 0) and read
		 * directly from then on */
		c->addr[k] = page | 1;
		if (pw_pages_raw(c, c->data[k], PW_PAGE_SIZE, page))
			return PW_PAGES_NONE;
		c->addr[k] = page;
	}
	at = (__u64)k * PW_PAGE_SIZE + off;
	return at;
}

static __always_inline int pw_pages_read(struct pw_pages *c, void *dst, __u32 len, __u64 addr)
{
	__u64 at = pw_pages_find(c, len, addr);

	__asm__ __volatile__("" : "+r"(at));
	if (at >= PW_PAGES_NONE)
		return pw_pages_raw(c, dst, len, addr);
	return PW_PAGES_COPY(dst, len, (__u8 *)c->data + at);
}

/* pywalk.h's pw_view: a pointer into the cached page (the slack past the last page keeps
 * a masked load inside), or c->buf (PW_PAGES_VIEW_MAX bytes at most) filled by a direct
 * read; the caller's buf is not used. */
#define PW_VIEW
static __always_inline const __u8 *pw_pages_view(struct pw_pages *c, __u8 *buf, __u32 len,
						 __u64 addr)
{
	__u64 at = pw_pages_find(c, len, addr);

	__asm__ __volatile__("" : "+r"(at));
	if (at < PW_PAGES_NONE)
		return (__u8 *)c->data + at;
	/* bounded again in the register the read takes: 6.1's verifier loses the bound of
	 * a copy clang keeps on the stack */
	(void)buf;
	PW_PAGES_CLAMP(len, PW_PAGES_VIEW_MAX - 1);
	return pw_pages_raw(c, c->buf, len, addr) ? NULL : c->buf;
}

#endif

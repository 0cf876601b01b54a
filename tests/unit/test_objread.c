// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* objread's pages kept for one snapshot, on this process: a value read through them is
 * the one in memory when its page was first read, the same as a direct read; a read
 * across a page boundary, and a read of a page that cannot be read, go to memory
 * directly; pages that share a slot replace each other. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpython/objread.h"
#include "tests/unit/unit.h"

int main(void)
{
	struct obj_pages *pages = calloc(1, sizeof(*pages));
	struct objread r = { .pid = getpid(), .pages = pages };
	size_t span = (OBJ_PAGES + 2) * OBJ_PAGE;
	uint64_t v = 0, base;
	uint8_t *m;
	int bad = 0;

	m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!pages || m == MAP_FAILED) {
		SKIP("out of memory");
		return unit_exit();
	}
	base = (uintptr_t)m;
	for (size_t i = 0; i < span / 8; i++)
		((uint64_t *)m)[i] = i;
	/* every word of every page, read through the pages: each page read once */
	for (size_t i = 0; i < span / 8; i++)
		if (obj_ptr(&r, base + i * 8, &v) || v != i)
			bad++;
	CHECK(!bad, "%d words read wrong", bad);
	CHECK(pages->misses == OBJ_PAGES + 2, "%llu pages read for %d",
	      (unsigned long long)pages->misses, OBJ_PAGES + 2);

	/* kept: a change after its page was read is not seen until the page is replaced */
	memset(pages, 0, sizeof(*pages));
	CHECK(!obj_ptr(&r, base + 16, &v) && v == 2, "first read: %llu", (unsigned long long)v);
	((uint64_t *)m)[2] = 77;
	CHECK(!obj_ptr(&r, base + 16, &v) && v == 2, "a kept page: %llu", (unsigned long long)v);
	/* the page OBJ_PAGES pages on has the same slot: it replaces the first */
	CHECK(!obj_ptr(&r, base + OBJ_PAGES * OBJ_PAGE, &v) && v == OBJ_PAGES * OBJ_PAGE / 8,
	      "the page in the same slot: %llu", (unsigned long long)v);
	CHECK(!obj_ptr(&r, base + 16, &v) && v == 77, "after replacement: %llu",
	      (unsigned long long)v);

	/* across a page boundary: read directly, whole */
	memset(pages, 0, sizeof(*pages));
	memcpy(m + OBJ_PAGE - 4, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
	CHECK(!obj_ptr(&r, base + OBJ_PAGE - 4, &v) && v == 0x8877665544332211ULL,
	      "across a boundary: %llx", (unsigned long long)v);
	CHECK(pages->misses == 0, "a read across a boundary filled a page");

	/* an unreadable page: the read fails, and so does the next, without the page */
	munmap(m + OBJ_PAGE, OBJ_PAGE);
	CHECK(obj_ptr(&r, base + OBJ_PAGE + 8, &v) < 0, "a read of an unmapped page succeeded");
	CHECK(obj_ptr(&r, base + OBJ_PAGE + 16, &v) < 0, "a second read of it succeeded");
	CHECK(pages->misses == 1, "an unreadable page was tried %llu times",
	      (unsigned long long)pages->misses);

	/* without pages: the same values, read directly */
	r.pages = NULL;
	CHECK(!obj_ptr(&r, base + 24, &v) && v == 3, "a direct read: %llu", (unsigned long long)v);
	munmap(m, span);
	free(pages);
	return unit_exit();
}

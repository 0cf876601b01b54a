// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bpf/pwpages.h, the page cache of a walk, over a fake memory of numbered pages: every
 * read returns the memory's bytes of that moment's walk (a page changed between walks is
 * seen changed: nothing is kept from one walk to the next), reads across a page boundary
 * and of unreadable pages go to memory, a slot shared by two pages serves both, and the
 * lazy policy reads a page whole only at its second read. Each case runs with the lazy
 * policy off (the vmreadv reader's) and on (the BPF sampler's). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/asyncbpf.h"
#include "tests/unit/unit.h"

#define NPAGES 16
#define PAGE   4096

static uint8_t *mem;	       /* NPAGES pages, page aligned */
static int unreadable[NPAGES]; /* pages a read fails on */
static int raw_reads;
static int lazy;

static uint64_t base(void)
{
	return (uint64_t)(uintptr_t)mem;
}

static int fake_read(void *dst, uint32_t len, uint64_t addr)
{
	raw_reads++;
	if (addr < base() || addr + len > base() + NPAGES * PAGE)
		return -1;
	for (uint64_t p = (addr - base()) / PAGE; p <= (addr + len - 1 - base()) / PAGE; p++)
		if (unreadable[p])
			return -1;
	memcpy(dst, (void *)(uintptr_t)addr, len);
	return 0;
}

#define PW_PAGES_LAZY		     lazy
#define PW_PAGES_RAW(dst, len, addr) fake_read(dst, len, addr)
#define PW_PAGES_COPY(dst, len, src) (memcpy(dst, src, len), 0)
#include "bpf/pwpages.h"

static struct pw_pages cache;

/* a read through the cache agrees with the memory, byte for byte */
static int agrees(uint64_t addr, uint32_t len)
{
	uint8_t got[256];

	if (pw_pages_read(&cache, got, len, addr))
		return 0;
	return !memcmp(got, (void *)(uintptr_t)addr, len);
}

static void fill(int seed)
{
	for (size_t i = 0; i < NPAGES * PAGE; i++)
		mem[i] = (uint8_t)(i * 131 + (size_t)seed * 7 + i / PAGE);
}

static void test_reads_and_policy(void)
{
	uint64_t a = base() + 2 * PAGE + 100;
	int before;

	fill(1);
	pw_pages_reset(&cache);
	raw_reads = 0;
	CHECK(agrees(a, 64), "lazy %d: first read", lazy);
	CHECK(cache.bytes == (lazy ? 64u : PAGE), "lazy %d: first read fetched %u bytes", lazy,
	      cache.bytes);
	CHECK(agrees(a + 200, 8), "lazy %d: second read", lazy);
	before = raw_reads;
	CHECK(agrees(a + 1000, 128), "lazy %d: third read", lazy);
	CHECK(agrees(base() + 3 * PAGE - 8, 8), "lazy %d: last bytes of the page", lazy);
	CHECK(raw_reads == before, "lazy %d: a cached page was read again (%d reads)", lazy,
	      raw_reads - before);
	CHECK(cache.reads == (lazy ? 2u : 1u), "lazy %d: %u reads of memory", lazy, cache.reads);

	/* the memory changes: within the walk the cached page still answers (a walk is of
	 * one moment); the next walk sees the change */
	mem[a - base()] ^= 0xff;
	{
		uint8_t b, was = (uint8_t)(mem[a - base()] ^ 0xffu);

		CHECK(!pw_pages_read(&cache, &b, 1, a) && b == was,
		      "lazy %d: the page of this walk", lazy);
	}
	pw_pages_reset(&cache);
	CHECK(agrees(a, 1), "lazy %d: the next walk sees the change", lazy);
	CHECK(agrees(a, 1), "lazy %d: ... from the page too", lazy);
}

static void test_boundaries(void)
{
	uint64_t edge = base() + 5 * PAGE;
	uint8_t buf[2 * 128];
	const uint8_t *v;

	fill(2);
	pw_pages_reset(&cache);
	CHECK(agrees(edge - 4, 8), "lazy %d: a read across a page boundary", lazy);
	CHECK(agrees(edge - 4, 8), "lazy %d: the same, again", lazy);
	CHECK(agrees(edge - 64, 64), "lazy %d: a read that ends at the boundary", lazy);
	CHECK(agrees(edge, 64), "lazy %d: a read that starts at it", lazy);
	for (int i = 0; i < 3; i++) {
		v = pw_pages_view(&cache, buf, 100, edge - 50);
		CHECK(v && !memcmp(v, (void *)(uintptr_t)(edge - 50), 100),
		      "lazy %d: a view across the boundary (%d)", lazy, i);
		v = pw_pages_view(&cache, buf, 100, edge + 500);
		CHECK(v && !memcmp(v, (void *)(uintptr_t)(edge + 500), 100),
		      "lazy %d: a view inside a page (%d)", lazy, i);
	}
}

static void test_unreadable(void)
{
	uint64_t bad = base() + 7 * PAGE + 16;
	uint8_t b[16];

	fill(3);
	pw_pages_reset(&cache);
	unreadable[7] = 1;
	for (int i = 0; i < 3; i++) {
		CHECK(pw_pages_read(&cache, b, 16, bad) != 0, "lazy %d: unreadable page (%d)", lazy,
		      i);
		CHECK(!pw_pages_view(&cache, b, 16, bad), "lazy %d: view of it (%d)", lazy, i);
	}
	CHECK(agrees(bad - 32, 16), "lazy %d: the page before it", lazy);
	/* readable again in the next walk */
	unreadable[7] = 0;
	pw_pages_reset(&cache);
	CHECK(agrees(bad, 16), "lazy %d: readable in the next walk", lazy);
	CHECK(agrees(bad, 16), "lazy %d: ... twice", lazy);
	CHECK(pw_pages_read(&cache, b, 8, 8) != 0, "lazy %d: an address in page 0 is not read",
	      lazy);
}

/* pages PW_PAGES apart share a slot */
static void test_shared_slot(void)
{
	uint64_t p1 = base() + 1 * PAGE, p2 = base() + (1 + PW_PAGES) * PAGE;

	fill(4);
	pw_pages_reset(&cache);
	for (int i = 0; i < 6; i++) {
		CHECK(agrees(p1 + 8 * (uint64_t)i, 8), "lazy %d: page 1, read %d", lazy, i);
		CHECK(agrees(p2 + 8 * (uint64_t)i, 8), "lazy %d: page %d, read %d", lazy,
		      1 + PW_PAGES, i);
	}
}

/* random reads against the memory, changed between walks */
static void test_random(void)
{
	uint32_t bad = 0;

	srand(7);
	for (int walk = 0; walk < 2000; walk++) {
		fill(walk);
		pw_pages_reset(&cache);
		for (int i = 0; i < 40; i++) {
			uint32_t len = 1 + (uint32_t)rand() % 128;
			uint64_t addr = base() + (uint64_t)rand() % (NPAGES * PAGE - len);

			bad += !agrees(addr, len);
		}
	}
	CHECK(bad == 0, "lazy %d: %u of 80000 random reads differ from memory", lazy, bad);
}

int main(void)
{
	mem = aligned_alloc(PAGE, NPAGES * PAGE);
	if (!mem)
		return 1;
	for (lazy = 0; lazy <= 1; lazy++) {
		test_reads_and_policy();
		test_boundaries();
		test_unreadable();
		test_shared_slot();
		test_random();
	}
	free(mem);
	return unit_exit();
}

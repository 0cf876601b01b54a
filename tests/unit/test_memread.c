// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* mem_read and mem_read_many on this process: pieces read whole, and the ones that
 * cannot be (no mapping, a low address, a page boundary into nothing) flagged, without
 * stopping the rest of the batch. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "process/memread.h"
#include "tests/unit/unit.h"

#define EACH 16
#define N    600 /* more than one batch */

int main(void)
{
	long page = sysconf(_SC_PAGESIZE);
	static char src[N][EACH];
	static uint8_t buf[N * EACH], ok[N];
	static uint64_t addrs[N];
	uint8_t *two, want;
	int bad = 0;

	two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (two == MAP_FAILED) {
		SKIP("mmap failed");
		return unit_exit();
	}
	memset(two, 0x5a, page);
	munmap(two + page, page);
	for (int i = 0; i < N; i++) {
		memset(src[i], i & 0xff, EACH);
		addrs[i] = (uintptr_t)src[i];
	}
	addrs[3] = 8;					 /* a low address */
	addrs[300] = (uintptr_t)(two + page);		 /* unmapped */
	addrs[301] = (uintptr_t)(two + page - EACH / 2); /* runs into the unmapped page */
	addrs[599] = (uintptr_t)two;			 /* mapped, another mapping */
	CHECK(mem_read_many(getpid(), addrs, N, EACH, buf, ok) == 0, "mem_read_many failed");
	for (int i = 0; i < N; i++) {
		int expect = i != 3 && i != 300 && i != 301;

		want = i == 599 ? 0x5a : (uint8_t)(i & 0xff);
		if (ok[i] != expect ||
		    (expect && (buf[i * EACH] != want || buf[i * EACH + EACH - 1] != want)))
			bad++;
	}
	CHECK(!bad, "%d of %d pieces flagged or read wrong", bad, N);
	CHECK(mem_read(getpid(), (uintptr_t)(two + page - 4), buf, 8) < 0,
	      "a read across into an unmapped page succeeded");
	CHECK(mem_read(getpid(), (uintptr_t)two, buf, 8) == 0 && buf[7] == 0x5a,
	      "a plain read failed");
	munmap(two, page);
	return unit_exit();
}

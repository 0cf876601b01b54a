// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The native chain of the --native tests, loaded with ctypes (no Python headers needed, so
 * every interpreter of the suite runs it): c_outer -> c_mid -> c_leaf, which spins, and
 * cb_outer -> cb_mid -> a Python callback (that calls c_outer again), c_anon_outer ->
 * c_anon_mid -> code in anonymous memory. Built without frame
 * pointers and without sibling calls, so that each function keeps a frame of its own. */
#include <stdint.h>

volatile uint64_t chain_sink;

__attribute__((noinline)) void c_leaf(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		chain_sink += i * 2654435761u;
}

__attribute__((noinline)) void c_mid(uint64_t n)
{
	c_leaf(n);
	chain_sink++;
}

__attribute__((noinline)) void c_outer(uint64_t n)
{
	c_mid(n);
	chain_sink++;
}

__attribute__((noinline)) void cb_mid(void (*cb)(void))
{
	cb();
	chain_sink++;
}

__attribute__((noinline)) void cb_outer(void (*cb)(void))
{
	cb_mid(cb);
	chain_sink++;
}

#include <string.h>
#include <sys/mman.h>

/* mov rcx, n; 1: dec rcx; jnz 1b; ret: a spin in anonymous executable memory that, like a
 * libffi closure's trampoline, never touches the stack; unwinding it needs no table */
static const uint8_t anon_spin[] = { 0x48, 0xb9, 0,    0, 0, 0, 0, 0, 0, 0, /* mov rcx, imm64 */
				     0x48, 0xff, 0xc9,			    /* dec rcx */
				     0x75, 0xfb,			    /* jnz -5 */
				     0xc3 };				    /* ret */
static void (*anon_code)(void);

__attribute__((noinline)) void c_anon_mid(uint64_t n)
{
	anon_code();
	chain_sink += n;
}

/* c_anon_outer -> c_anon_mid -> anonymous code spinning 2^27 times; -1 if no executable
 * page can be mapped */
__attribute__((noinline)) int c_anon_outer(uint64_t n)
{
	if (!anon_code) {
		uint8_t *page = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t spins = 1ull << 27;

		if (page == MAP_FAILED)
			return -1;
		memcpy(page, anon_spin, sizeof(anon_spin));
		memcpy(page + 2, &spins, 8);
		anon_code = (void (*)(void))page;
	}
	c_anon_mid(n);
	chain_sink++;
	return 0;
}

#include <pthread.h>

static void *spin(void *arg)
{
	(void)arg;
	for (;;)
		c_outer(20000000);
	return 0;
}

/* A thread Python does not know (no thread state), spinning in the chain. */
int start_native_thread(void)
{
	pthread_t t;

	return pthread_create(&t, 0, spin, 0);
}

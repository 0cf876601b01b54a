// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The native chain of the --native tests, loaded with ctypes (no Python headers needed, so
 * every interpreter of the suite runs it): c_outer -> c_mid -> c_leaf, which spins, and
 * cb_outer -> cb_mid -> a Python callback (that calls c_outer again). Built without frame
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

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Looks like a CPython 3.14 to a profiler (exports _PyRuntime and Py_Version from
 * .dynsym when linked with -rdynamic) and sleeps. */
#include <unistd.h>

char _PyRuntime[4096] __attribute__((used));
const unsigned long Py_Version = 0x030E00F0;

int main(void)
{
	for (;;)
		pause();
}

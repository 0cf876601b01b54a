/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Looks like a CPython to a profiler (exports _PyRuntime and Py_Version from .dynsym when
 * linked with -rdynamic) and sleeps. The version is FAKE_PY_VERSION (default 3.14.0, whose
 * _PyRuntime lacks the _Py_DebugOffsets a real 3.14 starts with). */
#include <unistd.h>

#ifndef FAKE_PY_VERSION
#define FAKE_PY_VERSION 0x030E00F0
#endif

char _PyRuntime[4096] __attribute__((used));
const unsigned long Py_Version = FAKE_PY_VERSION;

int main(void)
{
	for (;;)
		pause();
}

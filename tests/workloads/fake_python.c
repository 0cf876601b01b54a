/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Looks like a CPython to a profiler (exports _PyRuntime and Py_Version from .dynsym when
 * linked with -rdynamic) and sleeps. The version is FAKE_PY_VERSION (default 3.14.0).
 * Without FAKE_DEBUG_OFFSETS its _PyRuntime lacks the _Py_DebugOffsets a real 3.13+ starts
 * with; with it, _PyRuntime starts with their head (cookie, version, free_threaded =
 * FAKE_FREE_THREADED) and nothing after it. */
#include <stdint.h>
#include <unistd.h>

#ifndef FAKE_PY_VERSION
#define FAKE_PY_VERSION 0x030E00F0
#endif
#ifndef FAKE_FREE_THREADED
#define FAKE_FREE_THREADED 0
#endif

#ifdef FAKE_DEBUG_OFFSETS
struct head {
	char cookie[8];
	uint64_t version, free_threaded;
};

__attribute__((used)) struct head _PyRuntime[256] = {
	{ "xdebugpy", FAKE_PY_VERSION, FAKE_FREE_THREADED },
};
#else
char _PyRuntime[4096] __attribute__((used));
#endif
const unsigned long Py_Version = FAKE_PY_VERSION;

int main(void)
{
	for (;;)
		pause();
}

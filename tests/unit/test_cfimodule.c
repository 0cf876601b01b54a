// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* cfi_module on this process's own modules: this file's code is in a module, and an
 * address of the stack, above every module, is in none (dwfl_addrmodule alone gives
 * the highest module, ld.so, for it). */
#include <elfutils/libdwfl.h>
#include <stdint.h>
#include <unistd.h>

#include "native/cfirules.h"
#include "tests/unit/unit.h"

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

int main(void)
{
	Dwfl *d = dwfl_begin(&callbacks);
	volatile int on_stack = 0;

	if (!d) {
		SKIP("dwfl_begin: %s", dwfl_errmsg(-1));
		return unit_exit();
	}
	dwfl_report_begin(d);
	if (dwfl_linux_proc_report(d, getpid()) || dwfl_report_end(d, NULL, NULL)) {
		SKIP("cannot report this process's modules: %s", dwfl_errmsg(-1));
		dwfl_end(d);
		return unit_exit();
	}
	CHECK(cfi_module(d, (uint64_t)(uintptr_t)main) != NULL, "main is in no module");
	CHECK(cfi_module(d, (uint64_t)(uintptr_t)&on_stack) == NULL,
	      "a stack address is in a module");
	CHECK(cfi_module(d, 0x7ffffffff000ULL) == NULL, "the top of user memory is in a module");
	CHECK(cfi_module(d, 4096) == NULL, "page 1 is in a module");
	dwfl_end(d);
	return unit_exit();
}

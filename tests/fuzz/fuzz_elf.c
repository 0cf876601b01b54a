// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer target: ELF symbol, section and version-string lookup on any file. elfread
 * reads files, so each input goes through a memfd. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "process/elfread.h"

static void lookups(struct elf_file *e, const char *sym)
{
	uint64_t value, size, off, v;
	struct elf_segment seg;
	unsigned char buf[64];

	if (elf_symbol(e, sym, ELF_DYNSYM | ELF_SYMTAB, &value, &size))
		return;
	elf_segment_of(e, value, &seg);
	elf_vaddr_to_offset(e, value, &off);
	for (size_t w = 1; w <= 8; w *= 2)
		elf_read_uint(e, value, w, &v);
	elf_read_vaddr(e, value, buf, size < sizeof(buf) ? size : sizeof(buf));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct elf_file *e;
	char path[64], ver[32];
	uint64_t addr, len;

	if (fd < 0 && (fd = memfd_create("fuzz_elf", MFD_CLOEXEC)) < 0)
		abort();
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (elf_open(path, &e))
		return 0;
	elf_type(e);
	lookups(e, "_PyRuntime");
	lookups(e, "Py_Version");
	elf_section(e, ".PyRuntime", &addr, &len);
	elf_py_version_string(e, -1, -1, ver, sizeof(ver));
	elf_py_version_string(e, 3, 11, ver, sizeof(ver));
	elf_py_version_string(e, -1, -1, ver, 4);
	elf_close(e);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Just enough ELF reading (libelf) to find a CPython runtime in a file that may be
 * hostile: every lookup is bounds-checked and fails with -errno instead of crashing. */
#ifndef ASYNCBPF_ELFREAD_H
#define ASYNCBPF_ELFREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_file;

struct elf_segment {
	uint64_t vaddr, offset, filesz, memsz;
	uint32_t flags; /* PF_R | PF_W | PF_X */
};

#define ELF_DYNSYM (1u << 0)
#define ELF_SYMTAB (1u << 1)

/* Opens path read-only. 0 or -errno (-ENOEXEC: not a usable ELF file). */
int elf_open(const char *path, struct elf_file **out);
void elf_close(struct elf_file *e);

/* ET_EXEC, ET_DYN, ... */
int elf_type(const struct elf_file *e);

/* Value and size of the defined symbol name, searched in .dynsym then .symtab as
 * selected by which. 0, -ENOENT, or another -errno on a malformed file. */
int elf_symbol(struct elf_file *e, const char *name, unsigned int which, uint64_t *value,
	       uint64_t *size);

/* Address and size of the section name. 0, -ENOENT or -errno. */
int elf_section(struct elf_file *e, const char *name, uint64_t *addr, uint64_t *size);

/* Whether e's dynamic section names a needed library whose name starts with prefix. */
bool elf_needs(struct elf_file *e, const char *prefix);

/* The PT_LOAD segment whose [vaddr, vaddr + memsz) holds vaddr. 0 or -ENOENT. */
int elf_segment_of(struct elf_file *e, uint64_t vaddr, struct elf_segment *seg);

/* File offset of vaddr when it is file-backed (not .bss). 0 or -ENOENT. */
int elf_vaddr_to_offset(struct elf_file *e, uint64_t vaddr, uint64_t *off);

/* Reads len file-backed bytes at vaddr. 0 or -errno. */
int elf_read_vaddr(struct elf_file *e, uint64_t vaddr, void *buf, size_t len);

/* Reads an unsigned integer of size bytes (1, 2, 4 or 8) at vaddr in the file's byte
 * order. 0 or -errno. */
int elf_read_uint(struct elf_file *e, uint64_t vaddr, size_t size, uint64_t *val);

/* CPython's PY_VERSION ("3.10.13", "3.8.18+", "3.13.0rc2") as it sits in the read-only
 * data, possibly as the tail of a longer string the linker merged it into. major/minor
 * restrict the match (-1: any). 0 when exactly one distinct version matches, -ENOENT for
 * none, -ENOTUNIQ when several do. */
int elf_py_version_string(struct elf_file *e, int major, int minor, char *buf, size_t len);

/* PY_VERSION string -> PY_VERSION_HEX. 0 or -EINVAL. */
int py_version_parse(const char *s, uint32_t *hex);

#endif

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Writes the seed inputs of fuzz_symbolize into the directory argv[1]: per version, a
 * memory image holding a well-formed code object at its start (see fuzz_symbolize.c for
 * the input format). Build: make gen-fuzz-seeds. */
#include <stdio.h>
#include <string.h>

#include "cpython/py_layouts.h"

#define MEM_BASE 0x10000ULL
#define HDR	 9
#define IMG	 1024

static void put64(unsigned char *img, size_t off, uint64_t v)
{
	memcpy(img + off, &v, 8);
}

static void put_str(unsigned char *img, size_t off, const struct py_layout *l, int kind,
		    const void *chars, int64_t len)
{
	uint32_t state = 1u << l->unicode_compact_bit | (uint32_t)kind << l->unicode_kind_shift;

	if (kind == 1)
		state |= 1u << l->unicode_ascii_bit;
	memcpy(img + off + l->unicode_state, &state, 4);
	memcpy(img + off + l->unicode_length, &len, 8);
	memcpy(img + off + (kind == 1 ? l->unicode_ascii_size : l->unicode_compact_size), chars,
	       (size_t)len * kind);
}

int main(int argc, char **argv)
{
	static const uint16_t name[] = { 'f', 0xe9, 'e' };
	static const unsigned char table[] = { 2, 1, 4, 1, 0x80 | 13 << 3, 2, 0x80 | 10 << 3 };
	char why[128], path[4096];

	if (argc != 2)
		return 1;
	for (int minor = 8; minor <= 13; minor++) {
		const struct py_layout *l = py_layout_find(PYV(3, minor) | 0xf0, why, sizeof(why));
		unsigned char buf[HDR + IMG] = { (unsigned char)(minor - 8) }, *img = buf + HDR;
		int32_t first = 10;
		int64_t n = sizeof(table);
		FILE *f;

		if (!l)
			return 1;
		put64(img, 0, 1); /* ob_refcnt: a live object */
		memcpy(img + l->code_firstlineno, &first, 4);
		put64(img, l->code_filename, MEM_BASE + 512);
		put64(img, l->code_name, MEM_BASE + 640);
		if (l->code_qualname)
			put64(img, l->code_qualname, MEM_BASE + 640);
		put64(img, l->code_linetable, MEM_BASE + 768);
		put_str(img, 512, l, 1, "app/file.py", 11);
		put_str(img, 640, l, 2, name, 3);
		memcpy(img + 768 + l->bytes_size, &n, 8);
		memcpy(img + 768 + l->bytes_sval, table, sizeof(table));
		snprintf(path, sizeof(path), "%s/code-3.%d", argv[1], minor);
		f = fopen(path, "wb");
		if (!f || fwrite(buf, sizeof(buf), 1, f) != 1 || fclose(f))
			return 1;
	}
	return 0;
}

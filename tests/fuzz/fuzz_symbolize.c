// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer target: reading code objects, str and bytes objects and walking frames and
 * coroutines in a hostile address space. mem_read (user/process/memread.c) is replaced by a
 * reader over the input, so every pointer the library follows lands in fuzzed bytes.
 *
 * Input: byte 0 picks the version (3.8-3.13), bytes 1-8 the generator type address the
 * coroutine walk matches, then the memory image, mapped at MEM_BASE and repeated up to
 * the top of the user address space so that any pointer reads something. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "process/memread.h"
#include "cpython/py_layouts.h"
#include "cpython/py_objmodel.h"
#include "cpython/pystr.h"
#include "cpython/symbolize.h"
#include "cpython/vmwalk.h"

#define MEM_BASE 0x10000ULL
#define MEM_TOP	 (1ULL << 47)
#define HDR	 9

static const uint8_t *mem;
static size_t memlen;

int mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	uint64_t off;

	(void)pid;
	if (len == 0)
		return 0;
	if (addr < MEM_BASE || addr >= MEM_TOP || !memlen)
		return -EFAULT;
	off = (addr - MEM_BASE) % memlen;
	if (len > memlen - off)
		return -EFAULT;
	memcpy(buf, mem + off, len);
	return 0;
}

/* What the symbolizer hands out must be printable as-is: valid UTF-8, no NUL inside. */
static void check_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		int n = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : 3;

		if (*p >= 0xf8 || (*p >= 0x80 && *p < 0xc0))
			abort();
		for (p++; n > 0; n--, p++)
			if ((*p & 0xc0) != 0x80)
				abort();
	}
}

static void symbolize(struct py_target *t, uint64_t code)
{
	struct symtab *st = symtab_new();
	struct pw_scratch s;
	const struct py_code *c;
	uint32_t fp;

	if (!st)
		abort();
	fp = pw_code_fp(NULL, &t->proc, code, &s);
	c = symtab_code(st, t, code, fp);
	if (c->valid) {
		if (!c->qualname || !c->filename)
			abort();
		check_utf8(c->qualname);
		check_utf8(c->filename);
		for (int32_t instr = -1; instr < 64; instr += 7)
			py_code_line(c, t->version, instr);
	}
	if (symtab_code(st, t, code, fp) != c)
		abort(); /* cached */
	symtab_forget(st, t->pid);
	if (symtab_size(st))
		abort();
	symtab_free(st);
}

static void walk(struct py_target *t)
{
	static struct frame_rec out[PW_FRAMES_CAP];
	struct pw_scratch s;
	uint32_t flags = 0, n;
	__u64 awaited;

	n = pw_walk_frames(NULL, &t->proc, MEM_BASE, 0, out, &s, &flags);
	if (n > MAX_FRAMES)
		abort();
	n = pw_walk_coro(NULL, &t->proc, MEM_BASE + 8, out, n, PW_FRAMES_CAP, &s, &awaited, &flags);
	if (n > PW_FRAMES_CAP)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct py_objmodel *om;
	const struct py_layout *l;
	struct py_target t = { .pid = 1 };
	char why[128], *str;
	uint8_t *bytes;
	size_t blen;

	if (size < HDR + 1)
		return 0;
	t.version = PYV(3, 8 + data[0] % 6) | 0xf0;
	l = py_layout_find(t.version, why, sizeof(why));
	om = py_objmodel_find(t.version);
	if (!l || !om)
		abort();
	t.proc.layout = *l;
	t.proc.async = om->async;
	memcpy(&t.proc.coro_type, data + 1, 8);
	t.proc.gen_type = t.proc.coro_type;
	mem = data + HDR;
	memlen = size - HDR;
	vmwalk_target(t.pid);

	symbolize(&t, MEM_BASE);
	if (!py_str_read(t.pid, l, MEM_BASE, &str)) {
		check_utf8(str);
		free(str);
	}
	if (!py_bytes_read(t.pid, l, MEM_BASE, 4096, &bytes, &blen)) {
		if (blen > 4096 || bytes[blen])
			abort();
		free(bytes);
	}
	walk(&t);
	return 0;
}

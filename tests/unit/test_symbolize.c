/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Symbolization against live interpreters: py/symbolize_target.py prints, for code
 * objects with names and file names in every str representation, what CPython says
 * (addresses, names, line table, the line of every instruction) and sleeps; the
 * symbolizer must find the same by reading the process. Also str/bytes decoding of
 * hand-built objects in this process, and the cache's hashing, eviction and read-once. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/memread.h"
#include "cpython/py_layouts.h"
#include "cpython/pystr.h"
#include "cpython/symbolize.h"
#include "tests/unit/pydir.h"
#include "tests/unit/unit.h"

#include "cpython/vmwalk.h"

#define MAX_CODES 128
#define MAX_LINES 4096

struct code_truth {
	uint64_t addr;
	int firstlineno;
	uint64_t filename, name;
	char *qualname_hex, *filename_hex, *table_hex;
	int nlines;
	int32_t off[MAX_LINES];
	int line[MAX_LINES];
};

static char *to_hex(const uint8_t *b, size_t n)
{
	char *s = malloc(2 * n + 2);
	size_t i;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++)
		sprintf(s + 2 * i, "%02x", b[i]);
	if (!n)
		strcpy(s, "-");
	return s;
}

static int hex_eq(const char *hex, const void *b, size_t n)
{
	char *h = to_hex(b, n);
	int eq = h && !strcmp(h, hex);

	free(h);
	return eq;
}

/* ---- str and bytes objects built in this process, read with mem_read(getpid()) ---- */

struct fake {
	void *map;
	size_t maplen;
	uint8_t *obj;
};

/* An object of size bytes that ends where an inaccessible page begins. */
static int fake_new(struct fake *f, size_t size)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), data = (size + pg - 1) / pg * pg;

	f->maplen = data + pg;
	f->map = mmap(NULL, f->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f->map == MAP_FAILED || mprotect((uint8_t *)f->map + data, pg, PROT_NONE))
		return -1;
	f->obj = (uint8_t *)f->map + data - size;
	memset(f->obj, 0, size);
	return 0;
}

/* A str object: kind 1, 2 or 4; chars as code points; flags as in the layout. */
static int fake_str(struct fake *f, const struct py_layout *l, int kind, int compact, int ascii,
		    int64_t len, const uint32_t *chars, size_t nchars)
{
	size_t head = ascii ? l->unicode_ascii_size : l->unicode_compact_size, i;
	size_t w = kind == 1 ? 1 : kind == 2 ? 2 : 4; /* bogus kinds get 4-byte data */
	uint32_t state;

	if (fake_new(f, head + nchars * w))
		return -1;
	state = (uint32_t)kind << l->unicode_kind_shift |
		(uint32_t)compact << l->unicode_compact_bit |
		(uint32_t)ascii << l->unicode_ascii_bit;
	memcpy(f->obj + l->unicode_state, &state, 4);
	memcpy(f->obj + l->unicode_length, &len, 8);
	for (i = 0; i < nchars; i++) {
		uint16_t u = (uint16_t)chars[i];
		uint8_t b = (uint8_t)chars[i];

		if (w == 1)
			memcpy(f->obj + head + i, &b, 1);
		else if (w == 2)
			memcpy(f->obj + head + 2 * i, &u, 2);
		else
			memcpy(f->obj + head + 4 * i, &chars[i], 4);
	}
	return 0;
}

static void fake_free(struct fake *f)
{
	munmap(f->map, f->maplen);
}

static int read_str(const struct py_layout *l, const struct fake *f, char **out)
{
	return py_str_read(getpid(), l, (uint64_t)(uintptr_t)f->obj, out);
}

static void str_case(const struct py_layout *l, const char *what, int kind, int compact, int ascii,
		     int64_t len, const uint32_t *chars, size_t nchars, int want_err,
		     const char *want)
{
	struct fake f;
	char *s = NULL;
	int err;

	if (fake_str(&f, l, kind, compact, ascii, len, chars, nchars)) {
		CHECK(0, "mmap: %s", strerror(errno));
		return;
	}
	err = read_str(l, &f, &s);
	if (want_err)
		CHECK(err == want_err && !s, "%x %s: got %d, want %d", l->py_version, what, err,
		      want_err);
	else
		CHECK(!err && s && !strcmp(s, want), "%x %s: got %d \"%s\", want \"%s\"",
		      l->py_version, what, err, s ? s : "(null)", want);
	free(s);
	fake_free(&f);
}

static void test_pystr(const struct py_layout *l)
{
	static const uint32_t hello[] = { 'h', 'e', 'l', 'l', 'o' };
	static const uint32_t cafe[] = { 'c', 'a', 'f', 0xe9 };
	static const uint32_t ucs2[] = { 0x43f, 'a', 0xd800, 0xdfff, 0xffff };
	static const uint32_t ucs4[] = { 0x1f600, 0x110000, 0xdc80, 'z', 0x10ffff };
	static const uint32_t high_ascii[] = { 'a', 0xc3, 0xa9 };
	static const uint32_t nul[] = { 'a', 0, 'b' };
	uint32_t *many = malloc(5000 * sizeof(*many));
	char *want = malloc(5000);
	struct fake f;
	uint8_t *b;
	size_t n;
	int64_t sz;
	int i, err;

	str_case(l, "ascii", 1, 1, 1, 5, hello, 5, 0, "hello");
	str_case(l, "empty", 1, 1, 1, 0, hello, 0, 0, "");
	str_case(l, "latin-1", 1, 1, 0, 4, cafe, 4, 0, "caf\xc3\xa9");
	str_case(l, "ucs2 with surrogates", 2, 1, 0, 5, ucs2, 5, 0,
		 "\xd0\xbf"
		 "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbf");
	str_case(l, "ucs4 out of range", 4, 1, 0, 5, ucs4, 5, 0,
		 "\xf0\x9f\x98\x80\xef\xbf\xbd\xef\xbf\xbdz\xf4\x8f\xbf\xbf");
	str_case(l, "ascii flag, high bytes", 1, 1, 1, 3, high_ascii, 3, 0,
		 "a\xef\xbf\xbd\xef\xbf\xbd");
	str_case(l, "NUL", 1, 1, 1, 3, nul, 3, 0,
		 "a\xef\xbf\xbd"
		 "b");
	str_case(l, "not compact (legacy)", 1, 0, 0, 5, hello, 5, -EINVAL, NULL);
	str_case(l, "kind 3", 3, 1, 0, 1, hello, 1, -EINVAL, NULL);
	str_case(l, "kind 0", 0, 1, 0, 1, hello, 1, -EINVAL, NULL);
	str_case(l, "ascii flag with kind 2", 2, 1, 1, 5, hello, 5, -EINVAL, NULL);
	str_case(l, "negative length", 1, 1, 1, -1, hello, 5, -EINVAL, NULL);
	str_case(l, "huge length", 1, 1, 1, PYSTR_MAX_LEN + 1, hello, 5, -EINVAL, NULL);
	/* Claims more characters than are mapped before the guard page. */
	str_case(l, "data past the mapping", 1, 1, 1, 500, hello, 5, -EFAULT, NULL);
	if (many && want) {
		for (i = 0; i < 5000; i++)
			many[i] = 'a' + i % 26;
		for (i = 0; i < PYSTR_MAX_CHARS; i++)
			want[i] = (char)many[i];
		strcpy(want + PYSTR_MAX_CHARS, PYSTR_CUT);
		str_case(l, "5000 characters", 1, 1, 1, 5000, many, 5000, 0, want);
		str_case(l, "exactly the maximum", 1, 1, 1, PYSTR_MAX_CHARS, many, PYSTR_MAX_CHARS,
			 0, (want[PYSTR_MAX_CHARS] = 0, want));
	}
	free(many);
	free(want);
	{
		char *s = (char *)1;

		CHECK(py_str_read(getpid(), l, 16, &s) == -EFAULT && !s, "unmapped str address");
	}

	if (fake_new(&f, l->bytes_sval + 6)) {
		CHECK(0, "mmap: %s", strerror(errno));
		return;
	}
	sz = 5;
	memcpy(f.obj + l->bytes_size, &sz, 8);
	memcpy(f.obj + l->bytes_sval, "ab\0cd", 6);
	err = py_bytes_read(getpid(), l, (uint64_t)(uintptr_t)f.obj, 16, &b, &n);
	CHECK(!err && n == 5 && !memcmp(b, "ab\0cd", 5), "%x bytes: got %d, %zu bytes",
	      l->py_version, err, n);
	free(b);
	err = py_bytes_read(getpid(), l, (uint64_t)(uintptr_t)f.obj, 4, &b, &n);
	CHECK(err == -E2BIG && !b && !n, "%x bytes over the limit: got %d", l->py_version, err);
	sz = -3;
	memcpy(f.obj + l->bytes_size, &sz, 8);
	err = py_bytes_read(getpid(), l, (uint64_t)(uintptr_t)f.obj, 16, &b, &n);
	CHECK(err == -EINVAL && !b, "%x bytes of negative size: got %d", l->py_version, err);
	sz = 0;
	memcpy(f.obj + l->bytes_size, &sz, 8);
	err = py_bytes_read(getpid(), l, (uint64_t)(uintptr_t)f.obj, 16, &b, &n);
	CHECK(!err && b && !n, "%x empty bytes: got %d", l->py_version, err);
	free(b);
	sz = 7; /* one byte more than mapped */
	memcpy(f.obj + l->bytes_size, &sz, 8);
	err = py_bytes_read(getpid(), l, (uint64_t)(uintptr_t)f.obj, 16, &b, &n);
	CHECK(err == -EFAULT && !b, "%x bytes past the mapping: got %d", l->py_version, err);
	fake_free(&f);
}

/* ---- the cache, with pids that cannot exist: every read fails, entries are invalid ---- */

static void test_cache(const struct py_layout *l)
{
	struct symtab *st = symtab_new();
	struct py_target a = { 0 }, b = { 0 };
	const struct py_code **pa, **pb;
	long pid_max = 4194304;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
	int i, n = 3000, same = 0, moved = 0, fresh = 0;

	if (f) {
		if (fscanf(f, "%ld", &pid_max) != 1)
			pid_max = 4194304;
		fclose(f);
	}
	pa = calloc(n, sizeof(*pa));
	pb = calloc(n, sizeof(*pb));
	if (!st || !pa || !pb) {
		CHECK(0, "out of memory");
		goto out;
	}
	a.pid = (pid_t)pid_max + 1;
	b.pid = (pid_t)pid_max + 2;
	a.version = b.version = l->py_version;
	a.proc.layout = b.proc.layout = *l;
	for (i = 0; i < n; i++) {
		/* Neighbouring addresses and fingerprints: collisions in the low bits. */
		pa[i] = symtab_code(st, &a, 0x7f0000001000ULL + 16 * (i / 3), 1 + i % 3);
		pb[i] = symtab_code(st, &b, 0x7f0000001000ULL + 16 * (i / 3), 1 + i % 3);
	}
	CHECK(symtab_size(st) == 2 * (size_t)n, "size %zu after %d distinct lookups",
	      symtab_size(st), 2 * n);
	for (i = 0; i < n; i++) {
		same += symtab_code(st, &a, 0x7f0000001000ULL + 16 * (i / 3), 1 + i % 3) == pa[i];
		same += pa[i] != pb[i] && !pa[i]->valid;
	}
	CHECK(same == 2 * n, "%d of %d repeated lookups found their entry", same, 2 * n);
	CHECK(symtab_code(st, &a, 0x1234, FP_INVALID)->valid == 0, "FP_INVALID is invalid");
	CHECK(symtab_size(st) == 2 * (size_t)n + 1, "size %zu", symtab_size(st));
	symtab_forget(st, a.pid);
	CHECK(symtab_size(st) == (size_t)n, "size %zu after forgetting %d entries of a pid",
	      symtab_size(st), n + 1);
	for (i = 0; i < n; i++)
		moved += symtab_code(st, &b, 0x7f0000001000ULL + 16 * (i / 3), 1 + i % 3) != pb[i];
	CHECK(moved == 0 && symtab_size(st) == (size_t)n,
	      "%d entries of the other pid lost after forget", moved);
	for (i = 0; i < n; i += 7) {
		symtab_code(st, &a, 0x7f0000001000ULL + 16 * (i / 3), 1 + i % 3);
		fresh++;
	}
	CHECK(symtab_size(st) == (size_t)(n + fresh), "forgotten entries come back as new ones");
	symtab_forget(st, b.pid);
	symtab_forget(st, a.pid);
	CHECK(symtab_size(st) == 0, "size %zu after forgetting everything", symtab_size(st));
out:
	free(pa);
	free(pb);
	symtab_free(st);
}

/* ---- live interpreters ---- */

struct target_run {
	pid_t pid;
	FILE *out;
};

static int start_target(const char *py, struct target_run *r)
{
	char script[PATH_MAX + 32];
	int fd[2];

	snprintf(script, sizeof(script), "%s/symbolize_target.py", pydir);
	if (pipe(fd))
		return -1;
	r->pid = fork();
	if (r->pid < 0)
		return -1;
	if (!r->pid) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execl(py, py, "-I", "-u", script, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	r->out = fdopen(fd[0], "r");
	return r->out ? 0 : -1;
}

static void stop_target(struct target_run *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
		r->pid = 0;
	}
	if (r->out)
		fclose(r->out);
	r->out = NULL;
}

static char *field(char **p)
{
	return strsep(p, " \n");
}

/* Reads the target's report up to READY. Returns the number of code objects, -1 on error. */
static int read_truth(FILE *in, uint32_t *version, uint64_t *code_type, struct code_truth *codes,
		      uint64_t frame[3])
{
	char *line = NULL, *p;
	size_t cap = 0;
	int n = 0, ready = 0;

	while (getline(&line, &cap, in) > 0) {
		p = line;
		if (!strncmp(line, "VERSION ", 8)) {
			field(&p);
			*version = (uint32_t)strtoul(field(&p), NULL, 10);
			*code_type = strtoull(field(&p), NULL, 10);
		} else if (!strncmp(line, "CODE ", 5) && n < MAX_CODES) {
			struct code_truth *c = &codes[n++];

			field(&p);
			c->addr = strtoull(field(&p), NULL, 10);
			c->firstlineno = atoi(field(&p));
			c->filename = strtoull(field(&p), NULL, 10);
			c->name = strtoull(field(&p), NULL, 10);
			c->qualname_hex = strdup(field(&p));
			c->filename_hex = strdup(field(&p));
			c->table_hex = strdup(field(&p));
			c->nlines = 0;
		} else if (line[0] == 'L' && n && codes[n - 1].nlines < MAX_LINES) {
			struct code_truth *c = &codes[n - 1];

			sscanf(line, "L %d %d", &c->off[c->nlines], &c->line[c->nlines]);
			c->nlines++;
		} else if (!strncmp(line, "FRAME ", 6)) {
			field(&p);
			frame[0] = strtoull(field(&p), NULL, 10);
			frame[1] = strtoull(field(&p), NULL, 10);
			frame[2] = strtoull(field(&p), NULL, 10);
		} else if (!strncmp(line, "READY", 5)) {
			ready = 1;
			break;
		}
	}
	free(line);
	return ready ? n : -1;
}

static void check_code(const char *py, const struct py_target *t, const struct code_truth *c,
		       const struct py_code *pc)
{
	int i, bad = 0;

	CHECK(pc->valid, "%s: code %#llx not symbolized", py, (unsigned long long)c->addr);
	if (!pc->valid)
		return;
	CHECK(hex_eq(c->qualname_hex, pc->qualname, strlen(pc->qualname)),
	      "%s: qualname \"%s\", want hex %s", py, pc->qualname, c->qualname_hex);
	CHECK(hex_eq(c->filename_hex, pc->filename, strlen(pc->filename)),
	      "%s: filename \"%.60s\", want hex %.120s", py, pc->filename, c->filename_hex);
	CHECK(pc->firstlineno == c->firstlineno, "%s: firstlineno %d, want %d", py, pc->firstlineno,
	      c->firstlineno);
	CHECK(hex_eq(c->table_hex, pc->linetable, pc->linetable_len),
	      "%s: line table of %s differs", py, pc->qualname);
	for (i = 0; i < c->nlines && !bad; i++) {
		/* No line (CPython -1) shows as the first line. */
		int want = c->line[i] < 0 ? c->firstlineno : c->line[i];
		int got = py_code_line(pc, t->version, c->off[i]);

		if (got != want) {
			fprintf(stderr, "%s: %s offset %d: line %d, CPython %d\n", py, pc->qualname,
				c->off[i], got, c->line[i]);
			bad = 1;
		}
	}
	CHECK(!bad && c->nlines > 0, "%s: lines of %s (%d offsets)", py, pc->qualname, c->nlines);
	CHECK(py_code_line(pc, t->version, -1) == c->firstlineno, "%s: instr -1", py);
}

static void test_interpreter(const char *py, struct code_truth *codes)
{
	struct target_run r = { 0 };
	struct py_target t = { 0 };
	const struct py_code *first[MAX_CODES] = { 0 };
	const struct py_layout *l;
	struct symtab *st = NULL, *st2 = NULL;
	uint64_t code_type = 0, frame[3] = { 0 };
	char why[256];
	int n, i, found, same = 0, wrong = 0;
	size_t size;
	struct pw_scratch scratch;

	t.version = py_hexversion(py);
	if (!t.version) {
		SKIP("%s: does not run", py);
		return;
	}
	if (t.version < 0x03080000) {
		SKIP("%s: Python %x.%x is not supported (3.8+)", py, t.version >> 24,
		     t.version >> 16 & 0xff);
		return;
	}
	if (start_target(py, &r)) {
		CHECK(0, "%s: cannot start: %s", py, strerror(errno));
		return;
	}
	n = read_truth(r.out, &t.version, &code_type, codes, frame);
	CHECK(n > 10, "%s: target reported %d code objects", py, n);
	if (n <= 10)
		goto out;
	l = py_layout_find(t.version, why, sizeof(why));
	CHECK(l, "%s: %s", py, why);
	if (!l)
		goto out;
	t.pid = r.pid;
	t.proc.layout = *l;
	t.proc.code_type = code_type;
	st = symtab_new();
	CHECK(st, "symtab_new");
	if (!st)
		goto out;

	for (i = 0; i < n; i++) {
		struct code_truth *c = &codes[i];
		uint32_t fp = pw_code_fingerprint((__u32)c->firstlineno, c->filename, c->name);

		vmwalk_target(r.pid);
		CHECK(pw_code_fp(NULL, &t.proc, c->addr, &scratch) == fp,
		      "%s: the sampler's fingerprint of code %d differs from Python's values", py,
		      i);
		/* The last code object is kept unread until the process is gone. */
		if (i == n - 1)
			break;
		first[i] = symtab_code(st, &t, c->addr, fp);
		check_code(py, &t, c, first[i]);
	}
	for (found = 0, i = 0; i < n - 1; i++) {
		if (codes[i].addr != frame[0])
			continue;
		found = 1;
		CHECK(py_code_line(first[i], t.version, (int32_t)frame[1]) == (int)frame[2],
		      "%s: sleeping frame at offset %d: line %d, f_lineno %d", py, (int)frame[1],
		      py_code_line(first[i], t.version, (int32_t)frame[1]), (int)frame[2]);
		CHECK(!strcmp(first[i]->qualname, "sleeper"), "%s: sleeping in %s", py,
		      first[i]->qualname);
	}
	CHECK(found, "%s: the sleeping frame's code was not among the reported", py);

	for (i = 0; i < n - 1; i++) {
		struct code_truth *c = &codes[i];
		uint32_t fp = pw_code_fingerprint((__u32)c->firstlineno, c->filename, c->name);
		uint32_t bad = fp == UINT32_MAX ? 1 : fp + 1;

		same += symtab_code(st, &t, c->addr, fp) == first[i];
		wrong += !symtab_code(st, &t, c->addr, bad)->valid;
		wrong += !symtab_code(st, &t, c->addr, FP_INVALID)->valid;
	}
	CHECK(same == n - 1, "%s: %d of %d second lookups returned the first entry", py, same,
	      n - 1);
	CHECK(wrong == 2 * (n - 1), "%s: %d of %d wrong fingerprints rejected", py, wrong,
	      2 * (n - 1));
	size = symtab_size(st);
	CHECK(size == 3 * (size_t)(n - 1), "%s: %zu entries, want %d", py, size, 3 * (n - 1));

	/* A PyCode_Type that is not the object's type makes every code object invalid. */
	st2 = symtab_new();
	if (st2) {
		struct py_target t2 = t;
		uint32_t fp = pw_code_fingerprint((__u32)codes[0].firstlineno, codes[0].filename,
						  codes[0].name);

		t2.proc.code_type = code_type + 8;
		CHECK(!symtab_code(st2, &t2, codes[0].addr, fp)->valid,
		      "%s: a code object of the wrong type was accepted", py);
		/* The cache is keyed without the type: a fresh one for the right type. */
		symtab_free(st2);
		st2 = symtab_new();
		t2.proc.code_type = code_type;
		CHECK(st2 && symtab_code(st2, &t2, codes[0].addr, fp)->valid,
		      "%s: the right PyCode_Type was refused", py);
	}

	/* With the process gone, reads fail: cached entries must still be the same. */
	stop_target(&r);
	for (same = 0, i = 0; i < n - 1; i++) {
		uint32_t fp = pw_code_fingerprint((__u32)codes[i].firstlineno, codes[i].filename,
						  codes[i].name);
		const struct py_code *pc = symtab_code(st, &t, codes[i].addr, fp);

		same += pc == first[i] && pc->valid;
	}
	CHECK(same == n - 1, "%s: %d of %d cached entries survived the process (read twice?)", py,
	      same, n - 1);
	{
		struct code_truth *c = &codes[n - 1];
		uint32_t fp = pw_code_fingerprint((__u32)c->firstlineno, c->filename, c->name);

		CHECK(!symtab_code(st, &t, c->addr, fp)->valid,
		      "%s: a code object read after the process exited is valid", py);
	}
	CHECK(symtab_size(st) == size + 1, "%s: size %zu, want %zu", py, symtab_size(st), size + 1);
	symtab_forget(st, t.pid);
	CHECK(symtab_size(st) == 0, "%s: %zu entries left after forget", py, symtab_size(st));
	fprintf(stderr, "%s (%x): %d code objects symbolized\n", py, t.version, n - 1);
out:
	stop_target(&r);
	symtab_free(st);
	symtab_free(st2);
	for (i = 0; i < MAX_CODES; i++) {
		free(codes[i].qualname_hex);
		free(codes[i].filename_hex);
		free(codes[i].table_hex);
		codes[i].qualname_hex = codes[i].filename_hex = codes[i].table_hex = NULL;
	}
}

int main(void)
{
	static const uint32_t versions[] = { 0x030812f0, 0x030c01f0 };
	struct code_truth *codes = calloc(MAX_CODES, sizeof(*codes));
	char *line = NULL, cmd[PATH_MAX + 32], why[256];
	size_t cap = 0, i;
	int n = 0;
	FILE *f;

	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		const struct py_layout *l = py_layout_find(versions[i], why, sizeof(why));

		CHECK(l, "no layout: %s", why);
		if (l) {
			test_pystr(l);
			test_cache(l);
		}
	}
	if (!codes || find_pydir()) {
		CHECK(0, "cannot find tests/unit/py next to %s", __FILE__);
		return unit_exit();
	}
	if (geteuid()) {
		/* process_vm_readv of a child works unprivileged unless Yama forbids it. */
		FILE *y = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
		int scope = 0;

		if (y) {
			if (fscanf(y, "%d", &scope) != 1)
				scope = 0;
			fclose(y);
		}
		if (scope > 1) {
			SKIP("not root and Yama ptrace_scope %d forbids reading other processes",
			     scope);
			return unit_exit();
		}
	}
	snprintf(cmd, sizeof(cmd), "'%s/interpreters.sh'", pydir);
	f = popen(cmd, "r");
	while (f && getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = 0;
		test_interpreter(line, codes);
		n++;
	}
	if (f)
		pclose(f);
	free(line);
	free(codes);
	if (!n)
		SKIP("no Python interpreter found (pyenv root, $PYENV_ROOT, ~/.pyenv, /usr/bin)");
	return unit_exit();
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* elfread against the installed interpreters (ground truth from the interpreters and
 * binutils), this test binary itself, small programs compiled here, and garbage. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/elfread.h"
#include "tests/unit/unit.h"

static int write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, buf, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

/* Looked up in this binary's own .symtab. */
const char elf_test_marker[] = "asyncbpf elf_test_marker";

static char tmpdir[] = "/tmp/test_elf.XXXXXX";

int main(void);

static int run_line(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	int rc;

	if (!p)
		return -1;
	if (!fgets(out, (int)len, p))
		out[0] = '\0';
	out[strcspn(out, "\n")] = '\0';
	while (fgetc(p) != EOF)
		;
	rc = pclose(p);
	return rc == 0 && out[0] ? 0 : -1;
}

static bool have(const char *tool)
{
	char cmd[128], out[256];

	snprintf(cmd, sizeof(cmd), "command -v %s", tool);
	return !run_line(cmd, out, sizeof(out));
}

/* Value of a defined symbol as binutils' nm sees it (dynamic: .dynsym). */
static int nm_value(const char *file, const char *sym, bool dynamic, uint64_t *v, char *type)
{
	char cmd[PATH_MAX + 128], out[512], name[256];
	unsigned long long val;

	snprintf(cmd, sizeof(cmd), "nm %s --defined-only '%s' 2>/dev/null | awk '$3 == \"%s\"'",
		 dynamic ? "-D" : "", file, sym);
	if (run_line(cmd, out, sizeof(out)) || sscanf(out, "%llx %c %255s", &val, type, name) != 3)
		return -1;
	*v = val;
	return 0;
}

/* A section's address, size and file offset as readelf sees them. */
static int readelf_section(const char *file, const char *sec, uint64_t *addr, uint64_t *size)
{
	char cmd[PATH_MAX + 128], out[512];
	unsigned long long a, o, s;

	snprintf(cmd, sizeof(cmd),
		 "readelf -SW '%s' | sed 's/^ *\\[ *[0-9]*\\] *//' | awk '$1 == \"%s\" "
		 "{print $3, $4, $5}'",
		 file, sec);
	if (run_line(cmd, out, sizeof(out)) || sscanf(out, "%llx %llx %llx", &a, &o, &s) != 3)
		return -1;
	*addr = a;
	*size = s;
	return 0;
}

static int elf_header_type(const char *file)
{
	char cmd[PATH_MAX + 64], out[256];

	snprintf(cmd, sizeof(cmd), "readelf -h '%s' | awk '$1 == \"Type:\" {print $2}'", file);
	if (run_line(cmd, out, sizeof(out)))
		return -1;
	return !strcmp(out, "EXEC") ? ET_EXEC : !strcmp(out, "DYN") ? ET_DYN : -1;
}

static void test_version_parse(void)
{
	static const struct {
		const char *s;
		uint32_t hex;
	} ok[] = {
		{ "3.10.13", 0x030a0df0 },  { "3.8.18+", 0x030812f0 },	{ "3.13.0rc2", 0x030d00c2 },
		{ "3.14.0a1", 0x030e00a1 }, { "3.12.0b4", 0x030c00b4 }, { "2.7.18", 0x020712f0 },
	};
	static const char *const bad[] = { "",	      "3.10",	"3.10.13x", "3..1",   "1234.1.1",
					   "3.1.1rc", "3.1.1 ", "3.1.1++",  "a3.1.1", "3.1.1a16" };
	uint32_t hex;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		hex = 0;
		CHECK(!py_version_parse(ok[i].s, &hex) && hex == ok[i].hex, "%s -> %#x", ok[i].s,
		      hex);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(py_version_parse(bad[i], &hex) == -EINVAL, "'%s' accepted", bad[i]);
}

/* This very binary: symbol values against the addresses the loader gave them. */
static void test_self(void)
{
	char buf[sizeof(elf_test_marker)];
	uint64_t marker, mainv, size, off;
	struct elf_file *e;
	uintptr_t bias;
	int err;

	err = elf_open("/proc/self/exe", &e);
	CHECK(!err, "open /proc/self/exe: %d", err);
	if (err)
		return;
	err = elf_symbol(e, "elf_test_marker", ELF_SYMTAB, &marker, &size);
	CHECK(!err && size == sizeof(elf_test_marker), "marker: %d size %llu", err,
	      (unsigned long long)size);
	CHECK(elf_symbol(e, "elf_test_marker", ELF_DYNSYM, &marker, &size) == -ENOENT,
	      "marker is not exported, yet found in .dynsym");
	CHECK(elf_symbol(e, "no_such_symbol_anywhere", ELF_DYNSYM | ELF_SYMTAB, &marker, &size) ==
		      -ENOENT,
	      "missing symbol found");
	if (!elf_symbol(e, "elf_test_marker", ELF_SYMTAB, &marker, &size)) {
		memset(buf, 0, sizeof(buf));
		err = elf_read_vaddr(e, marker, buf, sizeof(buf));
		CHECK(!err && !memcmp(buf, elf_test_marker, sizeof(buf)), "read marker: %d", err);
		CHECK(!elf_vaddr_to_offset(e, marker, &off), "marker has no file offset");
		bias = (uintptr_t)elf_test_marker - (uintptr_t)marker;
		CHECK(!elf_symbol(e, "main", ELF_SYMTAB, &mainv, &size) &&
			      mainv + bias == (uintptr_t)&main,
		      "main at %#llx + bias %#lx", (unsigned long long)mainv, (unsigned long)bias);
		CHECK(elf_read_vaddr(e, UINT64_MAX - 2, buf, 8) < 0, "read across 2^64");
	}
	/* this test links libelf dynamically; a prefix matches, a name no library has does not */
	CHECK(elf_needs(e, "libelf") && elf_needs(e, "libc.so"),
	      "DT_NEEDED libelf, libc not found");
	CHECK(!elf_needs(e, "libpython"), "a libpython is needed, yet not linked");
	elf_close(e);
}

static void check_interpreter(const char *bin)
{
	char cmd[2 * PATH_MAX], out[PATH_MAX + 64], file[PATH_MAX], vstr[32], got[32];
	unsigned int hexversion;
	uint64_t v, size, nmv, saddr, ssize, off;
	struct elf_file *e;
	char type;
	int err, fd;
	uint32_t vv;

	snprintf(cmd, sizeof(cmd), "'%s' '%s/where.py'", bin, tmpdir);
	if (run_line(cmd, out, sizeof(out)) ||
	    sscanf(out, "%u %31s %4095s", &hexversion, vstr, file) != 3) {
		CHECK(0, "%s did not answer", bin);
		return;
	}
	err = elf_open(file, &e);
	CHECK(!err, "open %s: %d", file, err);
	if (err)
		return;
	CHECK(elf_type(e) == elf_header_type(file), "%s: type %d", file, elf_type(e));
	if (hexversion >= 0x03070000) {
		CHECK(!nm_value(file, "_PyRuntime", true, &nmv, &type), "nm: %s _PyRuntime", file);
		CHECK(!elf_symbol(e, "_PyRuntime", ELF_DYNSYM, &v, &size) && v == nmv,
		      "%s: _PyRuntime %#llx, nm says %#llx", file, (unsigned long long)v,
		      (unsigned long long)nmv);
		/* .bss symbols have no file bytes */
		CHECK((elf_vaddr_to_offset(e, v, &off) == -ENOENT) == (type == 'B' || type == 'b'),
		      "%s: _PyRuntime (%c) file offset", file, type);
		if (!readelf_section(file, ".PyRuntime", &saddr, &ssize))
			CHECK(!elf_section(e, ".PyRuntime", &v, &size) && v == saddr &&
				      size == ssize,
			      "%s: .PyRuntime at %#llx", file, (unsigned long long)v);
		else
			CHECK(elf_section(e, ".PyRuntime", &v, &size) == -ENOENT,
			      "%s: .PyRuntime found but readelf has none", file);
	}
	CHECK(!nm_value(file, "PyCode_Type", true, &nmv, &type) &&
		      !elf_symbol(e, "PyCode_Type", ELF_DYNSYM | ELF_SYMTAB, &v, &size) && v == nmv,
	      "%s: PyCode_Type", file);
	if (!nm_value(file, "Py_Version", true, &nmv, &type)) {
		CHECK(!elf_symbol(e, "Py_Version", ELF_DYNSYM, &v, &size) &&
			      !elf_read_uint(e, v, size, &v) && v == hexversion,
		      "%s: Py_Version %#llx, sys.hexversion %#x", file, (unsigned long long)v,
		      hexversion);
		/* the same four bytes, read at the translated offset */
		vv = 0;
		fd = open(file, O_RDONLY);
		CHECK(!elf_vaddr_to_offset(e, nmv, &off) && fd >= 0 &&
			      pread(fd, &vv, 4, (off_t)off) == 4 && vv == hexversion,
		      "%s: Py_Version at file offset %#llx", file, (unsigned long long)off);
		if (fd >= 0)
			close(fd);
	} else {
		CHECK(hexversion < 0x030b0000, "%s: no Py_Version in %#x", file, hexversion);
	}
	err = elf_py_version_string(e, (int)(hexversion >> 24), (int)(hexversion >> 16 & 0xff), got,
				    sizeof(got));
	CHECK(!err && !strcmp(got, vstr), "%s: version string %d '%s', Python says %s", file, err,
	      err ? "" : got, vstr);
	CHECK(!err && !py_version_parse(got, &vv) && (vv & ~0xffu) == (hexversion & ~0xffu),
	      "%s: %s parses to %#x", file, got, vv);
	/* A string of another release line must not be found. */
	CHECK(elf_py_version_string(e, 1, 0, got, sizeof(got)) == -ENOENT, "%s: found 1.0.x", file);
	elf_close(e);
	/* the executable of a CPython whose C API is in a libpython needs that library */
	err = elf_open(bin, &e);
	CHECK(!err, "open %s: %d", bin, err);
	if (!err) {
		CHECK(elf_needs(e, "libpython") == (strstr(file, "/libpython") != NULL),
		      "%s: needs a libpython: %d, C API in %s", bin, elf_needs(e, "libpython"),
		      file);
		elf_close(e);
	}
}

/* Python names the ELF holding its C API: the mapping of Py_GetVersion's code. */
static const char where_py[] =
	"import sys, platform, ctypes\n"
	"a = ctypes.cast(ctypes.pythonapi.Py_GetVersion, ctypes.c_void_p).value\n"
	"for l in open('/proc/self/maps'):\n"
	"    f = l.split(None, 5)\n"
	"    s, e = [int(x, 16) for x in f[0].split('-')]\n"
	"    if s <= a < e:\n"
	"        p = f[5].strip()\n"
	"print('%d %s %s' % (sys.hexversion, platform.python_version(), p))\n";

static void test_interpreters(void)
{
	const char *pats[] = { "%s/versions/*/bin/python[0-9].[0-9]",
			       "%s/versions/*/bin/python[0-9].[0-9][0-9]" };
	char root[PATH_MAX], pat[PATH_MAX + 64];
	const char *env = getenv("PYENV_ROOT"), *home = getenv("HOME");
	glob_t g;
	size_t i, j, n = 0;

	snprintf(pat, sizeof(pat), "%s/where.py", tmpdir);
	if (write_file(pat, where_py, sizeof(where_py) - 1)) {
		CHECK(0, "cannot write %s", pat);
		return;
	}
	if (!have("nm") || !have("readelf")) {
		SKIP("binutils (nm, readelf) not installed: no ground truth for symbols");
		return;
	}
	if (run_line("pyenv root 2>/dev/null", root, sizeof(root)))
		snprintf(root, sizeof(root), "%s", env ? env : "");
	if (!root[0])
		snprintf(root, sizeof(root), "%s/.pyenv", home ? home : "/root");
	for (i = 0; i < 2; i++) {
		snprintf(pat, sizeof(pat), pats[i], root);
		if (glob(pat, 0, NULL, &g))
			continue;
		for (j = 0; j < g.gl_pathc; j++, n++)
			check_interpreter(g.gl_pathv[j]);
		globfree(&g);
	}
	if (!glob("/usr/bin/python[0-9].[0-9]*", 0, NULL, &g)) {
		for (j = 0; j < g.gl_pathc; j++) {
			if (strchr(g.gl_pathv[j] + strlen("/usr/bin/python"), '-'))
				continue;
			check_interpreter(g.gl_pathv[j]);
			n++;
		}
		globfree(&g);
	}
	if (!n)
		SKIP("no CPython interpreters installed (pyenv root %s, /usr/bin)", root);
}

/* Compiles src into tmpdir/name. */
static int compile(const char *name, const char *src, const char *flags, char *out, size_t len)
{
	char cpath[PATH_MAX], cmd[3 * PATH_MAX];
	FILE *f;

	snprintf(cpath, sizeof(cpath), "%s/%s.c", tmpdir, name);
	snprintf(out, len, "%s/%s", tmpdir, name);
	f = fopen(cpath, "w");
	if (!f)
		return -1;
	fputs(src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gcc -w %s -o '%s' '%s' 2>&1", flags, out, cpath);
	return system(cmd) == 0 ? 0 : -1;
}

/* PY_VERSION, merged by the linker into the tail of a longer string or standing alone. */
static void test_version_strings(void)
{
	static const char src[] =
		"const char *volatile a = \"/opt/py/3.9.7\", *volatile b = \"3.9.7\";\n"
		"const char *volatile c = \"unidata 3.2.0\", *volatile d = \"v13.9.7\";\n"
		"const char *volatile e = \"3.10.1rc1\", *volatile f = \"x3.10.1rc1\";\n"
		"const char *volatile g = \"3.8.1\", *volatile h = \"3.8.2+\";\n"
		"int main(void) { return 0; }\n";
	char bin[PATH_MAX], got[32];
	struct elf_file *e;
	int err;

	if (!have("gcc") || compile("vstrings", src, "-O1", bin, sizeof(bin))) {
		SKIP("gcc cannot build the version-string fixture");
		return;
	}
	err = elf_open(bin, &e);
	CHECK(!err, "open %s: %d", bin, err);
	if (err)
		return;
	CHECK(!elf_py_version_string(e, 3, 9, got, sizeof(got)) && !strcmp(got, "3.9.7"), "3.9: %s",
	      got);
	CHECK(!elf_py_version_string(e, 3, 10, got, sizeof(got)) && !strcmp(got, "3.10.1rc1"),
	      "3.10: %s", got);
	CHECK(!elf_py_version_string(e, 3, 2, got, sizeof(got)) && !strcmp(got, "3.2.0"), "3.2: %s",
	      got);
	CHECK(elf_py_version_string(e, 3, 8, got, sizeof(got)) == -ENOTUNIQ, "3.8 is ambiguous");
	CHECK(elf_py_version_string(e, 3, -1, got, sizeof(got)) == -ENOTUNIQ, "3.x is ambiguous");
	CHECK(elf_py_version_string(e, 3, 11, got, sizeof(got)) == -ENOENT, "3.11: %s", got);
	CHECK(elf_py_version_string(e, 3, 9, got, 5) == -ENOSPC, "short buffer");
	elf_close(e);
}

static char *slurp(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) || !(buf = malloc((size_t)st.st_size + 1))) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	*len = (size_t)read(fd, buf, (size_t)st.st_size);
	close(fd);
	return buf;
}

/* Every query on a damaged copy either fails cleanly or agrees with the intact file. */
static void probe_damaged(const char *path, const char *orig, size_t origlen, struct elf_file *ref,
			  const char *what)
{
	static const char *const syms[] = { "main", "elf_test_marker", "malloc", "_start" };
	uint64_t v, size, rv, rsize, off, roff;
	char buf[64], rbuf[64], s[32];
	struct elf_file *e;
	int err;
	size_t i;

	err = elf_open(path, &e);
	CHECK(err == 0 || err == -ENOEXEC, "%s: open %d", what, err);
	if (err)
		return;
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		err = elf_symbol(e, syms[i], ELF_DYNSYM | ELF_SYMTAB, &v, &size);
		CHECK(err == 0 || err == -ENOENT, "%s: %s: %d", what, syms[i], err);
		if (err || elf_symbol(ref, syms[i], ELF_DYNSYM | ELF_SYMTAB, &rv, &rsize))
			continue;
		/* a truncated file keeps its symbols or loses them, never changes them */
		if (orig)
			CHECK(v == rv && size == rsize, "%s: %s %#llx, intact %#llx", what, syms[i],
			      (unsigned long long)v, (unsigned long long)rv);
		err = elf_read_vaddr(e, v, buf, sizeof(buf));
		CHECK(err == 0 || err == -ENOENT || err == -EIO, "%s: read %d", what, err);
		if (!err && orig && !elf_vaddr_to_offset(e, v, &off) &&
		    !elf_read_vaddr(ref, v, rbuf, sizeof(rbuf)) &&
		    !elf_vaddr_to_offset(ref, v, &roff))
			CHECK(off == roff && off + sizeof(buf) <= origlen &&
				      !memcmp(buf, orig + off, sizeof(buf)),
			      "%s: bytes of %s differ", what, syms[i]);
	}
	err = elf_section(e, ".text", &v, &size);
	CHECK(err == 0 || err == -ENOENT, "%s: .text %d", what, err);
	err = elf_py_version_string(e, -1, -1, s, sizeof(s));
	CHECK(err == 0 || err == -ENOENT || err == -ENOTUNIQ, "%s: version %d", what, err);
	(void)elf_type(e);
	elf_close(e);
}

static void test_garbage(void)
{
	char path[PATH_MAX], what[64], *orig, *copy;
	size_t origlen, cut, i, k;
	struct elf_file *ref;
	unsigned char rnd[8192];
	int err;

	snprintf(path, sizeof(path), "%s/garbage", tmpdir);
	srand(12345);
	for (i = 0; i < sizeof(rnd); i++)
		rnd[i] = (unsigned char)rand();
	CHECK(!write_file(path, rnd, sizeof(rnd)) && elf_open(path, &ref) == -ENOEXEC,
	      "random bytes");
	CHECK(!write_file(path, "", 0) && elf_open(path, &ref) == -ENOEXEC, "empty file");
	CHECK(!write_file(path, "\177ELF\2\1\1", 7) && elf_open(path, &ref) == -ENOEXEC,
	      "bare magic");
	CHECK(elf_open(tmpdir, &ref) == -ENOEXEC, "a directory");
	CHECK(elf_open("/nonexistent/asyncbpf", &ref) == -ENOENT, "missing file");

	orig = slurp("/proc/self/exe", &origlen);
	err = elf_open("/proc/self/exe", &ref);
	CHECK(orig && !err, "reading own binary");
	if (!orig || err) {
		free(orig);
		return;
	}
	for (cut = 0; cut < origlen; cut = cut < 256 ? cut + 13 : cut * 3 / 2) {
		snprintf(what, sizeof(what), "truncated at %zu", cut);
		CHECK(!write_file(path, orig, cut), "write");
		probe_damaged(path, orig, origlen, ref, what);
	}
	snprintf(what, sizeof(what), "truncated by one");
	CHECK(!write_file(path, orig, origlen - 1), "write");
	probe_damaged(path, orig, origlen, ref, what);

	/* Random bytes over the headers, the section table and everywhere. */
	copy = malloc(origlen);
	for (i = 0; copy && i < 400; i++) {
		memcpy(copy, orig, origlen);
		for (k = 0; k < 1 + i % 16; k++) {
			size_t at = i % 3 == 0	 ? (size_t)rand() % 128
				    : i % 3 == 1 ? origlen - 1 - (size_t)rand() % 4096
						 : (size_t)rand() % origlen;
			copy[at % origlen] = (char)rand();
		}
		snprintf(what, sizeof(what), "mutation %zu", i);
		CHECK(!write_file(path, copy, origlen), "write");
		probe_damaged(path, NULL, origlen, ref, what);
	}
	free(copy);
	elf_close(ref);
	free(orig);
}

int main(void)
{
	char cmd[PATH_MAX];

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_version_parse();
	test_self();
	test_interpreters();
	test_version_strings();
	test_garbage();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return unit_exit();
}

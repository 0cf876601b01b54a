/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Line-table decoding against every installed interpreter: py/linetable_dump.py prints
 * each code object's table and the line CPython's own PyCode_Addr2Line (and dis /
 * co_lines) gives for every offset; the decoder must agree everywhere. Truncated and
 * random tables are decoded from buffers that end at an unmapped page, so any read past
 * a table faults. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpython/linetable.h"
#include "tests/unit/pydir.h"
#include "tests/unit/unit.h"

#define MAX_OFFS (1 << 20)

struct code_rec {
	int firstlineno;
	uint8_t *tab;
	size_t len;
	size_t noffs;
	int32_t *off;
	int *line; /* PyCode_Addr2Line */
	int *alt;  /* dis.findlinestarts / co_lines, INT_MIN when not given */
};

/* A copy of len bytes that ends where an inaccessible page begins. */
static uint8_t *guarded(const uint8_t *src, size_t len, void **map, size_t *maplen)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t data = (len + pg - 1) / pg * pg;
	uint8_t *m;

	*maplen = data + pg;
	m = mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	if (mprotect(m + data, pg, PROT_NONE)) {
		munmap(m, *maplen);
		return NULL;
	}
	*map = m;
	memcpy(m + data - len, src, len);
	return m + data - len;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int parse_code(const char *line, struct code_rec *c)
{
	const char *h = strchr(line + 2, ' ');
	size_t i, n;

	if (sscanf(line, "C %d", &c->firstlineno) != 1 || !h)
		return -1;
	h++;
	n = strcspn(h, " \n");
	if (n == 1 && h[0] == '-')
		n = 0;
	if (n % 2)
		return -1;
	c->len = n / 2;
	c->tab = malloc(c->len + 1);
	if (!c->tab)
		return -1;
	for (i = 0; i < c->len; i++) {
		int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		c->tab[i] = (uint8_t)(hi << 4 | lo);
	}
	c->noffs = 0;
	c->off = malloc(MAX_OFFS * sizeof(*c->off));
	c->line = malloc(MAX_OFFS * sizeof(*c->line));
	c->alt = malloc(MAX_OFFS * sizeof(*c->alt));
	return c->off && c->line && c->alt ? 0 : -1;
}

static void free_code(struct code_rec *c)
{
	free(c->tab);
	free(c->off);
	free(c->line);
	free(c->alt);
	memset(c, 0, sizeof(*c));
}

/* A table cut short must give the full table's line or -1 (3.10+); an lnotab cut after
 * pairs that already reach past the offset must give the full table's line. */
static int check_truncated(uint32_t version, const struct code_rec *c)
{
	int bad = 0;
	size_t k, j;

	for (k = 0; k < c->len && !bad; k++) {
		void *map;
		size_t maplen, i;
		uint8_t *t = guarded(c->tab, k, &map, &maplen);
		int64_t reach = 0;

		if (!t)
			return -1;
		for (i = 0; i + 1 < k; i += 2)
			reach += t[i];
		for (j = 0; j < c->noffs; j++) {
			int full = c->line[j], got;

			got = linetable_line(version, t, k, c->firstlineno, c->off[j]);
			if ((version >> 16 & 0xff) < 10) {
				if (c->off[j] < reach && got != full)
					bad = 1;
			} else if (got != -1 && got != full) {
				bad = 1;
			}
			if (bad) {
				fprintf(stderr,
					"truncated to %zu: offset %d gave %d, full table %d\n", k,
					c->off[j], got, full);
				break;
			}
		}
		munmap(map, maplen);
	}
	return bad;
}

static void test_interpreter(const char *py)
{
	uint32_t v = py_hexversion(py);
	char cmd[2 * PATH_MAX + 64], *line = NULL;
	size_t cap = 0, ncodes = 0, nchecked = 0, nends = 0;
	struct code_rec c = { 0 };
	int have = 0, mism = 0, trunc_bad = 0, rc;
	FILE *f;

	if (!v) {
		SKIP("%s: does not run", py);
		return;
	}
	if (v < 0x03080000) {
		SKIP("%s: Python %x.%x is not supported (3.8+)", py, v >> 24, v >> 16 & 0xff);
		return;
	}
	snprintf(cmd, sizeof(cmd), "'%s' -I '%s/linetable_dump.py'", py, pydir);
	f = popen(cmd, "r");
	CHECK(f, "popen %s: %s", cmd, strerror(errno));
	if (!f)
		return;
	for (;;) {
		ssize_t n = getline(&line, &cap, f);

		if (n <= 0 || line[0] != 'O') {
			if (have) {
				size_t j;
				int bad = 0;

				for (j = 0; j < c.noffs && !bad; j++) {
					int got = linetable_line(v, c.tab, c.len, c.firstlineno,
								 c.off[j]);

					if (got != c.line[j] ||
					    (c.alt[j] != INT_MIN && got != c.alt[j])) {
						fprintf(stderr,
							"%s: firstlineno %d table len %zu offset "
							"%d: got %d, "
							"CPython %d/%d\n",
							py, c.firstlineno, c.len, c.off[j], got,
							c.line[j], c.alt[j]);
						bad = 1;
					}
				}
				mism += bad;
				nchecked += c.noffs;
				/* Truncation is quadratic: try it on the smaller tables only. */
				if (c.len <= 256 && check_truncated(v, &c))
					trunc_bad++;
				free_code(&c);
				have = 0;
			}
			if (n <= 0)
				break;
		}
		if (line[0] == 'C') {
			if (parse_code(line, &c)) {
				CHECK(0, "%s: bad record: %.80s", py, line);
				break;
			}
			have = 1;
			ncodes++;
		} else if (line[0] == 'O' && have && c.noffs < MAX_OFFS) {
			char alt[32];

			if (sscanf(line, "O %d %d %31s", &c.off[c.noffs], &c.line[c.noffs], alt) !=
			    3) {
				CHECK(0, "%s: bad record: %.80s", py, line);
				break;
			}
			c.alt[c.noffs] = alt[0] == 'x' ? INT_MIN : atoi(alt);
			c.noffs++;
		} else if (!strncmp(line, "END ", 4)) {
			nends = strtoul(line + 4, NULL, 10);
		}
	}
	free_code(&c);
	free(line);
	rc = pclose(f);
	CHECK(rc == 0, "%s: dump script exited with status %d", py, rc);
	CHECK(ncodes > 100 && ncodes == nends, "%s: %zu code objects read, script says %zu", py,
	      ncodes, nends);
	CHECK(mism == 0, "%s: %d of %zu code objects decode differently from CPython", py, mism,
	      ncodes);
	CHECK(trunc_bad == 0, "%s: %d truncated tables decode inconsistently", py, trunc_bad);
	fprintf(stderr, "%s (%x): %zu code objects, %zu offsets compared\n", py, v, ncodes,
		nchecked);
}

/* Random bytes as tables of each format, once in a buffer that ends at an unmapped page
 * and once followed by other random bytes: the decoders must return, never fault, and
 * give the same answers (what lies past the table is never read). */
static void test_garbage(void)
{
	static const uint32_t versions[] = { 0x03080000, 0x030a0000, 0x030b0000 };
	uint8_t buf[1200];
	unsigned int seed = 12345;
	int i, differ = 0, calls = 0;
	size_t vi;

	for (i = 0; i < 3000; i++) {
		size_t len = (size_t)rand_r(&seed) % (sizeof(buf) / 2), k, maplen;
		void *map;
		uint8_t *t;

		for (k = 0; k < sizeof(buf); k++)
			buf[k] = (uint8_t)rand_r(&seed);
		/* Runs of continuation bits: the longest varints. */
		if (i % 3 == 0)
			for (k = 1; k < sizeof(buf); k++)
				buf[k] = 0x7f;
		t = guarded(buf, len, &map, &maplen);
		if (!t) {
			CHECK(t, "mmap: %s", strerror(errno));
			return;
		}
		for (k = len; k < sizeof(buf); k++)
			buf[k] ^= 0x5a;
		for (vi = 0; vi < sizeof(versions) / sizeof(versions[0]); vi++) {
			int32_t off;

			for (off = -3; off < 1200; off += 7) {
				int a = linetable_line(versions[vi], t, len, INT_MAX - 5, off);
				int b = linetable_line(versions[vi], buf, len, INT_MAX - 5, off);

				differ += a != b;
				calls++;
			}
			differ += linetable_line(versions[vi], t, len, 1, INT32_MAX) !=
				  linetable_line(versions[vi], buf, len, 1, INT32_MAX);
		}
		munmap(map, maplen);
	}
	CHECK(differ == 0, "%d of %d decodes of random tables depend on bytes past the table",
	      differ, calls);
	CHECK(linetable_line(0x03070000, buf, sizeof(buf), 1, 0) == -1,
	      "versions before 3.8 are not decoded");
}

int main(void)
{
	char *line = NULL, cmd[PATH_MAX + 32];
	size_t cap = 0;
	int n = 0;
	FILE *f;

	test_garbage();
	if (find_pydir()) {
		CHECK(0, "cannot find tests/unit/py next to %s", __FILE__);
		return unit_exit();
	}
	snprintf(cmd, sizeof(cmd), "'%s/interpreters.sh'", pydir);
	f = popen(cmd, "r");
	while (f && getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = 0;
		test_interpreter(line);
		n++;
	}
	if (f)
		pclose(f);
	free(line);
	if (!n)
		SKIP("no Python interpreter found (pyenv root, $PYENV_ROOT, ~/.pyenv, /usr/bin)");
	return unit_exit();
}

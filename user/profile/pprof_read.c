// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Reads a pprof profile.proto back into a profile: functions with a file name are Python
 * frames; others are parsed from their names as the pprof writer names them. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile/protobuf.h"
#include "profile/readers.h"

#define MAX_INFLATED (256ull << 20)
#define MAX_FRAMES   65536

struct str {
	const uint8_t *p;
	size_t len;
};

struct func {
	uint64_t id, name, file, start;
};

struct loc {
	uint64_t id;
	size_t first, n; /* into lines and frames */
};

struct line {
	uint64_t func;
	int64_t line;
};

struct dec {
	struct str *strs;
	size_t nstr, strcap;
	struct func *funcs;
	size_t nfunc, funccap;
	struct loc *locs;
	size_t nloc, loccap;
	struct line *lines;
	uint32_t *frames; /* per line: the frame it makes, in the order of lines */
	size_t nline, linecap;
	uint64_t types[16][2]; /* sample types: type, unit */
	size_t ntypes;
	uint64_t period_type[2], period;
	char *why;
	size_t whylen;
};

static int fail(struct dec *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->why, d->whylen, fmt, ap);
	va_end(ap);
	return -1;
}

static bool grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap * 2 : 64;
	void *nv;

	if (n < *cap)
		return true;
	if (c > SIZE_MAX / size / 2)
		return false;
	nv = realloc(*v, c * size);
	if (!nv)
		return false;
	*v = nv;
	*cap = c;
	return true;
}

static int value_type(struct dec *d, const struct pb_field *f, uint64_t vt[2])
{
	struct pb_reader r = { f->data, f->data + f->len };
	struct pb_field g;
	int ret;

	vt[0] = vt[1] = 0;
	while ((ret = pb_next(&r, &g)) > 0)
		if ((g.num == 1 || g.num == 2) && g.wire == PB_VARINT)
			vt[g.num - 1] = g.v;
	return ret < 0 ? fail(d, "malformed value type") : 0;
}

static int function(struct dec *d, const struct pb_field *f)
{
	struct pb_reader r = { f->data, f->data + f->len };
	struct func fn = {};
	struct pb_field g;
	int ret;

	while ((ret = pb_next(&r, &g)) > 0) {
		if (g.wire != PB_VARINT)
			continue;
		if (g.num == 1)
			fn.id = g.v;
		else if (g.num == 2)
			fn.name = g.v;
		else if (g.num == 4)
			fn.file = g.v;
		else if (g.num == 5)
			fn.start = g.v;
	}
	if (ret < 0)
		return fail(d, "malformed function");
	if (!fn.id)
		return fail(d, "a function without an id");
	if (!grow((void **)&d->funcs, &d->funccap, d->nfunc, sizeof(fn)))
		return fail(d, "out of memory");
	d->funcs[d->nfunc++] = fn;
	return 0;
}

static int location(struct dec *d, const struct pb_field *f)
{
	struct pb_reader r = { f->data, f->data + f->len };
	struct loc l = { .first = d->nline };
	struct pb_field g;
	int ret;

	while ((ret = pb_next(&r, &g)) > 0) {
		if (g.num == 1 && g.wire == PB_VARINT) {
			l.id = g.v;
		} else if (g.num == 4 && g.wire == PB_LEN) {
			struct pb_reader lr = { g.data, g.data + g.len };
			struct line ln = {};
			struct pb_field h;

			while ((ret = pb_next(&lr, &h)) > 0) {
				if (h.num == 1 && h.wire == PB_VARINT)
					ln.func = h.v;
				else if (h.num == 2 && h.wire == PB_VARINT)
					ln.line = (int64_t)h.v;
			}
			if (ret < 0)
				return fail(d, "malformed line");
			if (!grow((void **)&d->lines, &d->linecap, d->nline, sizeof(ln)))
				return fail(d, "out of memory");
			d->lines[d->nline++] = ln;
			l.n++;
		}
	}
	if (ret < 0)
		return fail(d, "malformed location");
	if (!l.id)
		return fail(d, "a location without an id");
	if (!grow((void **)&d->locs, &d->loccap, d->nloc, sizeof(l)))
		return fail(d, "out of memory");
	d->locs[d->nloc++] = l;
	return 0;
}

/* Everything but the samples, which need the tables. */
static int tables(struct dec *d, const uint8_t *buf, size_t len)
{
	struct pb_reader r = { buf, buf + len };
	struct pb_field f;
	int ret;

	while ((ret = pb_next(&r, &f)) > 0) {
		if (f.num == 6 && f.wire == PB_LEN) {
			if (!grow((void **)&d->strs, &d->strcap, d->nstr, sizeof(struct str)))
				return fail(d, "out of memory");
			d->strs[d->nstr++] = (struct str){ f.data, f.len };
		} else if (f.num == 1 && f.wire == PB_LEN) {
			if (d->ntypes == sizeof(d->types) / sizeof(d->types[0]))
				return fail(d, "more than %zu sample types", d->ntypes);
			if (value_type(d, &f, d->types[d->ntypes++]))
				return -1;
		} else if (f.num == 5 && f.wire == PB_LEN) {
			if (function(d, &f))
				return -1;
		} else if (f.num == 4 && f.wire == PB_LEN) {
			if (location(d, &f))
				return -1;
		} else if (f.num == 11 && f.wire == PB_LEN) {
			if (value_type(d, &f, d->period_type))
				return -1;
		} else if (f.num == 12 && f.wire == PB_VARINT) {
			d->period = f.v;
		}
	}
	if (ret < 0)
		return fail(d, "not a pprof profile (malformed protobuf)");
	if (!d->nstr || d->strs[0].len)
		return fail(d, "not a pprof profile (no string table)");
	return 0;
}

static bool str_is(const struct dec *d, uint64_t i, const char *s)
{
	return i < d->nstr && d->strs[i].len == strlen(s) &&
	       !memcmp(d->strs[i].p, s, d->strs[i].len);
}

/* A string table entry as a C string (NUL bytes end it); NULL when out of memory. */
static char *cstr(const struct dec *d, uint64_t i)
{
	return strndup((const char *)d->strs[i].p, d->strs[i].len);
}

static int by_func_id(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static int by_loc_id(const void *a, const void *b)
{
	const struct loc *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static const struct func *find_func(const struct dec *d, uint64_t id)
{
	struct func key = { .id = id };

	if (!d->nfunc)
		return NULL;
	return bsearch(&key, d->funcs, d->nfunc, sizeof(key), by_func_id);
}

static const struct loc *find_loc(const struct dec *d, uint64_t id)
{
	struct loc key = { .id = id };

	if (!d->nloc)
		return NULL;
	return bsearch(&key, d->locs, d->nloc, sizeof(key), by_loc_id);
}

static int frames(struct dec *d, struct profile *p)
{
	if (d->nfunc)
		qsort(d->funcs, d->nfunc, sizeof(*d->funcs), by_func_id);
	if (d->nloc)
		qsort(d->locs, d->nloc, sizeof(*d->locs), by_loc_id);
	for (size_t i = 1; i < d->nfunc; i++)
		if (d->funcs[i].id == d->funcs[i - 1].id)
			return fail(d, "function id %llu defined twice",
				    (unsigned long long)d->funcs[i].id);
	for (size_t i = 1; i < d->nloc; i++)
		if (d->locs[i].id == d->locs[i - 1].id)
			return fail(d, "location id %llu defined twice",
				    (unsigned long long)d->locs[i].id);
	d->frames = calloc(d->nline ? d->nline : 1, sizeof(*d->frames));
	if (!d->frames)
		return fail(d, "out of memory");
	for (size_t i = 0; i < d->nline; i++) {
		const struct func *fn = find_func(d, d->lines[i].func);
		char *name, *file;
		uint32_t id;

		if (!fn)
			return fail(d, "a line names function %llu, which is not defined",
				    (unsigned long long)d->lines[i].func);
		if (fn->name >= d->nstr || fn->file >= d->nstr)
			return fail(d, "function %llu: string index out of range",
				    (unsigned long long)fn->id);
		if (!d->strs[fn->file].len) {
			id = profile_frame_parse(p, (const char *)d->strs[fn->name].p,
						 d->strs[fn->name].len);
		} else {
			int64_t line = d->lines[i].line;

			name = cstr(d, fn->name);
			file = cstr(d, fn->file);
			id = name && file
				     ? profile_frame(p, FRAME_PYTHON, name, file,
						     line < 0 || line > INT32_MAX ? 0 : (int)line)
				     : UINT32_MAX;
			free(name);
			free(file);
			if (id != UINT32_MAX && fn->start <= INT32_MAX)
				profile_set_start_line(p, id, (int)fn->start);
		}
		if (id == UINT32_MAX)
			return fail(d, "out of memory");
		d->frames[i] = id;
	}
	return 0;
}

/* A repeated varint field, packed or not: calls add for each value. */
static int repeated(const struct pb_field *f, uint64_t *vals, size_t *n, size_t max)
{
	if (f->wire == PB_VARINT) {
		if (*n == max)
			return -1;
		vals[(*n)++] = f->v;
		return 0;
	}
	if (f->wire == PB_LEN) {
		struct pb_reader r = { f->data, f->data + f->len };
		uint64_t v;
		int ret;

		while ((ret = pb_packed_next(&r, &v)) > 0) {
			if (*n == max)
				return -1;
			vals[(*n)++] = v;
		}
		return ret;
	}
	return -1;
}

static int samples(struct dec *d, struct profile *p, const uint8_t *buf, size_t len, size_t vidx)
{
	struct pb_reader r = { buf, buf + len };
	uint64_t *locs = malloc(MAX_FRAMES * sizeof(*locs)), values[16];
	uint32_t *ids = malloc(MAX_FRAMES * sizeof(*ids));
	struct pb_field f;
	size_t nsample = 0;
	int ret = -1, rr;

	if (!locs || !ids) {
		fail(d, "out of memory");
		goto out;
	}
	while ((rr = pb_next(&r, &f)) > 0) {
		struct pb_reader sr;
		struct pb_field g;
		size_t nlocs = 0, nvals = 0;
		uint32_t n = 0;

		if (f.num != 2 || f.wire != PB_LEN)
			continue;
		nsample++;
		sr = (struct pb_reader){ f.data, f.data + f.len };
		while ((rr = pb_next(&sr, &g)) > 0) {
			if (g.num == 1 && repeated(&g, locs, &nlocs, MAX_FRAMES)) {
				fail(d, "sample %zu: malformed or more than %d locations", nsample,
				     MAX_FRAMES);
				goto out;
			}
			if (g.num == 2 && repeated(&g, values, &nvals, 16)) {
				fail(d, "sample %zu: malformed or more than 16 values", nsample);
				goto out;
			}
		}
		if (rr < 0) {
			fail(d, "sample %zu: malformed", nsample);
			goto out;
		}
		if (vidx >= nvals) {
			fail(d, "sample %zu: %zu values for %zu sample types", nsample, nvals,
			     d->ntypes);
			goto out;
		}
		if ((int64_t)values[vidx] < 0) {
			fail(d, "sample %zu: a negative count", nsample);
			goto out;
		}
		/* location ids are leaf first, a location's lines callee first */
		for (size_t i = nlocs; i-- > 0;) {
			const struct loc *l = find_loc(d, locs[i]);

			if (!l) {
				fail(d, "sample %zu: location %llu is not defined", nsample,
				     (unsigned long long)locs[i]);
				goto out;
			}
			for (size_t k = l->n; k-- > 0;) {
				if (n == MAX_FRAMES) {
					fail(d, "sample %zu: more than %d frames", nsample,
					     MAX_FRAMES);
					goto out;
				}
				ids[n++] = d->frames[l->first + k];
			}
		}
		if (values[vidx] && profile_add(p, ids, n, values[vidx])) {
			fail(d, "out of memory");
			goto out;
		}
	}
	ret = rr < 0 ? fail(d, "malformed protobuf") : 0;
out:
	free(locs);
	free(ids);
	return ret;
}

static int decode(const uint8_t *buf, size_t len, struct profile *p, char *why, size_t whylen)
{
	struct dec d = { .why = why, .whylen = whylen };
	size_t vidx = 0;
	int ret = -1;

	if (tables(&d, buf, len) || frames(&d, p))
		goto out;
	if (!d.ntypes) {
		fail(&d, "no sample types");
		goto out;
	}
	/* counts come from the samples/count type when there is one, else the first */
	for (size_t i = 0; i < d.ntypes; i++)
		if (str_is(&d, d.types[i][0], "samples")) {
			vidx = i;
			break;
		}
	if (samples(&d, p, buf, len, vidx))
		goto out;
	if (str_is(&d, d.period_type[1], "nanoseconds"))
		profile_set_period(p, d.period);
	ret = 0;
out:
	free(d.strs);
	free(d.funcs);
	free(d.locs);
	free(d.lines);
	free(d.frames);
	return ret;
}

static int inflate_all(const uint8_t *buf, size_t len, uint8_t **out, size_t *outlen, char *why,
		       size_t whylen)
{
	z_stream z = {};
	size_t cap = len * 4 + 4096, n = 0;
	uint8_t *o = NULL;
	int ret;

	if (len > UINT32_MAX) {
		snprintf(why, whylen, "more than 4 GiB compressed");
		return -1;
	}
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	z.next_in = (uint8_t *)buf;
	z.avail_in = len;
	for (;;) {
		if (n == cap || !o) {
			uint8_t *no;

			if (o)
				cap *= 2;
			if (cap > MAX_INFLATED + 1)
				cap = MAX_INFLATED + 1;
			no = realloc(o, cap);
			if (!no) {
				snprintf(why, whylen, "out of memory");
				goto fail;
			}
			o = no;
		}
		z.next_out = o + n;
		z.avail_out = cap - n;
		ret = inflate(&z, Z_NO_FLUSH);
		n = z.next_out - o;
		if (ret == Z_STREAM_END)
			break;
		if (n > MAX_INFLATED) {
			snprintf(why, whylen, "more than %llu MiB uncompressed",
				 MAX_INFLATED >> 20);
			goto fail;
		}
		if (ret == Z_BUF_ERROR || (ret == Z_OK && !z.avail_in && z.avail_out)) {
			snprintf(why, whylen, "gzip data ends early");
			goto fail;
		}
		if (ret != Z_OK) {
			snprintf(why, whylen, "corrupt gzip data (%s)", z.msg ? z.msg : "?");
			goto fail;
		}
	}
	inflateEnd(&z);
	*out = o;
	*outlen = n;
	return 0;
fail:
	inflateEnd(&z);
	free(o);
	return -1;
}

int pprof_read(const void *buf, size_t len, struct profile *p, char *why, size_t whylen)
{
	const uint8_t *b = buf;
	uint8_t *raw;
	size_t rawlen;
	int ret;

	if (len < 2 || b[0] != 0x1f || b[1] != 0x8b)
		return decode(b, len, p, why, whylen);
	if (inflate_all(b, len, &raw, &rawlen, why, whylen))
		return -1;
	ret = decode(raw, rawlen, p, why, whylen);
	free(raw);
	return ret;
}

int profile_read(const void *buf, size_t len, struct profile *p, char *why, size_t whylen)
{
	const uint8_t *b = buf;

	/* gzip, or a protobuf's first field: sample_type (1) or string_table (6) */
	if (len >= 2 && ((b[0] == 0x1f && b[1] == 0x8b) || b[0] == 0x0a || b[0] == 0x32))
		return pprof_read(buf, len, p, why, whylen);
	return collapsed_read(buf, len, p, why, whylen);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* pprof's profile.proto, written by hand: a string table, one function per distinct
 * (name, file), one location per frame, and per stack one sample with its labels. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hash.h"
#include "profile/protobuf.h"
#include "profile/writers.h"

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	VALUETYPE_TYPE = 1,
	VALUETYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
	MAPPING_ID = 1,
	MAPPING_FILENAME = 5,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

/* Open-addressing map from a 64-bit key to an index; keys are never 0 (callers add 1). */
struct idmap {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap, n;
};

static int idmap_grow(struct idmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	uint32_t *vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->keys[i])
			continue;
		for (j = hash_u64(m->keys[i]) & (cap - 1); keys[j]; j = (j + 1) & (cap - 1))
			;
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

/* The slot of key: found (1) or where it goes (0); -ENOMEM. */
static int idmap_slot(struct idmap *m, uint64_t key, size_t *slot)
{
	size_t j;

	if ((m->n + 1) * 2 > m->cap && idmap_grow(m))
		return -ENOMEM;
	for (j = hash_u64(key) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1))
		if (m->keys[j] == key) {
			*slot = j;
			return 1;
		}
	*slot = j;
	return 0;
}

static void idmap_free(struct idmap *m)
{
	free(m->keys);
	free(m->vals);
}

struct enc {
	struct pb_buf out;
	struct idmap strs; /* hash of the string -> index (collisions checked below) */
	const char **strv;
	size_t nstr, strcap;
	struct idmap funcs; /* name index << 32 | file index -> function id */
	uint32_t nfuncs;
	bool nomem;
};

/* Index of s in the string table, appended on first use. */
static uint64_t str(struct enc *e, const char *s)
{
	uint64_t h = hash_bytes(s, strlen(s), 0) | 1;
	size_t slot;
	int found;

	/* a colliding different string probes on with a perturbed key */
	for (;;) {
		found = idmap_slot(&e->strs, h, &slot);
		if (found < 0) {
			e->nomem = true;
			return 0;
		}
		if (!found || !strcmp(e->strv[e->strs.vals[slot]], s))
			break;
		h = hash_u64(h) | 1;
	}
	if (found)
		return e->strs.vals[slot];
	if (e->nstr == e->strcap) {
		size_t cap = e->strcap ? e->strcap * 2 : 1024;
		const char **v = realloc(e->strv, cap * sizeof(*v));

		if (!v) {
			e->nomem = true;
			return 0;
		}
		e->strv = v;
		e->strcap = cap;
	}
	e->strv[e->nstr] = strdup(s);
	if (!e->strv[e->nstr]) {
		e->nomem = true;
		return 0;
	}
	e->strs.keys[slot] = h;
	e->strs.vals[slot] = e->nstr;
	e->strs.n++;
	pb_field_bytes(&e->out, PROFILE_STRING_TABLE, s, strlen(s));
	return e->nstr++;
}

static void value_type(struct enc *e, uint32_t field, const char *type, const char *unit)
{
	struct pb_buf m = {};

	pb_field_varint(&m, VALUETYPE_TYPE, str(e, type));
	pb_field_varint(&m, VALUETYPE_UNIT, str(e, unit));
	pb_field_msg(&e->out, field, &m);
	pb_buf_free(&m);
}

/* Python frames: the function is (qualname, file) and the location adds the line. Other
 * frames are functions named by their text ("python3.12 (pid 1)", "<task t>"). */
static uint64_t function(struct enc *e, const struct frame_sym *s, const char *text)
{
	bool py = s->kind == FRAME_PYTHON;
	uint64_t name = str(e, py ? s->name : text);
	/* a Python frame always has a file name: that is how a reader tells it apart */
	uint64_t file = py ? str(e, s->file ? s->file : "?") : 0;
	struct pb_buf m = {};
	size_t slot;
	int found;

	found = idmap_slot(&e->funcs, (name << 32 | file) + 1, &slot);
	if (found < 0) {
		e->nomem = true;
		return 0;
	}
	if (found)
		return e->funcs.vals[slot];
	e->funcs.keys[slot] = (name << 32 | file) + 1;
	e->funcs.vals[slot] = ++e->nfuncs;
	e->funcs.n++;
	pb_field_varint(&m, FUNCTION_ID, e->nfuncs);
	pb_field_varint(&m, FUNCTION_NAME, name);
	if (file)
		pb_field_varint(&m, FUNCTION_FILENAME, file);
	if (py && s->start_line > 0)
		pb_field_varint(&m, FUNCTION_START_LINE, s->start_line);
	pb_field_msg(&e->out, PROFILE_FUNCTION, &m);
	pb_buf_free(&m);
	return e->nfuncs;
}

static void location(struct enc *e, uint32_t id, const struct frame_sym *s)
{
	char text[4096];
	struct pb_buf m = {}, line = {};
	uint64_t fn;

	frame_text(s, text, sizeof(text));
	fn = function(e, s, text);
	pb_field_varint(&line, LINE_FUNCTION_ID, fn);
	if (s->kind == FRAME_PYTHON && s->line > 0)
		pb_field_varint(&line, LINE_LINE, s->line);
	pb_field_varint(&m, LOCATION_ID, (uint64_t)id + 1);
	pb_field_varint(&m, LOCATION_MAPPING_ID, 1);
	pb_field_msg(&m, LOCATION_LINE, &line);
	pb_field_msg(&e->out, PROFILE_LOCATION, &m);
	pb_buf_free(&m);
	pb_buf_free(&line);
}

static void label_str(struct enc *e, struct pb_buf *sample, const char *key, const char *val)
{
	struct pb_buf m = {};

	pb_field_varint(&m, LABEL_KEY, str(e, key));
	pb_field_varint(&m, LABEL_STR, str(e, val));
	pb_field_msg(sample, SAMPLE_LABEL, &m);
	pb_buf_free(&m);
}

static void label_num(struct enc *e, struct pb_buf *sample, const char *key, int64_t val)
{
	struct pb_buf m = {};

	pb_field_varint(&m, LABEL_KEY, str(e, key));
	pb_field_varint(&m, LABEL_NUM, (uint64_t)val);
	pb_field_msg(sample, SAMPLE_LABEL, &m);
	pb_buf_free(&m);
}

static void sample(struct enc *e, struct profile *prof, const struct stack_ent *st,
		   const struct writer_meta *meta)
{
	struct pb_buf m = {}, packed = {};
	struct stack_labels l;
	uint64_t period = profile_period(prof);

	for (uint32_t i = st->n; i-- > 0;)
		pb_varint(&packed, (uint64_t)st->ids[i] + 1);
	pb_field_msg(&m, SAMPLE_LOCATION_ID, &packed);
	pb_buf_free(&packed);
	pb_varint(&packed, st->count);
	if (profile_weighted(prof)) {
		/* wall mode: each sample stands for its interval; the running task's CPU too */
		pb_varint(&packed, st->wall_ns);
		pb_varint(&packed, st->cpu_ns);
	} else {
		pb_varint(&packed, st->count * period);
	}
	pb_field_msg(&m, SAMPLE_VALUE, &packed);
	pb_buf_free(&packed);

	if (meta && meta->no_sample_labels)
		goto done;
	stack_labels(prof, st, &l);
	if (l.process) {
		label_num(e, &m, "pid", l.process->line);
		label_str(e, &m, "process", l.process->name);
	}
	if (l.thread) {
		if (l.thread->kind == FRAME_THREAD) /* a worker's frame carries no tid */
			label_num(e, &m, "tid", l.thread->line);
		label_str(e, &m, "thread", l.thread->name);
	}
	if (l.task)
		label_str(e, &m, "task", l.task->name);
	if (meta && meta->container && l.process) {
		const char *c = meta->container(meta->container_ctx, l.process->line);

		if (c && *c)
			label_str(e, &m, "container", c);
	}
done:
	pb_field_msg(&e->out, PROFILE_SAMPLE, &m);
	pb_buf_free(&m);
}

int pprof_encode(struct profile *prof, const struct writer_meta *meta, uint8_t **out, size_t *len)
{
	struct enc e = {};
	const struct stack_ent *st;
	size_t n, nframes;
	char text[64];
	uint64_t period = profile_period(prof);

	str(&e, ""); /* index 0 is the empty string */
	value_type(&e, PROFILE_SAMPLE_TYPE, "samples", "count");
	if (profile_weighted(prof))
		value_type(&e, PROFILE_SAMPLE_TYPE, "wall", "nanoseconds");
	value_type(&e, PROFILE_SAMPLE_TYPE, "cpu", "nanoseconds");
	/* one mapping for every location: symbolized already, pprof must not look for a binary */
	{
		struct pb_buf m = {};

		pb_field_varint(&m, MAPPING_ID, 1);
		pb_field_varint(&m, MAPPING_FILENAME, str(&e, "python"));
		pb_field_varint(&m, MAPPING_HAS_FUNCTIONS, 1);
		pb_field_varint(&m, MAPPING_HAS_FILENAMES, 1);
		pb_field_varint(&m, MAPPING_HAS_LINE_NUMBERS, 1);
		pb_field_msg(&e.out, PROFILE_MAPPING, &m);
		pb_buf_free(&m);
	}
	st = profile_stacks(prof, &n);
	nframes = profile_nframes(prof);
	for (size_t i = 0; i < nframes; i++)
		location(&e, i, profile_frame_sym(prof, i));
	for (size_t i = 0; i < n; i++)
		sample(&e, prof, &st[i], meta);
	value_type(&e, PROFILE_PERIOD_TYPE, profile_weighted(prof) ? "wall" : "cpu", "nanoseconds");
	pb_field_varint(&e.out, PROFILE_PERIOD, period);
	if (meta && meta->start_ns)
		pb_field_varint(&e.out, PROFILE_TIME_NANOS, meta->start_ns);
	if (meta && meta->duration_ns)
		pb_field_varint(&e.out, PROFILE_DURATION_NANOS, meta->duration_ns);
	pb_field_varint(&e.out, PROFILE_COMMENT, str(&e, "asyncbpf"));
	if (meta && meta->has_lost) {
		snprintf(text, sizeof(text), "lost records: %llu", (unsigned long long)meta->lost);
		pb_field_varint(&e.out, PROFILE_COMMENT, str(&e, text));
	}

	idmap_free(&e.strs);
	idmap_free(&e.funcs);
	for (size_t i = 0; i < e.nstr; i++)
		free((char *)e.strv[i]);
	free(e.strv);
	if (e.nomem || e.out.nomem) {
		pb_buf_free(&e.out);
		return -ENOMEM;
	}
	*out = e.out.data;
	*len = e.out.len;
	return 0;
}

int pprof_gzip(FILE *f, const uint8_t *raw, size_t len)
{
	z_stream z = {};
	uint8_t chunk[65536];
	int ret;

	/* 16 + window bits: a gzip header and trailer */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		errno = ENOMEM;
		return -1;
	}
	z.next_in = (uint8_t *)raw;
	do {
		size_t chunk_in = len > (1u << 30) ? 1u << 30 : len;

		z.avail_in = chunk_in;
		len -= chunk_in;
		do {
			z.next_out = chunk;
			z.avail_out = sizeof(chunk);
			ret = deflate(&z, len ? Z_NO_FLUSH : Z_FINISH);
			fwrite(chunk, 1, sizeof(chunk) - z.avail_out, f);
		} while (z.avail_out == 0);
	} while (len);
	deflateEnd(&z);
	if (ret != Z_STREAM_END) {
		errno = EIO;
		return -1;
	}
	return ferror(f) ? -1 : 0;
}

int write_pprof(FILE *f, struct profile *prof, const struct writer_meta *meta)
{
	uint8_t *raw;
	size_t len;
	int ret;

	if (pprof_encode(prof, meta, &raw, &len)) {
		errno = ENOMEM;
		return -1;
	}
	ret = pprof_gzip(f, raw, len);
	free(raw);
	return ret;
}

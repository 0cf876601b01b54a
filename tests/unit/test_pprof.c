// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The protobuf encoder and the pprof and collapsed readers: a profile survives the round
 * trip through each format, and damaged input is refused without a crash. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile/protobuf.h"
#include "profile/readers.h"
#include "tests/unit/unit.h"
#include "profile/writers.h"

static struct profile *sample_profile(void)
{
	struct profile *p = profile_new();
	uint32_t proc = profile_frame(p, FRAME_PROCESS, "python3.12", NULL, 4242);
	uint32_t main_th = profile_frame(p, FRAME_THREAD, "MainThread", NULL, 4242);
	uint32_t worker = profile_frame(p, FRAME_THREAD, "worker 1", NULL, 4250);
	uint32_t mod = profile_frame(p, FRAME_PYTHON, "<module>", "/srv/app.py", 90);
	uint32_t run = profile_frame(p, FRAME_PYTHON, "Handle._run", "/usr/lib/events.py", 84);
	uint32_t t1 = profile_frame(p, FRAME_TASK, "handler", NULL, 0);
	uint32_t h = profile_frame(p, FRAME_PYTHON, "handle", "/srv/app.py", 40);
	uint32_t t2 = profile_frame(p, FRAME_TASK, "fetch (a:b)", NULL, 0);
	uint32_t f = profile_frame(p, FRAME_PYTHON, "fetch", "/srv/a b:c.py", 30);
	uint32_t f2 = profile_frame(p, FRAME_PYTHON, "fetch", "/srv/a b:c.py", 31);
	uint32_t u = profile_frame(p, FRAME_SPECIAL, "[unknown]", NULL, 0);
	uint32_t utf = profile_frame(p, FRAME_PYTHON, "h\xc3\xa9llo.<locals>.f", "/x.py", 1);
	uint32_t s1[] = { proc, main_th, mod, run, t1, h, t2, f };
	uint32_t s2[] = { proc, main_th, mod, run, t1, h, t2, f2 };
	uint32_t nofile = profile_frame(p, FRAME_PYTHON, "nofile", NULL, 5);
	uint32_t s3[] = { proc, worker, nofile, u };
	uint32_t s4[] = { proc, worker, mod, utf };

	profile_set_start_line(p, f, 28);
	profile_set_start_line(p, f2, 28);
	profile_set_period(p, 10101010);
	profile_add(p, s1, 8, 41);
	profile_add(p, s2, 8, 3);
	profile_add(p, s3, 4, 7);
	profile_add(p, s4, 4, 1);
	return p;
}

static char *collapsed(struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	write_collapsed(m, p);
	fclose(m);
	return buf;
}

static void test_varints(void)
{
	static const uint64_t vals[] = { 0, 1, 127, 128, 300, 1ull << 35, UINT64_MAX };
	struct pb_buf b = {};
	struct pb_reader r;
	struct pb_field f;
	size_t i = 0;

	for (size_t k = 0; k < sizeof(vals) / sizeof(vals[0]); k++)
		pb_field_varint(&b, k + 1, vals[k]);
	pb_field_bytes(&b, 99, "abc", 3);
	r = (struct pb_reader){ b.data, b.data + b.len };
	while (i < sizeof(vals) / sizeof(vals[0]) && pb_next(&r, &f) > 0) {
		CHECK(f.num == i + 1 && f.wire == PB_VARINT && f.v == vals[i],
		      "field %zu: %u/%d/%llu", i, f.num, f.wire, (unsigned long long)f.v);
		i++;
	}
	CHECK(i == sizeof(vals) / sizeof(vals[0]), "read %zu varints", i);
	CHECK(pb_next(&r, &f) == 1 && f.num == 99 && f.len == 3 && !memcmp(f.data, "abc", 3),
	      "bytes field");
	CHECK(pb_next(&r, &f) == 0, "end");
	/* a length past the end, a varint cut short */
	r = (struct pb_reader){ (const uint8_t *)"\x0a\x05"
						 "ab",
				(const uint8_t *)"\x0a\x05"
						 "ab" +
					4 };
	CHECK(pb_next(&r, &f) == -1, "length past the end accepted");
	r = (struct pb_reader){ (const uint8_t *)"\x08\xff", (const uint8_t *)"\x08\xff" + 2 };
	CHECK(pb_next(&r, &f) == -1, "truncated varint accepted");
	pb_buf_free(&b);
}

static void test_pprof_round_trip(void)
{
	struct profile *p = sample_profile(), *q = profile_new();
	char *want = collapsed(p), *got, why[256] = "";
	uint8_t *raw;
	size_t len;
	const struct stack_ent *st;
	size_t n;

	CHECK(!pprof_encode(p, NULL, &raw, &len), "encode");
	CHECK(!pprof_read(raw, len, q, why, sizeof(why)), "read: %s", why);
	got = collapsed(q);
	CHECK(!strcmp(want, got), "round trip differs:\n%s---\n%s", want, got);
	CHECK(profile_period(q) == 10101010, "period %llu", (unsigned long long)profile_period(q));
	st = profile_stacks(q, &n);
	for (size_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < st[i].n; k++) {
			const struct frame_sym *s = profile_frame_sym(q, st[i].ids[k]);

			if (s->kind == FRAME_PYTHON && !strcmp(s->name, "fetch"))
				CHECK(s->start_line == 28, "start line %d", s->start_line);
		}

	/* every truncation and many single-byte changes: refused or read, never a crash */
	for (size_t cut = 0; cut < len; cut++) {
		struct profile *t = profile_new();

		pprof_read(raw, cut, t, why, sizeof(why));
		profile_free(t);
	}
	for (size_t i = 0; i < len; i++) {
		uint8_t save = raw[i];

		for (int v = 0; v < 256; v += 37) {
			struct profile *t = profile_new();

			raw[i] = v;
			pprof_read(raw, len, t, why, sizeof(why));
			profile_free(t);
		}
		raw[i] = save;
	}
	CHECK(pprof_read("\x1f\x8b\x08\x00", 4, q, why, sizeof(why)) == -1, "bad gzip accepted");
	free(raw);
	free(want);
	free(got);
	profile_free(p);
	profile_free(q);
}

static void test_gzip_file(void)
{
	struct profile *p = sample_profile(), *q = profile_new();
	char *buf = NULL, *want = collapsed(p), *got, why[256] = "";
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	CHECK(!write_pprof(m, p, NULL), "write_pprof");
	fclose(m);
	CHECK(len > 2 && (uint8_t)buf[0] == 0x1f && (uint8_t)buf[1] == 0x8b, "gzip magic");
	CHECK(!profile_read(buf, len, q, why, sizeof(why)), "read: %s", why);
	got = collapsed(q);
	CHECK(!strcmp(want, got), "gzip round trip differs");
	free(buf);
	free(want);
	free(got);
	profile_free(p);
	profile_free(q);
}

static void test_collapsed_round_trip(void)
{
	struct profile *p = sample_profile(), *q = profile_new();
	char *want = collapsed(p), *got, why[256] = "";

	CHECK(!collapsed_read(want, strlen(want), q, why, sizeof(why)), "read: %s", why);
	got = collapsed(q);
	CHECK(!strcmp(want, got), "round trip differs:\n%s---\n%s", want, got);
	free(got);
	profile_free(q);

	static const char *bad[] = { "a;b\n", "a;b x\n", "a;;b 1\n",
				     "a;b 99999999999999999999999\n", "a\0b 1\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		q = profile_new();
		why[0] = 0;
		CHECK(collapsed_read(bad[i], strlen(bad[i]) + (i == 4 ? 4 : 0), q, why,
				     sizeof(why)) == -1 &&
			      why[0],
		      "bad input %zu accepted", i);
		profile_free(q);
	}
	for (size_t cut = 0; cut < strlen(want); cut++) {
		q = profile_new();
		collapsed_read(want, cut, q, why, sizeof(why));
		profile_free(q);
	}
	free(want);
	profile_free(p);
}

static const char *rename_task(void *ctx, const struct frame_sym *f, const char **file)
{
	(void)ctx;
	if (f->kind == FRAME_TASK && f->file) {
		*file = NULL;
		return "handler";
	}
	return f->kind == FRAME_TASK && !strcmp(f->name, "fetch (a:b)") ? "handler" : NULL;
}

/* profile_renamed: a renamed frame takes its new name, stacks that become one add up,
 * frames no stack holds are gone, and the rest (start lines, period, weights) stays. */
static void test_renamed(void)
{
	struct profile *p = sample_profile(), *q;
	uint32_t proc = profile_frame(p, FRAME_PROCESS, "python3.12", NULL, 4242);
	uint32_t th = profile_frame(p, FRAME_THREAD, "MainThread", NULL, 4242);
	uint32_t t1 = profile_frame(p, FRAME_TASK, "handler", NULL, 0);
	uint32_t t2 = profile_frame(p, FRAME_TASK, "fetch (a:b)", NULL, 0);
	uint32_t keyed = profile_frame(p, FRAME_TASK, "[unknown]", "1 2 Task-3", 0);
	uint32_t a[] = { proc, th, t1 }, b[] = { proc, th, t2 }, c[] = { proc, th, keyed };
	size_t n, nframes;
	char *text;

	profile_frame(p, FRAME_SPECIAL, "[held by no stack]", NULL, 0);
	profile_add(p, a, 3, 5);
	profile_add(p, b, 3, 2);
	profile_add(p, c, 3, 4);
	nframes = profile_nframes(p);
	q = profile_renamed(p, rename_task, NULL);
	CHECK(q, "profile_renamed failed");
	if (!q) {
		profile_free(p);
		return;
	}
	text = collapsed(q);
	CHECK(strstr(text, "python3.12 (pid 4242);MainThread (tid 4242);<task handler> 11\n"),
	      "the two stacks are one: %s", text);
	CHECK(!strstr(text, "fetch (a:b)"), "the old name stays: %s", text);
	free(text);
	CHECK(profile_total(q) == profile_total(p), "total %llu, was %llu",
	      (unsigned long long)profile_total(q), (unsigned long long)profile_total(p));
	CHECK(profile_period(q) == profile_period(p), "period %llu",
	      (unsigned long long)profile_period(q));
	CHECK(profile_nframes(q) == nframes - 3, "%zu frames of %zu", profile_nframes(q), nframes);
	for (size_t i = 0; i < profile_nframes(q); i++) {
		const struct frame_sym *f = profile_frame_sym(q, (uint32_t)i);

		CHECK(strcmp(f->name, "[held by no stack]"), "a frame no stack holds is kept");
		CHECK(f->kind != FRAME_TASK || !f->file, "task frame %s keeps file %s", f->name,
		      f->file);
		if (f->kind == FRAME_PYTHON && !strcmp(f->name, "fetch"))
			CHECK(f->start_line == 28, "fetch starts at line %d", f->start_line);
	}
	profile_stacks(q, &n);
	CHECK(n == 5, "%zu stacks, not 5 (three of seven are one)", n);
	profile_free(q);
	profile_free(p);
}

int main(void)
{
	test_varints();
	test_pprof_round_trip();
	test_gzip_file();
	test_collapsed_round_trip();
	test_renamed();
	return unit_exit();
}

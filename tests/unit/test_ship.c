// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The agent's series split (one Pyroscope series per service and container, each part
 * within the sample and size limits, nothing lost but what cannot fit) and its queue
 * (bounds, oldest dropped first, a busy item kept, counters exact). */
#include <stdlib.h>
#include <string.h>

#include "ship/series.h"
#include "ship/shipq.h"
#include "tests/unit/unit.h"

struct seen {
	size_t parts, max_stacks, max_len;
	uint64_t samples;
	char names[8][256];
	size_t nnames;
	uint64_t per_name[8];
};

static int on_part(void *ctx, const struct series_part *p)
{
	struct seen *s = ctx;
	size_t i;

	s->parts++;
	s->samples += p->samples;
	if (p->stacks > s->max_stacks)
		s->max_stacks = p->stacks;
	if (p->len > s->max_len)
		s->max_len = p->len;
	for (i = 0; i < s->nnames && strcmp(s->names[i], p->name); i++)
		;
	if (i == s->nnames && i < 8)
		snprintf(s->names[s->nnames++], sizeof(s->names[0]), "%s", p->name);
	if (i < 8)
		s->per_name[i] += p->samples;
	return 0;
}

/* n distinct stacks in each of two processes (one in a container) of 4 frames each */
static struct profile *many_stacks(size_t n)
{
	struct profile *p = profile_new();
	uint32_t host = profile_process_frame(p, "python3.12", 10, 0, NULL);
	uint32_t cont = profile_process_frame(p, "python3.11", 20, 1, "3f2a1b9c0d4e");
	uint32_t th = profile_frame(p, FRAME_THREAD, "MainThread", NULL, 10);
	char name[64];

	profile_set_period(p, 10000000);
	for (size_t i = 0; i < n; i++) {
		uint32_t ids[4] = { host, th, 0, 0 };

		snprintf(name, sizeof(name), "f%zu", i);
		ids[2] = profile_frame(p, FRAME_TASK, "handler", NULL, 0);
		ids[3] = profile_frame(p, FRAME_PYTHON, name, "/srv/app.py", (int)i + 1);
		profile_add(p, ids, 4, 1 + i % 3);
		ids[0] = cont;
		profile_add(p, ids, 4, 1);
	}
	return p;
}

static void test_split_limits(void)
{
	struct profile *p = many_stacks(20000);
	uint64_t total = profile_total(p);
	struct series_opts o = { .host = "node-1",
				 .max_samples = SHIP_MAX_SAMPLES,
				 .max_bytes = SHIP_MAX_BYTES };
	struct series_result res;
	struct seen s = {};

	CHECK(!series_split(p, &o, NULL, on_part, &s, &res), "split");
	CHECK(res.series == 2 && s.nnames == 2, "%zu series", res.series);
	CHECK(s.max_stacks <= SHIP_MAX_SAMPLES, "%zu stacks in a part", s.max_stacks);
	CHECK(s.parts == 4 && res.parts == 4, "%zu parts (20000 stacks per series)", s.parts);
	CHECK(s.samples == total && !res.dropped, "%llu of %llu samples",
	      (unsigned long long)s.samples, (unsigned long long)total);
	CHECK(!strcmp(s.names[0], "3f2a1b9c0d4e{service_name=3f2a1b9c0d4e,host=node-1,"
				  "container_id=3f2a1b9c0d4e}"),
	      "%s", s.names[0]);
	CHECK(!strcmp(s.names[1], "python3.12{service_name=python3.12,host=node-1}"), "%s",
	      s.names[1]);
	CHECK(s.per_name[0] == 20000, "%llu", (unsigned long long)s.per_name[0]);
	profile_free(p);

	/* a small byte limit: halves until every part fits */
	p = many_stacks(3000);
	memset(&s, 0, sizeof(s));
	o.max_bytes = 16 << 10;
	CHECK(!series_split(p, &o, NULL, on_part, &s, &res), "split");
	CHECK(s.max_len <= 16 << 10 && s.parts > 8, "%zu parts, largest %zu bytes", s.parts,
	      s.max_len);
	CHECK(s.samples == profile_total(p) && !res.dropped, "samples kept");
	profile_free(p);
}

/* One stack larger than the byte limit is dropped and counted; the rest goes. */
static void test_split_drops_what_cannot_fit(void)
{
	struct profile *p = profile_new();
	uint32_t proc = profile_process_frame(p, "python3.12", 10, 0, NULL);
	uint32_t th = profile_frame(p, FRAME_THREAD, "MainThread", NULL, 10);
	uint32_t big[200] = { proc, th }, small[3] = { proc, th };
	char name[2048];
	struct series_opts o = { .service = "svc", .max_samples = 100, .max_bytes = 64 << 10 };
	struct series_result res;
	struct seen s = {};

	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	for (int i = 2; i < 200; i++) {
		name[0] = (char)('a' + i % 26);
		name[1] = (char)('a' + i / 26);
		big[i] = profile_frame(p, FRAME_PYTHON, name, "/srv/big.py", i);
	}
	small[2] = profile_frame(p, FRAME_PYTHON, "small", "/srv/app.py", 1);
	profile_add(p, big, 200, 7);
	profile_add(p, small, 3, 5);
	CHECK(!series_split(p, &o, NULL, on_part, &s, &res), "split");
	CHECK(res.dropped == 7 && s.samples == 5, "dropped %llu, sent %llu",
	      (unsigned long long)res.dropped, (unsigned long long)s.samples);
	CHECK(s.nnames == 1 && !strncmp(s.names[0], "svc{service_name=svc", 20), "%s", s.names[0]);
	profile_free(p);
}

static void test_names(void)
{
	char out[64];

	series_service_name(out, sizeof(out), "my app:v1/x");
	CHECK(!strcmp(out, "my_app_v1/x"), "%s", out);
	series_label_value(out, sizeof(out), "  a,b}c{d\n ");
	CHECK(!strcmp(out, "a_b_c_d_"), "'%s'", out);
	CHECK(!series_check_label("env", "prod"), "env=prod");
	CHECK(!series_check_label("k8s.ns", "a b"), "k8s.ns");
	CHECK(series_check_label("a-b", "x"), "a-b");
	CHECK(series_check_label("__name__", "x"), "__name__");
	CHECK(series_check_label("service_name", "x"), "service_name");
	CHECK(series_check_label("env", "a,b"), "a,b");
	CHECK(series_check_label("env", " a"), "leading space");
	CHECK(series_check_label("env", ""), "empty");
}

static struct ship_item *item(uint64_t from_s, size_t len)
{
	return ship_item_new(calloc(1, len), len, strdup("x"), from_s * 1000000000ull,
			     (from_s + 1) * 1000000000ull, 1);
}

static void test_queue(void)
{
	struct shipq q;
	struct ship_item *first;
	uint64_t now = 10000 * 1000000000ull;

	shipq_init(&q, 3, 1000, 3600);
	first = item(9000, 10);
	shipq_push_locked(&q, first, now);
	for (int i = 1; i < 5; i++)
		shipq_push_locked(&q, item(9000 + i, 10), now);
	CHECK(q.n == 3 && q.dropped_full == 2 && q.pushed == 5, "n %zu dropped %llu", q.n,
	      (unsigned long long)q.dropped_full);
	CHECK(q.head->from_ns == 9002 * 1000000000ull, "the oldest went first");
	/* the item being sent stays, the next oldest goes */
	q.head->busy = true;
	first = q.head;
	shipq_push_locked(&q, item(9005, 10), now);
	CHECK(q.head == first && q.head->next->from_ns == 9004 * 1000000000ull,
	      "busy head kept, 9003 dropped");
	first->busy = false;
	/* bytes: one big item pushes out all the older ones but itself */
	shipq_push_locked(&q, item(9006, 995), now);
	CHECK(q.n == 1 && q.bytes == 995, "n %zu bytes %zu", q.n, q.bytes);
	/* age: an hour after its start it goes */
	shipq_expire_locked(&q, (9006 + 3601) * 1000000000ull);
	CHECK(q.n == 0 && q.dropped_old == 1, "expired");
	CHECK(q.pushed == q.dropped_full + q.dropped_old + q.n, "every item counted: %llu",
	      (unsigned long long)q.pushed);
	shipq_push_locked(&q, item(9007, 10), now);
	shipq_destroy(&q);
	CHECK(q.dropped_exit == 1, "left at exit");
}

int main(void)
{
	test_split_limits();
	test_split_drops_what_cannot_fit();
	test_names();
	test_queue();
	return unit_exit();
}

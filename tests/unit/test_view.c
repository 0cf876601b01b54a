// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* view/: the tables of a hand-made profile, filters and merges, the sliding window (and
 * holding it), text fitted by display width, and the live view's screen and keys. */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view/tables.h"
#include "view/textfit.h"
#include "view/topview.h"
#include "tests/unit/unit.h"
#include "view/window.h"

/* pid 10: A -> B: leaf 6 times, A -> C: other 3 times; pid 20: no task, hot 1 time */
static struct profile *sample_profile(void)
{
	struct profile *p = profile_new();
	uint32_t p10 = profile_process_frame(p, "python3", 10, 10, NULL);
	uint32_t p20 = profile_process_frame(p, "worker", 20, 20, "abc123");
	uint32_t th = profile_frame(p, FRAME_THREAD, "MainThread", NULL, 10);
	uint32_t main_ = profile_frame(p, FRAME_PYTHON, "main", "/srv/app.py", 5);
	uint32_t ta = profile_frame(p, FRAME_TASK, "A", NULL, 0);
	uint32_t tb = profile_frame(p, FRAME_TASK, "B", NULL, 0);
	uint32_t tc = profile_frame(p, FRAME_TASK, "C", NULL, 0);
	uint32_t leaf = profile_frame(p, FRAME_PYTHON, "leaf", "/srv/app.py", 12);
	uint32_t leaf2 = profile_frame(p, FRAME_PYTHON, "leaf", "/srv/app.py", 13);
	uint32_t other = profile_frame(p, FRAME_PYTHON, "other", "/srv/lib.py", 3);
	uint32_t hot = profile_frame(p, FRAME_PYTHON, "hot", "/srv/w.py", 1);
	uint32_t s1[] = { p10, th, main_, ta, tb, leaf }, s2[] = { p10, th, main_, ta, tb, leaf2 };
	uint32_t s3[] = { p10, th, main_, ta, tc, other }, s4[] = { p20, th, hot };

	profile_set_start_line(p, leaf, 11);
	profile_set_start_line(p, leaf2, 11);
	profile_set_period(p, 10000000);
	profile_add(p, s1, 6, 4);
	profile_add(p, s2, 6, 2);
	profile_add(p, s3, 6, 3);
	profile_add(p, s4, 3, 1);
	return p;
}

static const struct func_row *func(const struct tables *t, const char *key)
{
	for (size_t i = 0; i < t->nfuncs; i++)
		if (!strcmp(t->funcs[i].key, key))
			return &t->funcs[i];
	return NULL;
}

static void test_tables(void)
{
	struct profile *p = sample_profile();
	struct path_style ps = { " > ", true };
	struct stack_filter f = { .pid = 10 };
	struct tables t;
	const struct func_row *r;
	regex_t re;

	CHECK(!tables_build(&t, p, NULL, &ps), "build");
	CHECK(t.total == 10 && t.samples == 10 && t.in_tasks == 9, "total %llu",
	      (unsigned long long)t.total);
	r = func(&t, "leaf (/srv/app.py)");
	CHECK(r && r->self == 6 && r->total == 6 && r->sym->start_line == 11, "leaf at any line");
	r = func(&t, "main (/srv/app.py)");
	CHECK(r && r->self == 0 && r->total == 9, "main's total");
	tables_sort_funcs(&t, BY_SELF);
	CHECK(!strcmp(t.funcs[0].key, "leaf (/srv/app.py)"), "by self: %s", t.funcs[0].key);
	tables_sort_funcs(&t, BY_TOTAL);
	CHECK(t.funcs[0].total == 10, "by total: %s", t.funcs[0].key);
	tables_sort_paths(&t, false);
	CHECK(t.npaths == 2 && !strcmp(t.paths[0].key, "A > B: leaf") && t.paths[0].weight == 6 &&
		      !strcmp(t.paths[1].key, "A > C: other"),
	      "paths %s", t.npaths ? t.paths[0].key : "-");
	tables_sort_procs(&t, PROC_BY_WEIGHT);
	CHECK(t.nprocs == 2 && t.procs[0].pid == 10 && t.procs[0].weight == 9 &&
		      t.procs[1].pid == 20 && !strcmp(t.procs[1].sym->file, "abc123"),
	      "procs");
	tables_free(&t);

	CHECK(!tables_build(&t, p, &f, &ps) && t.total == 9 && t.nprocs == 1, "pid filter");
	tables_free(&t);
	f = (struct stack_filter){ .task_path = "A > C: other" };
	CHECK(!tables_build(&t, p, &f, &ps) && t.total == 3 && !func(&t, "leaf (/srv/app.py)"),
	      "task path filter");
	tables_free(&t);
	regcomp(&re, "^hot ", REG_EXTENDED | REG_NOSUB);
	f = (struct stack_filter){ .re = &re };
	CHECK(!tables_build(&t, p, &f, &ps) && t.total == 1 && t.procs[0].pid == 20, "regex");
	tables_free(&t);

	/* a merge keeps what the filter keeps, process frames whole */
	{
		struct profile *m = profile_new();
		size_t n;

		CHECK(!profile_merge(m, p, &f, NULL) && !profile_merge(m, p, &f, NULL), "merge");
		CHECK(profile_total(m) == 2 && profile_period(m) == 10000000, "merged total");
		profile_stacks_unsorted(m, &n);
		CHECK(n == 1 && !strcmp(profile_frame_sym(m, 0)->file, "abc123"), "merged frames");
		profile_free(m);
	}
	regfree(&re);
	profile_free(p);
}

static void test_window(void)
{
	struct window *w = window_new(2);
	struct window_span s;
	const struct profile *p;

	for (int i = 0; i < 3; i++)
		CHECK(!window_push(w, sample_profile(), 1000000000, i), "push");
	p = window_recent(w, &s);
	CHECK(p && profile_total(p) == 20 && s.cuts == 2 && s.lost == 3 &&
		      s.duration_ns == 2000000000,
	      "recent: %llu", p ? (unsigned long long)profile_total(p) : 0);
	p = window_all(w, &s);
	CHECK(profile_total(p) == 30 && s.cuts == 3, "all");
	window_hold(w, true);
	window_push(w, sample_profile(), 1000000000, 0);
	window_push(w, sample_profile(), 1000000000, 0);
	CHECK(profile_total(window_all(w, &s)) == 30, "held: all unchanged");
	window_recent(w, &s);
	CHECK(s.lost == 3, "held: recent unchanged");
	window_hold(w, false);
	CHECK(profile_total(window_all(w, &s)) == 50 && s.cuts == 5, "released: all");
	window_recent(w, &s);
	CHECK(s.lost == 0 && s.cuts == 2, "released: the last two cuts");
	window_free(w);
}

static void test_textfit(void)
{
	struct textline l;

	text_init(&l, 5, true);
	text_add(&l, "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"); /* three wide characters */
	CHECK(l.width == 5 && !strcmp(l.buf, "\xe6\x97\xa5\xe6\x9c\xac\xe2\x80\xa6"), "wide: %s",
	      l.buf);
	text_init(&l, 10, true);
	text_add(&l, "a\tb\xff\xc3(");
	CHECK(!strcmp(l.buf, "a?b?"
			     "?(") &&
		      l.width == 6,
	      "controls and bad bytes: %s", l.buf);
	text_init(&l, 4, true);
	text_put(&l, "abcdef", 4, true);
	CHECK(!strcmp(l.buf, "\xe2\x80\xa6"
			     "def"),
	      "from the left: %s", l.buf);
	text_init(&l, 4, false);
	text_put(&l, "\xc3\xa9t\xc3\xa9s", 4, false);
	CHECK(!strcmp(l.buf, "??t~"), "ascii: each byte beyond ASCII a ?: %s", l.buf);
	CHECK(text_width("\xe6\x97\xa5x", true) == 3, "width");
}

struct screen {
	char lines[40][TEXT_MAX_COLS * 4 + 8];
	int rows;
};

static void keep_line(void *ctx, int row, const char *text, enum tv_attr a)
{
	struct screen *s = ctx;

	(void)a;
	snprintf(s->lines[row], sizeof(s->lines[row]), "%s", text);
	if (row >= s->rows)
		s->rows = row + 1;
}

static void test_topview(void)
{
	struct topview_opts o = { .utf8 = true, .freq = 99, .window_s = 10 };
	struct topview *tv = topview_new(&o);
	struct profile *p = sample_profile();
	struct tv_status st = { .recorded = 10, .nprocs = 2, .message = "warning: x" };
	struct tv_proc procs[] = { { .pid = 10, .version = "3.12.1" } };
	struct screen *s = calloc(1, sizeof(*s));

	CHECK(!topview_update(tv, p, 1000000000, p, 1000000000, &st, procs, 1), "update");
	topview_draw(tv, 80, 12, keep_line, s);
	CHECK(s->rows == 12 && strstr(s->lines[3], "leaf (/srv/app.py:11)"), "hottest: %s",
	      s->lines[3]);
	CHECK(text_width(s->lines[0], true) == 80 && strstr(s->lines[10], "warning: x"),
	      "status: %s", s->lines[10]);
	for (int i = 3; i < 9; i++)
		CHECK(!strstr(s->lines[i], "<task") && !strstr(s->lines[i], "(pid"),
		      "only functions");
	topview_key(tv, 's', 12);
	topview_draw(tv, 80, 12, keep_line, s);
	CHECK(strstr(s->lines[3], "90.00   ") && strstr(s->lines[2], "TOTAL%\xe2\x96\xbc"),
	      "by total: %s", s->lines[3]);
	topview_key(tv, 't', 12);
	topview_draw(tv, 80, 12, keep_line, s);
	CHECK(strstr(s->lines[3], "A \xe2\x86\x92 B: leaf"), "paths: %s", s->lines[3]);
	topview_key(tv, TVK_DOWN, 12);
	topview_key(tv, TVK_ENTER, 12);
	topview_draw(tv, 80, 12, keep_line, s);
	CHECK(strstr(s->lines[0], "functions") && strstr(s->lines[1], "task path A") &&
		      strstr(s->lines[4], "other (/srv/lib.py)") && !strstr(s->lines[5], "leaf"),
	      "narrowed: %s | %s", s->lines[1], s->lines[3]);
	topview_key(tv, TVK_BACKSPACE, 12);
	topview_key(tv, 'p', 12);
	topview_draw(tv, 80, 12, keep_line, s);
	CHECK(strstr(s->lines[3], "python3") && strstr(s->lines[3], "3.12.1") &&
		      strstr(s->lines[4], "abc123"),
	      "processes: %s", s->lines[3]);
	for (const char *k = "/^hot \n"; *k; k++)
		topview_key(tv, *k == '\n' ? TVK_ENTER : (uint32_t)*k, 12);
	topview_draw(tv, 80, 12, keep_line, s);
	CHECK(strstr(s->lines[1], "filter /^hot /") && strstr(s->lines[3], "worker") &&
		      !s->lines[4][strspn(s->lines[4], " ")],
	      "filtered: %s", s->lines[3]);
	for (const char *k = "/(\n"; *k; k++)
		topview_key(tv, *k == '\n' ? TVK_ENTER : (uint32_t)*k, 12);
	topview_draw(tv, 80, 12, keep_line, s);
	CHECK(strstr(s->lines[10], "invalid regular expression"), "bad regex: %s", s->lines[10]);
	topview_draw(tv, 20, 4, keep_line, s);
	CHECK(strstr(s->lines[0], "asyncbpf-top: ter"), "tiny: %s", s->lines[0]);
	topview_draw(tv, 30, 10, keep_line, s);
	for (int i = 0; i < 10; i++)
		CHECK(text_width(s->lines[i], true) == 30, "narrow line %d: %s", i, s->lines[i]);
	CHECK(topview_key(tv, 'q', 12) == TVA_QUIT, "q");
	free(s);
	topview_free(tv);
	profile_free(p);
}

int main(void)
{
	setlocale(LC_CTYPE, "C.UTF-8");
	test_tables();
	test_window();
	test_textfit();
	test_topview();
	return unit_exit();
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* asyncbpf-top's view: state, keys, screen lines and the text snapshot; see topview.h. */
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "view/tables.h"
#include "view/textfit.h"
#include "view/topview.h"

/* title, filter line, header; status and help lines */
#define ROWS_ABOVE 3
#define ROWS_BELOW 2
#define INPUT_MAX  256
#define MAX_PROCS  65536

/* sort orders of each table, in the order 's' steps through them */
static const char *const sort_names[][3] = {
	[TV_FUNCS] = { "own", "total", "name" },
	[TV_PATHS] = { "share", "name", NULL },
	[TV_PROCS] = { "share", "pid", "name" },
};

struct topview {
	struct topview_opts o;
	struct path_style ps;
	const struct profile *recent, *all;
	uint64_t recent_ns, all_ns;
	struct tv_status st;
	char message[512];
	struct tv_proc *procs; /* by pid */
	size_t nprocs;
	struct tables t;
	bool built;
	enum tv_table table;
	int sort[3];
	bool since_start, paused;
	regex_t re;
	bool has_re;
	char filter[INPUT_MAX];
	int narrow_pid;
	char *narrow_path;
	char narrowed[2]; /* 'p' (process) and 't' (task path), in the order they were set */
	int nnarrowed;
	int sel, first; /* selected row, first row shown */
	bool prompt;
	char input[INPUT_MAX];
	char error[INPUT_MAX + 192];
};

struct topview *topview_new(const struct topview_opts *o)
{
	struct topview *tv = calloc(1, sizeof(*tv));

	if (!tv)
		return NULL;
	tv->o = *o;
	tv->ps = (struct path_style){ o->utf8 ? " \xe2\x86\x92 " : " -> ", true };
	return tv;
}

void topview_free(struct topview *tv)
{
	if (!tv)
		return;
	tables_free(&tv->t);
	if (tv->has_re)
		regfree(&tv->re);
	free(tv->narrow_path);
	free(tv->procs);
	free(tv);
}

static const struct profile *shown(const struct topview *tv)
{
	return tv->since_start ? tv->all : tv->recent;
}

static void sort_table(struct topview *tv)
{
	int s = tv->sort[tv->table];

	if (tv->table == TV_FUNCS)
		tables_sort_funcs(&tv->t, s == 0 ? BY_SELF : s == 1 ? BY_TOTAL : BY_NAME);
	else if (tv->table == TV_PATHS)
		tables_sort_paths(&tv->t, s == 1);
	else
		tables_sort_procs(&tv->t, s == 0   ? PROC_BY_WEIGHT
					  : s == 1 ? PROC_BY_PID
						   : PROC_BY_NAME);
}

static size_t nrows(const struct topview *tv)
{
	return tv->table == TV_FUNCS   ? tv->t.nfuncs
	       : tv->table == TV_PATHS ? tv->t.npaths
				       : tv->t.nprocs;
}

/* The tables of what is shown, filtered and narrowed, in the current order. */
static int rebuild(struct topview *tv)
{
	struct stack_filter f = { .pid = tv->narrow_pid,
				  .task_path = tv->narrow_path,
				  .re = tv->has_re ? &tv->re : NULL };
	int ret = 0;

	tables_free(&tv->t);
	tv->built = false;
	if (shown(tv)) {
		ret = tables_build(&tv->t, shown(tv), &f, &tv->ps);
		tv->built = !ret;
	}
	/* tasks and processes have their tables; threads are no functions */
	for (size_t i = 0, w = 0; i < tv->t.nfuncs; i++) {
		enum frame_kind k = tv->t.funcs[i].sym->kind;

		if (k == FRAME_PYTHON || k == FRAME_SPECIAL || k == FRAME_NATIVE)
			tv->t.funcs[w++] = tv->t.funcs[i];
		else
			free(tv->t.funcs[i].key);
		if (i + 1 == tv->t.nfuncs)
			tv->t.nfuncs = w;
	}
	sort_table(tv);
	if (tv->sel >= (int)nrows(tv))
		tv->sel = nrows(tv) ? (int)nrows(tv) - 1 : 0;
	return ret;
}

static int by_pid(const void *a, const void *b)
{
	const struct tv_proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static const struct tv_proc *find_proc(const struct topview *tv, int pid)
{
	struct tv_proc key = { .pid = pid };

	return tv->nprocs ? bsearch(&key, tv->procs, tv->nprocs, sizeof(key), by_pid) : NULL;
}

/* Remembers procs: new pids are added, known ones updated. */
static int remember(struct topview *tv, const struct tv_proc *procs, size_t n)
{
	struct tv_proc *m;
	size_t k = tv->nprocs;

	if (tv->nprocs + n > MAX_PROCS)
		tv->nprocs = k = 0; /* a long churn: forget the exited */
	m = realloc(tv->procs, (tv->nprocs + n + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	tv->procs = m;
	for (size_t i = 0; i < n; i++) {
		struct tv_proc *known = (struct tv_proc *)find_proc(tv, procs[i].pid);

		if (known)
			*known = procs[i];
		else
			m[k++] = procs[i];
	}
	tv->nprocs = k;
	qsort(tv->procs, tv->nprocs, sizeof(*tv->procs), by_pid);
	return 0;
}

int topview_update(struct topview *tv, const struct profile *recent, uint64_t recent_ns,
		   const struct profile *all, uint64_t all_ns, const struct tv_status *st,
		   const struct tv_proc *procs, size_t nprocs)
{
	tv->recent = recent;
	tv->all = all;
	tv->recent_ns = recent_ns;
	tv->all_ns = all_ns;
	tv->st = *st;
	if (st->message)
		snprintf(tv->message, sizeof(tv->message), "%s", st->message);
	tv->st.message = NULL;
	if (remember(tv, procs, nprocs))
		return -ENOMEM;
	return rebuild(tv);
}

bool topview_paused(const struct topview *tv)
{
	return tv->paused;
}

static void widen(struct topview *tv)
{
	if (!tv->nnarrowed)
		return;
	if (tv->narrowed[--tv->nnarrowed] == 'p') {
		tv->narrow_pid = 0;
	} else {
		free(tv->narrow_path);
		tv->narrow_path = NULL;
	}
}

static void narrow_to(struct topview *tv, char what)
{
	int other = 0;

	/* narrowing again to the same kind replaces the earlier one */
	for (int i = 0; i < tv->nnarrowed; i++)
		if (tv->narrowed[i] != what)
			tv->narrowed[other++] = tv->narrowed[i];
	tv->narrowed[other++] = what;
	tv->nnarrowed = other;
}

static void narrow(struct topview *tv)
{
	if (tv->sel >= (int)nrows(tv))
		return;
	if (tv->table == TV_PROCS) {
		tv->narrow_pid = tv->t.procs[tv->sel].pid;
		narrow_to(tv, 'p');
	} else if (tv->table == TV_PATHS) {
		char *p = strdup(tv->t.paths[tv->sel].key);

		if (!p)
			return;
		free(tv->narrow_path);
		tv->narrow_path = p;
		narrow_to(tv, 't');
	} else {
		return;
	}
	/* what runs there */
	tv->table = TV_FUNCS;
	tv->sel = tv->first = 0;
}

static void set_filter(struct topview *tv)
{
	regex_t re;
	int ret;

	if (!*tv->input) {
		if (tv->has_re)
			regfree(&tv->re);
		tv->has_re = false;
		tv->filter[0] = 0;
		return;
	}
	ret = regcomp(&re, tv->input, REG_EXTENDED | REG_NOSUB);
	if (ret) {
		char msg[128];

		regerror(ret, &re, msg, sizeof(msg));
		snprintf(tv->error, sizeof(tv->error), "invalid regular expression '%s': %s",
			 tv->input, msg);
		return;
	}
	if (tv->has_re)
		regfree(&tv->re);
	tv->re = re;
	tv->has_re = true;
	snprintf(tv->filter, sizeof(tv->filter), "%s", tv->input);
}

static void input_key(struct topview *tv, uint32_t key)
{
	size_t n = strlen(tv->input);

	if (key == TVK_ESC) {
		tv->prompt = false;
	} else if (key == TVK_ENTER) {
		tv->prompt = false;
		set_filter(tv);
	} else if (key == TVK_BACKSPACE) {
		/* a whole UTF-8 sequence */
		while (n && ((unsigned char)tv->input[n - 1] & 0xc0) == 0x80)
			n--;
		if (n)
			n--;
		tv->input[n] = 0;
	} else if (key >= 0x20 && key < 0x110000 && key != 0x7f) {
		char u[4];
		size_t len = key < 0x80 ? 1 : key < 0x800 ? 2 : key < 0x10000 ? 3 : 4;

		if (len == 1)
			u[0] = key;
		else {
			for (size_t i = len; i-- > 1; key >>= 6)
				u[i] = 0x80 | (key & 0x3f);
			u[0] = (char)((0xf00 >> len) | key);
		}
		if (n + len < sizeof(tv->input)) {
			memcpy(tv->input + n, u, len);
			tv->input[n + len] = 0;
		}
	}
}

static void move_sel(struct topview *tv, int by)
{
	int n = (int)nrows(tv);

	tv->sel += by;
	if (tv->sel >= n)
		tv->sel = n - 1;
	if (tv->sel < 0)
		tv->sel = 0;
}

enum tv_action topview_key(struct topview *tv, uint32_t key, int rows)
{
	int page = rows - ROWS_ABOVE - ROWS_BELOW > 1 ? rows - ROWS_ABOVE - ROWS_BELOW : 1;
	bool again = false; /* the tables change */

	if (tv->prompt) {
		input_key(tv, key);
		if (!tv->prompt && !tv->error[0])
			again = true;
		goto out;
	}
	tv->error[0] = 0;
	switch (key) {
	case 'q':
	case 'Q':
		return TVA_QUIT;
	case 'f':
	case '1':
		tv->table = TV_FUNCS;
		break;
	case 't':
	case '2':
		tv->table = TV_PATHS;
		break;
	case 'p':
	case '3':
		tv->table = TV_PROCS;
		break;
	case '\t':
		tv->table = (tv->table + 1) % 3;
		break;
	case 's':
		tv->sort[tv->table]++;
		if (tv->sort[tv->table] == 3 || !sort_names[tv->table][tv->sort[tv->table]])
			tv->sort[tv->table] = 0;
		sort_table(tv);
		break;
	case 'w':
		tv->since_start = !tv->since_start;
		again = true;
		break;
	case '/':
		tv->prompt = true;
		snprintf(tv->input, sizeof(tv->input), "%s", tv->filter);
		break;
	case TVK_ENTER:
		narrow(tv);
		again = true;
		break;
	case TVK_BACKSPACE:
	case 'u':
		widen(tv);
		again = true;
		break;
	case 'c':
		while (tv->nnarrowed)
			widen(tv);
		tv->input[0] = 0;
		set_filter(tv);
		again = true;
		break;
	case ' ':
	case 'P':
		tv->paused = !tv->paused;
		break;
	case TVK_UP:
	case 'k':
		move_sel(tv, -1);
		break;
	case TVK_DOWN:
	case 'j':
		move_sel(tv, 1);
		break;
	case TVK_PGUP:
		move_sel(tv, -page);
		break;
	case TVK_PGDN:
		move_sel(tv, page);
		break;
	case TVK_HOME:
	case 'g':
		tv->sel = 0;
		break;
	case TVK_END:
	case 'G':
		move_sel(tv, (int)nrows(tv));
		break;
	default:
		return TVA_NONE;
	}
	if (key == 'f' || key == 't' || key == 'p' || key == '\t' || (key >= '1' && key <= '3')) {
		sort_table(tv);
		tv->sel = tv->first = 0;
	}
out:
	if (again && rebuild(tv))
		snprintf(tv->error, sizeof(tv->error), "out of memory");
	return TVA_REDRAW;
}

/* -- the lines --------------------------------------------------------------------------- */

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * v / total : 0;
}

/* Seconds a weight stands for. */
static double secs(const struct topview *tv, uint64_t w)
{
	const struct profile *p = shown(tv);

	if (p && profile_weighted(p))
		return w / 1e9;
	return p ? w * (double)profile_period(p) / 1e9 : 0;
}

static const char *dot(const struct topview *tv)
{
	return tv->o.utf8 ? " \xc2\xb7 " : " | ";
}

/* Column layouts by width: what fits. */
static bool func_times(int cols)
{
	return cols >= 56;
}

/* 0: pid, name, share, samples; 1: and version and lost; 2: and the container */
static int proc_cols(int cols)
{
	return cols >= 72 ? 2 : cols >= 52 ? 1 : 0;
}

#define PROC_NAME_END 26

static int version_col(int cols)
{
	return proc_cols(cols) == 2 ? PROC_NAME_END + 14 : PROC_NAME_END;
}

static void header(const struct topview *tv, struct textline *l)
{
	static const char *const mark[2] = { "*", "\xe2\x96\xbc" };
	const char *m = mark[tv->o.utf8];
	int s = tv->sort[tv->table];
	char buf[256];

	if (tv->table == TV_FUNCS) {
		snprintf(buf, sizeof(buf), "  OWN%%%s TOTAL%%%s", s == 0 ? m : " ",
			 s == 1 ? m : " ");
		text_add(l, buf);
		if (func_times(l->cols))
			text_add(l, "    OWN s  TOTAL s");
		snprintf(buf, sizeof(buf), "  FUNCTION%s", s == 2 ? m : "");
		text_add(l, buf);
	} else if (tv->table == TV_PATHS) {
		snprintf(buf, sizeof(buf), " SHARE%%%s  TIME s  TASK PATH%s: FUNCTION",
			 s == 0 ? m : " ", s == 1 ? m : "");
		text_add(l, buf);
	} else {
		snprintf(buf, sizeof(buf), " %7s%s NAME%s", "PID", s == 1 ? m : " ",
			 s == 2 ? m : "");
		text_add(l, buf);
		text_pad(l, PROC_NAME_END);
		if (proc_cols(l->cols) == 2)
			text_add(l, "CONTAINER");
		if (proc_cols(l->cols)) {
			text_pad(l, version_col(l->cols));
			text_add(l, "VERSION");
			text_pad(l, version_col(l->cols) + 9);
		}
		snprintf(buf, sizeof(buf), "SHARE%%%s  SAMPLES", s == 0 ? m : " ");
		text_add(l, buf);
		if (proc_cols(l->cols))
			text_add(l, "     LOST");
	}
}

static void func_row(const struct topview *tv, size_t i, struct textline *l)
{
	const struct func_row *r = &tv->t.funcs[i];
	const struct frame_sym *s = r->sym;
	char buf[4200];
	int room;

	snprintf(buf, sizeof(buf), " %6.2f  %6.2f", pct(r->self, tv->t.total),
		 pct(r->total, tv->t.total));
	text_add(l, buf);
	if (func_times(l->cols)) {
		snprintf(buf, sizeof(buf), " %8.2f %8.2f", secs(tv, r->self), secs(tv, r->total));
		text_add(l, buf);
	}
	text_add(l, "  ");
	room = l->cols - l->width;
	if (s->kind != FRAME_PYTHON) {
		text_put(l, r->key, room, false);
		return;
	}
	if (s->start_line > 0)
		snprintf(buf, sizeof(buf), "%s (%s:%d)", s->name, s->file ? s->file : "?",
			 s->start_line);
	else
		snprintf(buf, sizeof(buf), "%s (%s)", s->name, s->file ? s->file : "?");
	if (text_width(buf, l->utf8) > room && s->file && strrchr(s->file, '/')) {
		/* the file's directory goes first */
		const char *base = strrchr(s->file, '/') + 1;

		if (s->start_line > 0)
			snprintf(buf, sizeof(buf), "%s (%s:%d)", s->name, base, s->start_line);
		else
			snprintf(buf, sizeof(buf), "%s (%s)", s->name, base);
	}
	text_put(l, buf, room, false);
}

static void path_row(const struct topview *tv, size_t i, struct textline *l)
{
	const struct path_row *r = &tv->t.paths[i];
	char buf[64];

	snprintf(buf, sizeof(buf), " %6.2f %8.2f  ", pct(r->weight, tv->t.total),
		 secs(tv, r->weight));
	text_add(l, buf);
	/* the running task and its function are at the end */
	text_put(l, r->key, l->cols - l->width, true);
}

static void proc_row(const struct topview *tv, size_t i, struct textline *l)
{
	const struct proc_row *r = &tv->t.procs[i];
	const struct tv_proc *info = find_proc(tv, r->pid);
	char buf[64];

	snprintf(buf, sizeof(buf), " %7d  ", r->pid);
	text_add(l, buf);
	text_put(l, r->sym->name, 15, false);
	text_pad(l, PROC_NAME_END);
	if (proc_cols(l->cols) == 2)
		text_put(l, r->sym->file ? r->sym->file : "-", 12, false);
	if (proc_cols(l->cols)) {
		text_pad(l, version_col(l->cols));
		text_put(l, info && info->version[0] ? info->version : "-", 7, false);
		text_pad(l, version_col(l->cols) + 9);
	}
	snprintf(buf, sizeof(buf), "%6.2f %8llu", pct(r->weight, tv->t.total),
		 (unsigned long long)r->samples);
	text_add(l, buf);
	if (proc_cols(l->cols)) {
		if (info)
			snprintf(buf, sizeof(buf), " %8llu", (unsigned long long)info->lost);
		else
			snprintf(buf, sizeof(buf), " %8s", "-");
		text_add(l, buf);
	}
}

static void row(const struct topview *tv, size_t i, struct textline *l)
{
	if (tv->table == TV_FUNCS)
		func_row(tv, i, l);
	else if (tv->table == TV_PATHS)
		path_row(tv, i, l);
	else
		proc_row(tv, i, l);
}

static uint64_t span_weight(const struct topview *tv)
{
	const struct profile *p = shown(tv);
	uint64_t wall, cpu;

	if (!p)
		return 0;
	if (!profile_weighted(p))
		return profile_total(p);
	profile_total_ns(p, &wall, &cpu);
	return wall;
}

static void title(const struct topview *tv, struct textline *l)
{
	static const char *const names[] = { "functions", "task paths", "processes" };
	char buf[256];
	int right = tv->paused ? 7 : 0;

	snprintf(buf, sizeof(buf), "asyncbpf-top%s%s%s", dot(tv), names[tv->table], dot(tv));
	text_add(l, buf);
	if (tv->since_start)
		snprintf(buf, sizeof(buf), "since start (%.0f s)", tv->all_ns / 1e9);
	else
		snprintf(buf, sizeof(buf), "last %.0f of %g s", tv->recent_ns / 1e9,
			 tv->o.window_s);
	text_put(l, buf, l->cols - l->width - right, false);
	snprintf(buf, sizeof(buf), "%s%llu samples%s%zu process%s%s%s %u Hz", dot(tv),
		 (unsigned long long)tv->t.samples, dot(tv), tv->st.nprocs,
		 tv->st.nprocs == 1 ? "" : "es", dot(tv), tv->o.wall ? "wall" : "cpu", tv->o.freq);
	text_put(l, buf, l->cols - l->width - right, false);
	if (right) {
		text_pad(l, l->cols - right);
		text_add(l, " PAUSED");
	}
}

static void filters(const struct topview *tv, struct textline *l)
{
	char buf[INPUT_MAX + 64];
	bool any = false;

	if (tv->has_re) {
		snprintf(buf, sizeof(buf), "filter /%s/", tv->filter);
		text_add(l, buf);
		any = true;
	}
	for (int i = 0; i < tv->nnarrowed; i++) {
		if (any)
			text_add(l, dot(tv));
		if (tv->narrowed[i] == 'p') {
			snprintf(buf, sizeof(buf), "process %d", tv->narrow_pid);
			text_add(l, buf);
		} else {
			text_add(l, "task path ");
			text_put(l, tv->narrow_path, l->cols - l->width - 24, true);
		}
		any = true;
	}
	if (!any) {
		text_add(l, "all samples");
		return;
	}
	snprintf(buf, sizeof(buf), "%s%.1f%% of samples", dot(tv),
		 pct(tv->t.total, span_weight(tv)));
	text_add(l, buf);
}

static void status(const struct topview *tv, struct textline *l)
{
	uint64_t taken = tv->st.recorded + tv->st.lost;
	char buf[256];

	if (tv->error[0]) {
		text_add(l, tv->error);
		return;
	}
	snprintf(buf, sizeof(buf), "lost %llu of %llu samples (%.2f%%)%s%llu frames [unknown]",
		 (unsigned long long)tv->st.lost, (unsigned long long)taken,
		 pct(tv->st.lost, taken), dot(tv), (unsigned long long)tv->st.unknown_frames);
	text_add(l, buf);
	if (tv->message[0]) {
		text_add(l, dot(tv));
		text_put(l, tv->message, l->cols - l->width, false);
	}
}

static const char prompt_text[] = "filter (extended regex, empty: none): ";

static void help(const struct topview *tv, struct textline *l)
{
	if (tv->prompt) {
		text_add(l, prompt_text);
		text_put(l, tv->input, l->cols - l->width, true);
		return;
	}
	text_add(l, tv->o.utf8 ? "f t p views  s sort  w window  / filter  "
				 "\xe2\x8f\x8e narrow  \xe2\x8c\xab widen  c clear  space pause  "
				 "q quit"
			       : "f t p views  s sort  w window  / filter  "
				 "Enter narrow  Bksp widen  c clear  space pause  q quit");
}

int topview_cursor(const struct topview *tv, int cols)
{
	int w;

	if (!tv->prompt)
		return -1;
	w = text_width(prompt_text, tv->o.utf8) + text_width(tv->input, tv->o.utf8);
	return w < cols ? w : cols - 1;
}

typedef void (*part_fn)(const struct topview *tv, struct textline *l);

static void emit(const struct topview *tv, part_fn part, int cols, int r, enum tv_attr a,
		 tv_line_fn fn, void *ctx)
{
	struct textline l;

	text_init(&l, cols, tv->o.utf8);
	part(tv, &l);
	text_pad(&l, cols);
	fn(ctx, r, l.buf, a);
}

void topview_draw(struct topview *tv, int cols, int rows, tv_line_fn fn, void *ctx)
{
	int body = rows - ROWS_ABOVE - ROWS_BELOW;
	struct textline l;

	if (body < 1 || cols < 16) {
		/* too small for a table: a line that says so, where there is one */
		for (int r = 0; r < rows; r++) {
			text_init(&l, cols, tv->o.utf8);
			if (!r)
				text_add(&l, "asyncbpf-top: terminal too small");
			text_pad(&l, cols);
			fn(ctx, r, l.buf, TV_NORMAL);
		}
		return;
	}
	if (tv->sel < tv->first)
		tv->first = tv->sel;
	if (tv->sel >= tv->first + body)
		tv->first = tv->sel - body + 1;
	emit(tv, title, cols, 0, TV_TITLE, fn, ctx);
	emit(tv, filters, cols, 1, TV_NORMAL, fn, ctx);
	emit(tv, header, cols, 2, TV_HEADER, fn, ctx);
	for (int i = 0; i < body; i++) {
		size_t k = (size_t)tv->first + i;

		text_init(&l, cols, tv->o.utf8);
		if (k < nrows(tv))
			row(tv, k, &l);
		text_pad(&l, cols);
		fn(ctx, ROWS_ABOVE + i, l.buf,
		   k < nrows(tv) && (int)k == tv->sel ? TV_SELECTED : TV_NORMAL);
	}
	emit(tv, status, cols, rows - 2, TV_STATUS, fn, ctx);
	emit(tv, help, cols, rows - 1, TV_HELP, fn, ctx);
}

/* -- the snapshot ------------------------------------------------------------------------- */

static void print_line(FILE *f, struct textline *l)
{
	while (l->len && l->buf[l->len - 1] == ' ')
		l->buf[--l->len] = 0;
	fprintf(f, "%s\n", l->buf);
}

static void print_table(struct topview *tv, FILE *f, enum tv_table table, size_t top)
{
	struct textline l;

	tv->table = table;
	tv->sort[table] = 0;
	sort_table(tv);
	text_init(&l, TEXT_MAX_COLS, tv->o.utf8);
	header(tv, &l);
	print_line(f, &l);
	for (size_t i = 0; i < nrows(tv) && (!top || i < top); i++) {
		text_init(&l, TEXT_MAX_COLS, tv->o.utf8);
		row(tv, i, &l);
		print_line(f, &l);
	}
}

void topview_print(struct topview *tv, FILE *f, size_t top)
{
	struct textline l;

	tv->since_start = true;
	if (rebuild(tv)) {
		fprintf(f, "out of memory\n");
		return;
	}
	fprintf(f, "asyncbpf-top: %.1f s, %llu samples, %zu Python process%s, %s %u Hz\n",
		tv->all_ns / 1e9, (unsigned long long)tv->t.samples, tv->st.nprocs,
		tv->st.nprocs == 1 ? "" : "es", tv->o.wall ? "wall" : "cpu", tv->o.freq);
	text_init(&l, TEXT_MAX_COLS, tv->o.utf8);
	status(tv, &l);
	print_line(f, &l);
	fprintf(f, "\nFunctions (own: as the leaf; total: in the stack; share of %llu samples):\n",
		(unsigned long long)tv->t.samples);
	print_table(tv, f, TV_FUNCS, top);
	fprintf(f, "\nTask paths (outermost task first: running function):\n");
	print_table(tv, f, TV_PATHS, top);
	fprintf(f, "\nProcesses:\n");
	print_table(tv, f, TV_PROCS, top);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* asyncbpf-top: a live view of where the Python processes' time goes, by function, task
 * path and process. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profile/profile.h"
#include "recorder/recorder.h"
#include "recorder/recorder_cli.h"
#include "readers/reader.h"
#include "view/topview.h"
#include "view/window.h"
#include "clock.h"

#define PROG "asyncbpf-top"
/* s of recording between two looks at the keyboard */
#define SLICE	    0.05
#define MAX_TARGETS 4096
#define MAX_SECONDS 31536000
#define LOG_MAX	    (64 << 10)
#define MAX_CUTS    3600 /* in the window */

static const char usage[] =
	"usage: asyncbpf-top [-a | -p PID[,PID...]] [-F HZ] [--mode cpu|wall]\n"
	"                    [--interval SECONDS] [--window SECONDS] [-d SECONDS]\n"
	"                    [--once] [-n N] [--container ID] [--cgroup PATH] [--comm NAME]\n"
	"\n"
	"A live view of the Python processes' samples (CPython 3.8-3.15): functions, task\n"
	"paths (outermost task to the running task: its function) and processes, over a\n"
	"sliding window and since the start. Without a terminal (or with --once) it records\n"
	"for -d seconds and prints the tables once.\n"
	"\n"
	"  -i, --interval SECONDS refresh this often (default 1)\n"
	"  -w, --window SECONDS   the sliding window (default 10)\n"
	"  -d, --duration SECONDS stop after this long (default: at q, SIGINT or SIGTERM;\n"
	"                         without a terminal: 3)\n"
	"      --once             print the tables once, after -d seconds, even on a terminal\n"
	"  -n, --top N            rows per table in that text (default 20; 0: all)\n"
	"%s"
	"\n"
	"Keys: f t p (or Tab) functions, task paths, processes; s sort; w window or since\n"
	"start; / filter (a regular expression a frame of the stack matches); Enter narrow\n"
	"every view to the selected task path or process; Backspace or u widen; c clear;\n"
	"space pause; arrows, PgUp, PgDn, Home, End move; q quit.\n"
	"\n"
	"Exit status: 0 done, 1 usage error, 2 environment error (privileges, BTF, perf events,\n"
	"BPF rejected, no terminal), 3 a -p process cannot be profiled.\n"
	"See asyncbpf-top(8).\n";

struct opts {
	struct recorder_opts r;
	struct recorder_cli cli;
	double duration, interval, window; /* duration 0: until q or a signal */
	bool once;
	long top;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = sig;
}

#define err(...) recorder_error(PROG, __VA_ARGS__)

static int seconds(const char *name, const char *arg, double lo, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(arg, &end);
	if (*end || end == arg || errno || !(*out >= lo) || *out > MAX_SECONDS) {
		err("invalid %s '%s' (seconds, at least %g)", name, arg, lo);
		return -1;
	}
	return 0;
}

/* long options without a letter */
enum { OPT_ONCE = 1000 };

/* One of asyncbpf-top's own options: 0, or -1 (said). */
static int top_option(void *ctx, int c, char *arg)
{
	struct opts *o = ctx;
	char *end;

	switch (c) {
	case 'i':
		return seconds("interval", arg, 0.1, &o->interval);
	case 'w':
		return seconds("window", arg, 0.1, &o->window);
	case 'd':
		return seconds("duration", arg, 0.001, &o->duration);
	case OPT_ONCE:
		o->once = true;
		return 0;
	case 'n':
		errno = 0;
		o->top = strtol(arg, &end, 10);
		if (*end || end == arg || errno || o->top < 0) {
			err("invalid --top '%s' (a count, 0 for all)", arg);
			return -1;
		}
		return 0;
	case 'h':
		printf(usage, recorder_cli_help);
		exit(0);
	}
	err("unknown option (see --help)");
	return -1;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		RECORDER_CLI_LONGOPTS,
		{ "interval", required_argument, NULL, 'i' },
		{ "window", required_argument, NULL, 'w' },
		{ "duration", required_argument, NULL, 'd' },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "top", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};

	o->r.prog = PROG;
	recorder_cli_init(&o->cli, &o->r, 99);
	o->interval = 1;
	o->window = 10;
	o->top = 20;
	if (recorder_cli_parse(&o->cli, &o->r, argc, argv, "i:w:d:n:h", longopts, top_option, o))
		return -1;
	if (o->window < o->interval || o->window / o->interval > MAX_CUTS) {
		err("the window (%g s) must hold 1 to %d intervals (%g s)", o->window, MAX_CUTS,
		    o->interval);
		return -1;
	}
	return recorder_cli_finish(&o->cli, &o->r);
}

/* While the screen is up, stderr is a pipe: its lines show in the status line, and go to
 * the real stderr once the terminal is restored. */
static struct {
	int real, rd;
	char log[LOG_MAX];
	size_t len, dropped;
	char line[512], last[512];
	size_t n;
} msgs = { .real = -1, .rd = -1 };

static int msgs_capture(void)
{
	int p[2];

	/* non-blocking both ways: a full pipe loses a message rather than hangs */
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
		return -1;
	msgs.real = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (msgs.real < 0 || dup2(p[1], STDERR_FILENO) < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	close(p[1]);
	msgs.rd = p[0];
	return 0;
}

/* Reads what was written; true if a line ended. */
static bool msgs_drain(void)
{
	char buf[4096];
	bool line = false;
	size_t skip;
	ssize_t r;

	while (msgs.rd >= 0 && (r = read(msgs.rd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < r; i++) {
			if (msgs.len < sizeof(msgs.log))
				msgs.log[msgs.len++] = buf[i];
			else
				msgs.dropped++;
			if (buf[i] != '\n') {
				if (msgs.n < sizeof(msgs.line) - 1)
					msgs.line[msgs.n++] = buf[i];
				continue;
			}
			msgs.line[msgs.n] = 0;
			skip = strncmp(msgs.line, PROG ": ", strlen(PROG ": ")) ? 0
										: strlen(PROG ": ");
			memcpy(msgs.last, msgs.line + skip, msgs.n - skip + 1);
			msgs.n = 0;
			line = true;
		}
	}
	return line;
}

static void msgs_release(void)
{
	if (msgs.real < 0)
		return;
	msgs_drain();
	dup2(msgs.real, STDERR_FILENO);
	close(msgs.real);
	close(msgs.rd);
	msgs.real = msgs.rd = -1;
	if (msgs.len && write(STDERR_FILENO, msgs.log, msgs.len) < 0)
		return;
	if (msgs.dropped)
		err("%zu more bytes of messages were not kept", msgs.dropped);
}

/* The window and the recording's totals into the view. */
static int show(struct recorder *rec, struct window *w, struct topview *tv)
{
	static struct recorder_target targets[MAX_TARGETS];
	static struct tv_proc procs[MAX_TARGETS];
	struct window_span rs, as;
	const struct profile *recent = window_recent(w, &rs), *all = window_all(w, &as);
	struct recorder_totals t;
	struct tv_status st;
	size_t n = recorder_targets(rec, targets, MAX_TARGETS);

	if (n > MAX_TARGETS)
		n = MAX_TARGETS;
	for (size_t i = 0; i < n; i++) {
		procs[i] = (struct tv_proc){ .pid = targets[i].pid, .lost = targets[i].lost };
		memcpy(procs[i].version, targets[i].version, sizeof(procs[i].version));
	}
	recorder_totals(rec, &t);
	st = (struct tv_status){ .recorded = t.recorded,
				 .lost = t.lost,
				 .unknown_frames = t.unknown_frames,
				 .nprocs = recorder_ntargets(rec),
				 .message = msgs.last[0] ? msgs.last : NULL };
	return topview_update(tv, recent, rs.duration_ns, all, as.duration_ns, &st, procs, n);
}

/* What came since the last cut into the window. */
static int take_cut(struct recorder *rec, struct window *w)
{
	struct recorder_cut cut;
	struct profile *p = recorder_cut(rec, &cut);

	if (!p || window_push(w, p, cut.duration_ns, cut.lost)) {
		err("out of memory");
		return -1;
	}
	return 0;
}

static int snapshot(const struct opts *o, struct recorder *rec, struct window *w,
		    struct topview *tv)
{
	if (recorder_run(rec, o->duration, &stop) == RECORDER_FAILED)
		return EXIT_ENV;
	recorder_stop(rec);
	if (take_cut(rec, w) || show(rec, w, tv)) {
		err("out of memory");
		return EXIT_ENV;
	}
	topview_print(tv, stdout, (size_t)o->top);
	if (fflush(stdout) || ferror(stdout)) {
		err("writing the tables: %s", strerror(errno));
		return EXIT_ENV;
	}
	return 0;
}

static void put_line(void *ctx, int row, const char *text, enum tv_attr a)
{
	(void)ctx;
	attrset(a == TV_HEADER || a == TV_SELECTED ? A_REVERSE
		: a == TV_TITLE || a == TV_STATUS  ? A_BOLD
						   : A_NORMAL);
	/* the last cell of the last row cannot take the cursor after it: not an error */
	mvaddstr(row, 0, text);
}

static void draw(struct topview *tv)
{
	int rows, cols, c;

	getmaxyx(stdscr, rows, cols);
	topview_draw(tv, cols, rows, put_line, NULL);
	attrset(A_NORMAL);
	c = topview_cursor(tv, cols);
	curs_set(c >= 0 ? 1 : 0);
	if (c >= 0)
		move(rows - 1, c);
	refresh();
}

/* A curses key as the view's: a character, a TVK_ key, or 0 for none. */
static uint32_t view_key(int ret, wint_t wc)
{
	if (ret == KEY_CODE_YES) {
		switch (wc) {
		case KEY_UP:
			return TVK_UP;
		case KEY_DOWN:
			return TVK_DOWN;
		case KEY_PPAGE:
			return TVK_PGUP;
		case KEY_NPAGE:
			return TVK_PGDN;
		case KEY_HOME:
			return TVK_HOME;
		case KEY_END:
			return TVK_END;
		case KEY_ENTER:
			return TVK_ENTER;
		case KEY_BACKSPACE:
			return TVK_BACKSPACE;
		}
		return 0;
	}
	if (wc == '\n' || wc == '\r')
		return TVK_ENTER;
	if (wc == 27)
		return TVK_ESC;
	if (wc == 127 || wc == 8)
		return TVK_BACKSPACE;
	return (uint32_t)wc;
}

/* Keys waiting: 1 quit, 0 go on; *dirty when the screen changed. */
static int keys(struct recorder *rec, struct window *w, struct topview *tv, bool *dirty)
{
	wint_t wc;
	int ret, rows = getmaxy(stdscr);

	while ((ret = get_wch(&wc)) != ERR) {
		bool paused = topview_paused(tv);
		uint32_t k;

		if (ret == KEY_CODE_YES && wc == KEY_RESIZE) {
			*dirty = true;
			continue;
		}
		k = view_key(ret, wc);
		if (!k)
			continue;
		switch (topview_key(tv, k, rows)) {
		case TVA_QUIT:
			return 1;
		case TVA_REDRAW:
			*dirty = true;
			break;
		case TVA_NONE:
			break;
		}
		if (paused != topview_paused(tv)) {
			window_hold(w, topview_paused(tv));
			if (!topview_paused(tv) && show(rec, w, tv))
				return -1;
		}
	}
	return 0;
}

static int live(const struct opts *o, struct recorder *rec, struct window *w, struct topview *tv)
{
	double start = mono_s(), next = start + o->interval;
	bool ended = false, dirty = true;
	SCREEN *scr = newterm(NULL, stdout, stdin);
	int rc = 0, k;

	if (!scr) {
		err("cannot use the terminal (TERM=%s)", getenv("TERM") ? getenv("TERM") : "");
		return EXIT_ENV;
	}
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	if (show(rec, w, tv))
		goto oom;
	while (!stop && !(o->duration && mono_s() - start >= o->duration)) {
		double t = mono_s();

		if (!ended) {
			enum recorder_end e =
				next > t ? recorder_run(rec, fmin(SLICE, next - t), &stop)
					 : RECORDER_TIME;

			if (e == RECORDER_FAILED) {
				rc = EXIT_ENV;
				break;
			}
			/* every listed process exited: a last cut, then the view stays */
			if (e == RECORDER_ENDED) {
				recorder_stop(rec);
				ended = true;
				next = mono_s();
			}
		} else {
			napms(SLICE * 1000);
		}
		if (next && mono_s() >= next) {
			if (take_cut(rec, w) || (!topview_paused(tv) && show(rec, w, tv)))
				goto oom;
			next = ended ? 0 : fmax(next + o->interval, mono_s());
			dirty = true;
		}
		k = keys(rec, w, tv, &dirty);
		if (k < 0)
			goto oom;
		if (k)
			break;
		if (msgs_drain()) {
			if (!topview_paused(tv) && show(rec, w, tv))
				goto oom;
			dirty = true;
		}
		if (dirty)
			draw(tv);
		dirty = false;
	}
	endwin();
	delscreen(scr);
	return rc;
oom:
	endwin();
	delscreen(scr);
	err("out of memory");
	return EXIT_ENV;
}

int main(int argc, char **argv)
{
	struct opts o = {};
	struct topview_opts to;
	struct recorder *rec;
	struct window *w;
	struct topview *tv;
	bool interactive;
	char why[512];
	int rc;

	setlocale(LC_ALL, "");
	if (parse_args(argc, argv, &o)) {
		recorder_cli_free(&o.cli);
		return EXIT_USAGE;
	}
	interactive = !o.once && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	if (!interactive && !o.duration)
		o.duration = 3;
	if (reader_check_env(o.r.reader, why, sizeof(why))) {
		err("%s", why);
		recorder_cli_free(&o.cli);
		return EXIT_ENV;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGQUIT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	o.r.stop = &stop;
	o.r.no_status = interactive;
	if (interactive && msgs_capture()) {
		err("cannot capture messages: %s", strerror(errno));
		recorder_cli_free(&o.cli);
		return EXIT_ENV;
	}
	rc = recorder_start(&rec, &o.r);
	if (rc) {
		msgs_release();
		recorder_cli_free(&o.cli);
		return rc;
	}
	to = (struct topview_opts){ .utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8"),
				    .wall = o.r.wall,
				    .freq = o.r.freq,
				    .window_s = o.window };
	w = window_new((unsigned int)ceil(o.window / o.interval - 1e-9));
	tv = topview_new(&to);
	if (!w || !tv) {
		err("out of memory");
		rc = EXIT_ENV;
	} else {
		rc = interactive ? live(&o, rec, w, tv) : snapshot(&o, rec, w, tv);
	}
	recorder_stop(rec);
	msgs_release();
	topview_free(tv);
	window_free(w);
	recorder_free(rec);
	recorder_cli_free(&o.cli);
	return rc;
}

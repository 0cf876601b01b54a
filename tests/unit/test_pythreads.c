// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Python's names of threads, read from live interpreters: py/pythreads_target.py starts
 * threads named in every way (and one threading did not start) and prints what Python
 * says of each; pythreads must find each name by the thread's tid and thread state, none
 * for a thread Python did not name, a rename once its names are read again, and never a
 * name for a thread state that is not the thread's (another thread's, or unreadable). */
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "process/memread.h"
#include "cpython/pyproc.h"
#include "cpython/pythreads.h"
#include "tests/unit/pydir.h"
#include "tests/unit/unit.h"

enum { MAIN, NAMED, UNICODE, LONG, DUMMY, NKINDS };
static const char *const kinds[NKINDS] = { "main", "named", "unicode", "long", "dummy" };

struct thread {
	pid_t tid;
	uint64_t ident, tstate;
	char name[2048];
};

struct target {
	const char *python;
	pid_t pid;
	int in, out;
	struct thread th[NKINDS];
	struct py_target t;
};

static int spawn(struct target *tg)
{
	char script[PATH_MAX + 32];
	char *argv[] = { (char *)tg->python, script, NULL };
	int in[2], out[2];

	snprintf(script, sizeof(script), "%s/pythreads_target.py", pydir);
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -1;
	tg->pid = fork();
	if (tg->pid < 0)
		return -1;
	if (tg->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	tg->in = in[1];
	tg->out = out[0];
	return 0;
}

static int read_line(struct target *tg, char *buf, size_t len)
{
	struct pollfd p = { .fd = tg->out, .events = POLLIN };
	size_t n = 0;

	while (n + 1 < len) {
		if (poll(&p, 1, 20000) <= 0 || read(tg->out, buf + n, 1) != 1)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return 0;
}

static void unhex(const char *hex, char *out, size_t len)
{
	size_t i;

	for (i = 0; hex[2 * i] && hex[2 * i + 1] && i + 1 < len; i++)
		sscanf(hex + 2 * i, "%2hhx", (unsigned char *)&out[i]);
	out[i] = 0;
}

/* THREAD lines up to READY; -1 unless every kind was reported. */
static int read_threads(struct target *tg)
{
	char line[4096], kind[16], hex[1400];
	unsigned long long ident;
	int tid, got = 0;

	for (;;) {
		if (read_line(tg, line, sizeof(line)))
			return -1;
		if (!strcmp(line, "READY"))
			return got == (1 << NKINDS) - 1 ? 0 : -1;
		if (sscanf(line, "THREAD %15s %d %llu %1399s", kind, &tid, &ident, hex) != 4)
			return -1;
		for (int k = 0; k < NKINDS; k++)
			if (!strcmp(kind, kinds[k])) {
				tg->th[k].tid = tid;
				tg->th[k].ident = ident;
				unhex(hex, tg->th[k].name, sizeof(tg->th[k].name));
				got |= 1 << k;
			}
	}
}

/* Each thread's thread state: the one whose thread_id is its ident. */
static int find_tstates(struct target *tg)
{
	const struct py_layout *l = &tg->t.proc.layout;
	uint64_t interp, ts, id;
	int found = 0;

	if (mem_read(tg->pid, tg->t.proc.runtime + l->runtime_interp_head, &interp, 8) ||
	    mem_read(tg->pid, interp + l->interp_tstate_head, &ts, 8))
		return -1;
	for (int i = 0; ts && i < 64; i++) {
		if (mem_read(tg->pid, ts + l->tstate_thread_id, &id, 8))
			return -1;
		for (int k = 0; k < NKINDS; k++)
			if (tg->th[k].ident == id && !tg->th[k].tstate) {
				tg->th[k].tstate = ts;
				found++;
			}
		if (mem_read(tg->pid, ts + l->tstate_next, &ts, 8))
			return -1;
	}
	return found == NKINDS ? 0 : -1;
}

static void stop(struct target *tg)
{
	close(tg->in);
	close(tg->out);
	kill(tg->pid, SIGKILL);
	waitpid(tg->pid, NULL, 0);
}

static const char *name_of(struct pythreads *pt, struct target *tg, int k, uint64_t tstate)
{
	return pythreads_name(pt, &tg->t, tg->th[k].tid, tstate);
}

static bool is(const char *got, const char *want)
{
	return got && !strcmp(got, want);
}

static void run_target(struct target *tg)
{
	struct pythreads *pt = pythreads_new();
	struct pythreads_stats st;
	char why[512], line[64], cut[1024];
	struct thread *th = tg->th;
	const char *n;
	uint64_t unread;

	if (!pt || spawn(tg) || read_threads(tg)) {
		CHECK(0, "%s: pythreads_target.py did not report", tg->python);
		if (tg->pid > 0)
			stop(tg);
		pythreads_free(pt);
		return;
	}
	if (pyproc_inspect(tg->pid, &tg->t, why, sizeof(why)) != PYPROC_OK || find_tstates(tg)) {
		CHECK(0, "%s: no target or thread states: %s", tg->python, why);
		goto out;
	}
	/* every kind by its name; the long one cut to 254 characters and "…" */
	memcpy(cut, th[LONG].name, 254);
	strcpy(cut + 254, "…");
	for (int k = 0; k < NKINDS; k++) {
		const char *want = k == DUMMY ? NULL : k == LONG ? cut : th[k].name;

		n = name_of(pt, tg, k, th[k].tstate);
		CHECK(want ? is(n, want) : !n, "%s: %s thread (tid %d): %s, Python says %s",
		      tg->python, kinds[k], th[k].tid, n ? n : "none", want ? want : "none");
	}
	pythreads_stats(pt, &st);
	CHECK(st.reads >= 1 && st.reads <= 2 && !st.read_fails && !st.unread,
	      "%s: %llu reads (%llu failed), %llu unread", tg->python, (unsigned long long)st.reads,
	      (unsigned long long)st.read_fails, (unsigned long long)st.unread);

	/* another thread's thread state, or one that cannot be read: no name, counted */
	unread = st.unread;
	n = name_of(pt, tg, NAMED, th[UNICODE].tstate);
	CHECK(!n, "%s: the named thread with the unicode one's thread state: %s", tg->python, n);
	n = name_of(pt, tg, NAMED, 16);
	CHECK(!n, "%s: the named thread with an unreadable thread state: %s", tg->python, n);
	pythreads_stats(pt, &st);
	CHECK(st.unread == unread + 2, "%s: %llu unread, %llu before", tg->python,
	      (unsigned long long)st.unread, (unsigned long long)unread);
	CHECK(!name_of(pt, tg, NAMED, 0), "%s: a name without a thread state", tg->python);
	CHECK(is(name_of(pt, tg, NAMED, th[NAMED].tstate), th[NAMED].name),
	      "%s: the named thread's own thread state again", tg->python);

	/* a rename shows once the names are read again */
	if (write(tg->in, "rename\n", 7) != 7 || read_line(tg, line, sizeof(line)) ||
	    strcmp(line, "RENAMED")) {
		CHECK(0, "%s: no RENAMED", tg->python);
		goto out;
	}
	nanosleep(&(struct timespec){ .tv_sec = 1, .tv_nsec = 100000000 }, NULL);
	n = name_of(pt, tg, NAMED, th[NAMED].tstate);
	CHECK(is(n, "renamed-unit-thread"), "%s: after the rename: %s", tg->python, n ? n : "none");

	/* a forgotten process is read again */
	pythreads_stats(pt, &st);
	unread = st.reads;
	pythreads_forget(pt, tg->pid);
	CHECK(is(name_of(pt, tg, UNICODE, th[UNICODE].tstate), th[UNICODE].name),
	      "%s: after forgetting", tg->python);
	pythreads_stats(pt, &st);
	CHECK(st.reads == unread + 1 && !st.read_fails, "%s: %llu reads after forgetting",
	      tg->python, (unsigned long long)st.reads);
	fprintf(stderr, "ran %s (%s)\n", tg->python, tg->t.version_str);
out:
	stop(tg);
	pythreads_free(pt);
}

static unsigned int hexversion_of(const char *python)
{
	char cmd[PATH_MAX + 64], buf[32];
	unsigned int v = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' -c 'import sys; print(sys.hexversion)' 2>/dev/null",
		 python);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	if (fgets(buf, sizeof(buf), p))
		v = (unsigned int)strtoul(buf, NULL, 10);
	pclose(p);
	return v;
}

int main(void)
{
	static const char *const pats[] = { "%s/versions/*/bin/python[0-9].[0-9]",
					    "%s/versions/*/bin/python[0-9].[0-9][0-9]",
					    "/usr/bin/python[0-9].[0-9]%.0s",
					    "/usr/bin/python[0-9].[0-9][0-9]%.0s" };
	char root[PATH_MAX], pat[PATH_MAX + 64];
	static struct target tg;
	int ran = 0;
	glob_t g;

	signal(SIGPIPE, SIG_IGN);
	if (find_pydir()) {
		SKIP("tests/unit/py not found: no live interpreter checks");
		return unit_exit();
	}
	pyenv_root(root, sizeof(root));
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		snprintf(pat, sizeof(pat), pats[i], root);
		if (glob(pat, 0, NULL, &g))
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++) {
			unsigned int v = hexversion_of(g.gl_pathv[j]);

			if (v < 0x03080000 || v >= 0x03100000)
				continue; /* not a version asyncbpf supports */
			memset(&tg, 0, sizeof(tg));
			tg.python = g.gl_pathv[j];
			run_target(&tg);
			ran++;
		}
		globfree(&g);
	}
	if (!ran)
		SKIP("no Python 3.8+ installed (pyenv root %s, /usr/bin)", root);
	return unit_exit();
}

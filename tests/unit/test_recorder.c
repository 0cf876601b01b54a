// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The recorder through its library interface, on a spinning interpreter: one recording
 * cut twice and stopped, and a second, uncut one of the same process over the same time.
 * The cuts hold every sample the BPF program took exactly once (their sum plus the lost
 * ones is the kernel's count), each names the process in its own profile, and together
 * they match the uncut recording within sampling noise. Needs root. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "profile/profile.h"
#include "tests/unit/pydir.h"
#include "recorder/recorder.h"
#include "tests/unit/unit.h"

#define FREQ	999
#define SLICE	0.05
#define SECONDS 2.0

static const char spin[] = "import sys\n"
			   "def hot():\n"
			   "    while True: pass\n"
			   "print('READY', flush=True)\n"
			   "hot()\n";

/* A supported interpreter (3.8 or later): the first one interpreters.sh lists. */
static int find_python(char *out, size_t len)
{
	char cmd[PATH_MAX + 32];
	FILE *f;
	int ok;

	if (find_pydir())
		return -1;
	snprintf(cmd, sizeof(cmd), "'%s/interpreters.sh'", pydir);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	ok = 0;
	while (!ok && fgets(out, len, f)) {
		const char *b;

		out[strcspn(out, "\n")] = 0;
		b = strrchr(out, '/');
		ok = b && !strncmp(b + 1, "python3.", 8) && atoi(b + 9) >= 8;
	}
	pclose(f);
	return ok ? 0 : -1;
}

static pid_t start_spinner(const char *python)
{
	int fd[2];
	char buf[8] = "";
	pid_t pid;

	if (pipe(fd))
		return -1;
	pid = fork();
	if (!pid) {
		dup2(fd[1], 1);
		execl(python, python, "-S", "-c", spin, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	if (pid < 0 || read(fd[0], buf, 5) != 5 || strncmp(buf, "READY", 5)) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		pid = -1;
	}
	close(fd[0]);
	return pid;
}

/* Every stack of p is headed by pid's process frame. */
static bool headed_by(struct profile *p, pid_t pid)
{
	size_t n;
	const struct stack_ent *s = profile_stacks(p, &n);

	for (size_t i = 0; i < n; i++) {
		const struct frame_sym *f = profile_frame_sym(p, s[i].ids[0]);

		if (f->kind != FRAME_PROCESS || f->line != pid)
			return false;
	}
	return n > 0;
}

int main(void)
{
	static volatile sig_atomic_t never;
	char python[PATH_MAX];
	struct recorder *cut = NULL, *whole = NULL;
	struct recorder_cut c[3], w;
	struct profile *p[3], *pw;
	struct recorder_totals tc, tw;
	uint64_t sum = 0, lost = 0;
	pid_t pid;

	if (geteuid()) {
		SKIP("needs root: BPF programs and perf events need CAP_BPF and CAP_PERFMON");
		return unit_exit();
	}
	if (find_python(python, sizeof(python))) {
		SKIP("no interpreter found by tests/unit/py/interpreters.sh");
		return unit_exit();
	}
	pid = start_spinner(python);
	if (pid < 0) {
		SKIP("%s did not start", python);
		return unit_exit();
	}
	struct recorder_opts o = {
		.prog = "test_recorder",
		.pids = &pid,
		.npids = 1,
		.freq = FREQ,
		.reader = READER_BPF,
		.mem_per_process = 64 << 20,
	};
	CHECK(recorder_start(&cut, &o) == 0, "first recorder did not start");
	CHECK(recorder_start(&whole, &o) == 0, "second recorder did not start");
	if (!cut || !whole)
		goto out;
	/* both from here on: what each took while the other was starting goes */
	profile_free(recorder_cut(cut, &c[0]));
	profile_free(recorder_cut(whole, &w));
	recorder_totals(cut, &tc);
	sum = tc.recorded; /* the part just dropped */
	lost = tc.lost;
	for (int k = 0; k < 2; k++) {
		for (double end = mono_s() + SECONDS / 2; mono_s() < end;) {
			recorder_run(cut, SLICE, &never);
			recorder_run(whole, SLICE, &never);
		}
		p[k] = recorder_cut(cut, &c[k]);
	}
	recorder_stop(cut);
	recorder_stop(whole);
	p[2] = recorder_cut(cut, &c[2]);
	pw = recorder_cut(whole, &w);
	CHECK(p[0] && p[1] && p[2] && pw, "a cut failed");
	if (!p[0] || !p[1] || !p[2] || !pw)
		goto out;
	for (int k = 0; k < 3; k++) {
		sum += profile_total(p[k]);
		lost += c[k].lost;
	}
	recorder_totals(cut, &tc);
	recorder_totals(whole, &tw);
	fprintf(stderr, "cuts: %llu + %llu + %llu samples (%llu lost), uncut: %llu (%llu lost)\n",
		(unsigned long long)profile_total(p[0]), (unsigned long long)profile_total(p[1]),
		(unsigned long long)profile_total(p[2]), (unsigned long long)lost,
		(unsigned long long)profile_total(pw), (unsigned long long)w.lost);
	CHECK(profile_total(p[0]) > 0 && profile_total(p[1]) > 0, "a cut has no samples");
	CHECK(sum == tc.recorded, "the cuts hold %llu samples, the recorder counted %llu",
	      (unsigned long long)sum, (unsigned long long)tc.recorded);
	CHECK(sum + lost == tc.taken, "cuts %llu + lost %llu, but BPF took %llu",
	      (unsigned long long)sum, (unsigned long long)lost, (unsigned long long)tc.taken);
	CHECK(lost == tc.lost, "the cuts' lost add up to %llu, the recorder says %llu",
	      (unsigned long long)lost, (unsigned long long)tc.lost);
	CHECK(headed_by(p[0], pid) && headed_by(p[1], pid), "a cut's stacks lack the process");
	/* the same time, the same target: only sampling noise (a few per cent at this rate) */
	uint64_t a = profile_total(p[0]) + profile_total(p[1]) + profile_total(p[2]);
	uint64_t b = profile_total(pw);
	CHECK(b > 0 && (a > b ? a - b : b - a) * 10 <= b,
	      "cut recording %llu samples, uncut %llu: more than 10%% apart", (unsigned long long)a,
	      (unsigned long long)b);
	CHECK(c[1].duration_ns > 0.8e9 && c[1].duration_ns < 3e9,
	      "second cut covers %llu ns, about 1 s expected",
	      (unsigned long long)c[1].duration_ns);
	for (int k = 0; k < 3; k++)
		profile_free(p[k]);
	profile_free(pw);
out:
	recorder_free(cut);
	recorder_free(whole);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return unit_exit();
}

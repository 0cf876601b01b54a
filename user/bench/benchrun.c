// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/benchrun.h"
#include "process/procfs.h"
#include "clock.h"

#define SETTLE_S    0.5 /* after the recorder is ready, before the work starts */
#define START_S	    30	/* for the workload to say READY */
#define READY_S	    60	/* for the recorder to be ready */
#define RUN_TIMEOUT 120
#define EXIT_S	    60 /* for a recorder to exit once it is told to (or its -d is over) */

static void sleep_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static double tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/* Reads one line from fd into buf (up to a newline), waiting up to timeout s. */
static int read_line(int fd, char *buf, size_t len, double timeout)
{
	size_t n = 0;
	double end = mono_s() + timeout;

	while (n + 1 < len && mono_s() < end) {
		char c;
		ssize_t r = read(fd, &c, 1);

		if (r <= 0)
			return -1;
		if (c == '\n') {
			buf[n] = 0;
			return 0;
		}
		buf[n++] = c;
	}
	return -1;
}

static pid_t spawn(const char *prog, char *const argv[], const char *preload, int in_fd, int out_fd,
		   int err_fd)
{
	pid_t pid = fork();

	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
		exit(1);
	}
	if (pid)
		return pid;
	if (in_fd >= 0)
		dup2(in_fd, 0);
	if (out_fd >= 0)
		dup2(out_fd, 1);
	if (err_fd >= 0)
		dup2(err_fd, 2);
	if (preload)
		setenv("LD_PRELOAD", preload, 1);
	else
		unsetenv("LD_PRELOAD");
	execvp(argv[0], argv);
	_exit(127);
}

/* The recorder handles SIGINT once its reader is loaded (for bpf, once the kernel has
 * accepted the program): then it is about to sample. */
static int wait_ready(const char *prog, pid_t rec)
{
	char path[64], buf[4096], *p;
	double end = mono_s() + READY_S;

	snprintf(path, sizeof(path), "/proc/%d/status", rec);
	while (mono_s() < end) {
		if (proc_read(path, buf, sizeof(buf)) < 0 || !(p = strstr(buf, "SigCgt:")))
			break; /* exited */
		if (strtoull(p + 7, NULL, 16) & (1ULL << (SIGINT - 1)))
			return 0;
		sleep_s(0.02);
	}
	fprintf(stderr, "%s: asyncbpf-record did not start\n", prog);
	return -1;
}

/* wait4 for at most EXIT_S: a recorder that hangs is killed and said, never waited for
 * forever. 0 once it exited. */
static int wait_exit(const char *prog, pid_t pid, int *st, struct rusage *ru)
{
	double end = mono_s() + EXIT_S;
	pid_t got;

	while ((got = wait4(pid, st, WNOHANG, ru)) == 0 && mono_s() < end)
		sleep_s(0.01);
	if (got == pid)
		return 0;
	if (got == 0) {
		fprintf(stderr, "%s: asyncbpf-record (pid %d) did not exit within %d s; killed\n",
			prog, pid, EXIT_S);
		kill(pid, SIGKILL);
		wait4(pid, st, 0, ru);
	}
	return -1;
}

char *bench_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	*len = 0;
	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = n >= 0 ? calloc(1, n + 1) : NULL;
	if (buf && fread(buf, 1, n, f) == (size_t)n)
		*len = n;
	else if (buf)
		buf[0] = 0;
	fclose(f);
	return buf ? buf : strdup("");
}

/* A value after "label: " in the recorder's --stats output, NAN if absent. */
static double stat_of(const char *text, const char *label)
{
	const char *p = text;
	size_t l = strlen(label);

	while ((p = strstr(p, label))) {
		if ((p == text || p[-1] == '\n') && p[l] == ':')
			return atof(p + l + 1);
		p += l;
	}
	return NAN;
}

/* What the workload printed when done. */
static void parse_result(const char *prog, const char *line, struct bench_result *res)
{
	long long result = 0, expected = -1;
	const char *p;

	if ((p = strstr(line, "\"result\": ")))
		result = atoll(p + 10);
	if ((p = strstr(line, "\"expected\": ")))
		expected = atoll(p + 12);
	if ((p = strstr(line, "\"wall\": ")))
		res->wall = atof(p + 8);
	if ((p = strstr(line, "\"cpu\": ")))
		res->cpu = atof(p + 7);
	if (result != expected)
		fprintf(stderr, "%s: wrong result %lld (expected %lld)\n", prog, result, expected);
	else
		res->ok = 1;
}

/* Each reader names its samples and its per-sample time in its own words. */
static void parse_stats(const char *text, const char *reader, struct bench_result *res)
{
	bool bpf = !strcmp(reader, "bpf");

	res->taken = stat_of(text, bpf ? "python samples" : "samples");
	res->recorded = stat_of(text, "recorded samples");
	res->lost = stat_of(text, "lost");
	res->work_linked = stat_of(text, "thread work linked");
	res->work_unlinked = stat_of(text, "thread work unlinked");
	res->in_task = stat_of(text, "samples in asyncio tasks");
	res->cost_ns = stat_of(text, "median read time per sample");
	res->p90_ns = stat_of(text, "p90 read time per sample");
	res->reads = stat_of(text, "reads per python sample");
	res->read_bytes = NAN;
	if (!isnan(res->reads)) {
		const char *b = strstr(text, "reads per python sample:");

		b = b ? strchr(b, '(') : NULL;
		if (b)
			res->read_bytes = atof(b + 1);
	}
	res->native_bytes = NAN;
	res->unwind_ns = stat_of(text, "native unwind time per stack");
	if (!isnan(res->unwind_ns)) {
		const char *b = strstr(text, "\nnative stacks:");

		b = b ? strstr(b, "), ") : NULL;
		if (b)
			res->native_bytes = atof(b + 3);
	}
	res->mean_ns = stat_of(text, bpf			 ? "walk time per python sample"
				     : !strcmp(reader, "memcpy") ? "handler time per sample"
								 : "walk time per sample");
}

/* Ends the recorder; false if it failed (said, with its stderr). */
static bool end_recorder(const char *prog, const struct bench_recorder *rec, pid_t pid,
			 struct bench_result *res)
{
	struct rusage ru;
	char *text;
	size_t len;
	int st;

	kill(pid, SIGINT);
	if (wait_exit(prog, pid, &st, &ru))
		return false;
	res->prof_cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return true;
	fprintf(stderr, "%s: asyncbpf-record --reader %s failed (%s %d):\n", prog, rec->reader,
		WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	text = bench_read_file(rec->stats, &len);
	if (text)
		fputs(text, stderr);
	free(text);
	return false;
}

/* Starts the workload with its stdin (*to) and stdout (*from) on pipes and waits for its
 * READY; its pid, which the caller reaps, and false if it did not say READY (said). */
static bool start_workload(const char *prog, const struct bench_workload *w, pid_t *target, int *to,
			   int *from)
{
	char req[16], wk[16], dp[16], line[512];
	char *targv[] = {
		(char *)w->python, (char *)w->script, req, wk, dp, (char *)w->mode, NULL
	};
	int in[2], out[2];

	snprintf(req, sizeof(req), "%d", w->requests);
	snprintf(wk, sizeof(wk), "%d", w->work);
	snprintf(dp, sizeof(dp), "%d", w->depth);
	if (pipe(in) || pipe(out)) {
		fprintf(stderr, "%s: pipe: %s\n", prog, strerror(errno));
		exit(1);
	}
	*target = spawn(prog, targv, w->preload, in[0], out[1], -1);
	close(in[0]);
	close(out[1]);
	*to = in[1];
	*from = out[0];
	if (read_line(out[0], line, sizeof(line), START_S) || strcmp(line, "READY")) {
		fprintf(stderr, "%s: the workload did not start (%s)\n", prog, w->python);
		return false;
	}
	return true;
}

#define STARTUP_RUN_S "0.3" /* each start's recording: its cost before is what counts */
#define STARTUP_ARGS  8

/* "profiler cpu: A s while recording (B% of a core), C s before": C, NAN if absent */
static double startup_of(const char *text)
{
	const char *p = strstr(text, "\nprofiler cpu:");

	p = p ? strstr(p, "), ") : NULL;
	return p && strstr(p, " s before") ? atof(p + 3) : NAN;
}

int bench_startup(const char *prog, const struct bench_workload *w, const char *record,
		  char *const args[], const char *output, const char *stats, double *out, int n)
{
	char pidarg[16];
	char *rargv[8 + STARTUP_ARGS] = { (char *)record, "-p",	     pidarg, "-d",
					  STARTUP_RUN_S,  "--stats", "-o",   (char *)output };
	int to, from, st, failed = 0, k = 8;
	pid_t target;

	for (int i = 0; args && args[i] && i < STARTUP_ARGS - 1; i++)
		rargv[k++] = args[i];
	rargv[k] = NULL;
	for (int i = 0; i < n; i++)
		out[i] = NAN;
	if (!start_workload(prog, w, &target, &to, &from)) {
		failed = n;
		goto reap;
	}
	snprintf(pidarg, sizeof(pidarg), "%d", target);
	for (int i = 0; i < n; i++) {
		int efd = open(stats, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		pid_t rec = spawn(prog, rargv, NULL, -1, -1, efd);
		char *text;
		size_t len;

		close(efd);
		text = !wait_exit(prog, rec, &st, NULL) && WIFEXITED(st) && !WEXITSTATUS(st)
			       ? bench_read_file(stats, &len)
			       : NULL;
		if (text)
			out[i] = startup_of(text);
		if (isnan(out[i])) {
			fprintf(stderr, "%s: asyncbpf-record %s: no start-up figure:\n", prog,
				args && args[0] ? args[0] : "");
			free(text);
			text = bench_read_file(stats, &len);
			if (text)
				fputs(text, stderr);
			failed++;
		}
		free(text);
	}
reap:
	close(to);
	close(from);
	kill(target, SIGKILL);
	waitpid(target, &st, 0);
	return failed;
}

struct bench_result bench_run(const char *prog, const struct bench_workload *w,
			      const struct bench_recorder *rec)
{
	char fq[16], pidarg[16], line[512];
	struct bench_result res = { .wall = NAN,
				    .cpu = NAN,
				    .prof_cpu = NAN,
				    .cost_ns = NAN,
				    .p90_ns = NAN,
				    .mean_ns = NAN,
				    .reads = NAN,
				    .read_bytes = NAN,
				    .native_bytes = NAN,
				    .unwind_ns = NAN,
				    .work_linked = NAN,
				    .work_unlinked = NAN,
				    .in_task = NAN };
	int to, from, st, efd = -1;
	pid_t target, recpid = 0;

	if (!start_workload(prog, w, &target, &to, &from))
		goto reap;
	if (rec) {
		char *rargv[16] = {
			(char *)rec->path, "--reader", (char *)rec->reader, "-p", pidarg, "-F", fq,
			"--stats",	   "-o",       (char *)rec->output
		};
		int k = 10;

		/* the creation probe is BPF's alone: unless asked for, all readers get the
		 * same task maps, from snapshots */
		if (!rec->origins)
			rargv[k++] = "--no-origins";
		if (rec->native)
			rargv[k++] = "--native";
		rargv[k] = NULL;

		snprintf(pidarg, sizeof(pidarg), "%d", target);
		snprintf(fq, sizeof(fq), "%u", rec->freq);
		unlink(rec->output);
		efd = open(rec->stats, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		recpid = spawn(prog, rargv, NULL, -1, -1, efd);
		if (wait_ready(prog, recpid))
			goto reap;
		sleep_s(SETTLE_S);
	}
	if (write(to, "\n", 1) != 1 || read_line(from, line, sizeof(line), RUN_TIMEOUT)) {
		fprintf(stderr, "%s: the workload did not finish\n", prog);
		goto reap;
	}
	parse_result(prog, line, &res);
reap:
	close(to);
	close(from);
	if (recpid) {
		if (!end_recorder(prog, rec, recpid, &res))
			res.ok = 0;
		close(efd);
	}
	kill(target, SIGKILL);
	waitpid(target, &st, 0);
	if (recpid && res.ok) {
		size_t len;
		char *text = bench_read_file(rec->stats, &len);

		if (text)
			parse_stats(text, rec->reader, &res);
		free(text);
	}
	return res;
}

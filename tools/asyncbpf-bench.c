// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* asyncbpf-bench: the three readers (bpf, memcpy, vmreadv) on one asyncio workload,
 * against no profiler, at two rates, in interleaved repetitions. Prints a Markdown table
 * and writes it with a CSV and a plot of cost per sample against stack depth. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPS    20
#define NREADERS    3
#define NFREQS	    2
#define NCONFIGS    (1 + NREADERS * NFREQS)
#define MAX_DEPTHS  8
#define SETTLE_S    0.5 /* after the recorder is ready, before the work starts */
#define RUN_TIMEOUT 120

static const char *const readers[NREADERS] = { "bpf", "memcpy", "vmreadv" };
static const unsigned int freqs[NFREQS] = { 99, 999 };

static const char usage[] =
	"usage: asyncbpf-bench [--quick] [--reps N] [--python PATH] [--out DIR]\n"
	"                      [--workload FILE]\n"
	"\n"
	"Runs the bundled asyncio workload with no profiler and under each reader (bpf,\n"
	"memcpy, vmreadv) at 99 and 999 Hz, repetitions interleaved, then a depth sweep at\n"
	"999 Hz. Writes DIR/readers.md, readers.csv, depth.csv and depth.svg (default DIR:\n"
	"bench-out). Needs root. --quick: 2 repetitions of a small workload (under 2 min).\n";

struct opts {
	bool quick;
	int reps;
	const char *python, *out, *workload;
	char record[PATH_MAX], preload[PATH_MAX], script[PATH_MAX];
	int requests, work;
};

/* one stack of a profile, normalized (no pid, tid or task numbers) */
struct stack {
	char *key;
	double n;
};

struct profile {
	struct stack *v;
	size_t n, cap;
	double total;
};

struct run {
	double wall, cpu; /* target: work's wall and CPU seconds */
	double prof_cpu;  /* profiler's CPU seconds */
	double cost_ns;	  /* read cost per sample: the median of the run's samples */
	double mean_ns;	  /* and their mean */
	double taken, recorded, lost;
	int ok;
};

struct config {
	int reader; /* -1: none */
	unsigned int freq;
	struct run runs[MAX_REPS];
	int nruns;
	struct profile prof, half[2]; /* all runs; even and odd runs */
	struct profile leaf, leaf_half[2];
};

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("asyncbpf-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* --- profiles ------------------------------------------------------------------------ */

static void prof_add(struct profile *p, const char *key, double n)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].key, key)) {
			p->v[i].n += n;
			p->total += n;
			return;
		}
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 256;
		p->v = realloc(p->v, p->cap * sizeof(*p->v));
		if (!p->v)
			die("out of memory");
	}
	p->v[p->n].key = strdup(key);
	if (!p->v[p->n].key)
		die("out of memory");
	p->v[p->n++].n = n;
	p->total += n;
}

static double prof_get(const struct profile *p, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].key, key))
			return p->v[i].n;
	return 0;
}

/* sum over stacks of min(p_a, p_b), the shares of each profile */
static double overlap(const struct profile *a, const struct profile *b)
{
	double sum = 0;

	if (!a->total || !b->total)
		return NAN;
	for (size_t i = 0; i < a->n; i++) {
		double pa = a->v[i].n / a->total, pb = prof_get(b, a->v[i].key) / b->total;

		sum += pa < pb ? pa : pb;
	}
	return sum;
}

/* Drops the process and thread frames and the numbers of unnamed tasks (Task-N), which
 * differ between runs. */
static void normalize(char *stack)
{
	char *p = strchr(stack, ';'), *w, *r;

	if (p)
		p = strchr(p + 1, ';');
	memmove(stack, p ? p + 1 : stack, strlen(p ? p + 1 : stack) + 1);
	for (r = w = stack; *r;) {
		if (!strncmp(r, "<task Task-", 11) && r[11] >= '0' && r[11] <= '9') {
			r += 11; /* past the digits before writing over them */
			while (*r >= '0' && *r <= '9')
				r++;
			memcpy(w, "<task Task-N", 12);
			w += 12;
			continue;
		}
		*w++ = *r++;
	}
	*w = 0;
}

static void read_profile(const char *path, struct profile *all, struct profile *half,
			 struct profile *leaf, struct profile *leaf_half)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (!f)
		return;
	while ((len = getline(&line, &cap, f)) > 0) {
		char *sp = strrchr(line, ' '), *lf;
		double n;

		if (!sp)
			continue;
		*sp = 0;
		n = atof(sp + 1);
		normalize(line);
		prof_add(all, line, n);
		prof_add(half, line, n);
		lf = strrchr(line, ';');
		prof_add(leaf, lf ? lf + 1 : line, n);
		prof_add(leaf_half, lf ? lf + 1 : line, n);
	}
	free(line);
	fclose(f);
}

/* --- runs ---------------------------------------------------------------------------- */

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

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, n + 1);
	if (buf && fread(buf, 1, n, f) != (size_t)n)
		buf[0] = 0;
	fclose(f);
	return buf ? buf : strdup("");
}

static double tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/* Reads one line from fd into buf (up to a newline), waiting up to timeout s. */
static int read_line(int fd, char *buf, size_t len, double timeout)
{
	size_t n = 0;
	double end = now_s() + timeout;

	while (n + 1 < len && now_s() < end) {
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

static pid_t spawn(char *const argv[], const char *preload, int in_fd, int out_fd, int err_fd)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
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
static int wait_ready(pid_t rec)
{
	char path[64], buf[4096], *p;
	double end = now_s() + 60;

	snprintf(path, sizeof(path), "/proc/%d/status", rec);
	while (now_s() < end) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = 0;
		p = strstr(buf, "SigCgt:");
		if (!p)
			break; /* exited */
		if (strtoull(p + 7, NULL, 16) & (1ULL << (SIGINT - 1)))
			return 0;
		sleep_s(0.02);
	}
	fprintf(stderr, "asyncbpf-bench: asyncbpf-record did not start\n");
	return -1;
}

/* One run of the workload under reader r (-1: none) at freq; depth 0: the mixed one. */
static struct run run_one(const struct opts *o, const char *tmp, int r, unsigned int freq,
			  int requests, int work, int depth, struct config *c, int half)
{
	char req[16], wk[16], dp[16], fq[16], pidarg[16], outp[PATH_MAX], errp[PATH_MAX];
	char line[512];
	char *targv[] = { (char *)o->python, (char *)o->script, req, wk, dp, NULL };
	int in[2], out[2];
	struct run res = {
		.wall = NAN, .cpu = NAN, .prof_cpu = NAN, .cost_ns = NAN, .mean_ns = NAN
	};
	struct rusage ru;
	pid_t target, rec = 0;
	int st, efd = -1;
	char *text;

	snprintf(req, sizeof(req), "%d", requests);
	snprintf(wk, sizeof(wk), "%d", work);
	snprintf(dp, sizeof(dp), "%d", depth);
	if (pipe(in) || pipe(out))
		die("pipe: %s", strerror(errno));
	target = spawn(targv, r == 1 ? o->preload : NULL, in[0], out[1], -1);
	close(in[0]);
	close(out[1]);
	if (read_line(out[0], line, sizeof(line), 30) || strcmp(line, "READY")) {
		fprintf(stderr, "asyncbpf-bench: the workload did not start (%s)\n", o->python);
		goto reap;
	}
	if (r >= 0) {
		char *rargv[] = { (char *)o->record, "--reader", (char *)readers[r], "-p", pidarg,
				  "-F", fq, "--stats",
				  /* the creation probe is BPF's alone: all readers get the
				   * same task maps, from snapshots */
				  "--no-origins", "-o", outp, NULL };

		snprintf(pidarg, sizeof(pidarg), "%d", target);
		snprintf(fq, sizeof(fq), "%u", freq);
		snprintf(outp, sizeof(outp), "%s/profile.txt", tmp);
		snprintf(errp, sizeof(errp), "%s/stats.txt", tmp);
		unlink(outp);
		efd = open(errp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		rec = spawn(rargv, NULL, -1, -1, efd);
		if (wait_ready(rec))
			goto reap;
		sleep_s(SETTLE_S);
	}
	if (write(in[1], "\n", 1) != 1 || read_line(out[0], line, sizeof(line), RUN_TIMEOUT)) {
		fprintf(stderr, "asyncbpf-bench: the workload did not finish\n");
		goto reap;
	}
	{
		char *p;
		long long result = 0, expected = -1;

		if ((p = strstr(line, "\"result\": ")))
			result = atoll(p + 10);
		if ((p = strstr(line, "\"expected\": ")))
			expected = atoll(p + 12);
		if ((p = strstr(line, "\"wall\": ")))
			res.wall = atof(p + 8);
		if ((p = strstr(line, "\"cpu\": ")))
			res.cpu = atof(p + 7);
		if (result != expected)
			fprintf(stderr, "asyncbpf-bench: wrong result %lld (expected %lld)\n",
				result, expected);
		else
			res.ok = 1;
	}
reap:
	close(in[1]);
	close(out[0]);
	if (rec) {
		kill(rec, SIGINT);
		if (wait4(rec, &st, 0, &ru) == rec) {
			res.prof_cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr,
					"asyncbpf-bench: asyncbpf-record --reader %s failed (%s "
					"%d):\n",
					readers[r], WIFEXITED(st) ? "exit" : "signal",
					WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
				text = slurp(errp);
				fputs(text, stderr);
				free(text);
				res.ok = 0;
			}
		}
		close(efd);
	}
	kill(target, SIGKILL);
	waitpid(target, &st, 0);
	if (rec && res.ok) {
		text = slurp(errp);
		res.taken = stat_of(text, r == 0 ? "python samples" : "samples");
		res.recorded = stat_of(text, "recorded samples");
		res.lost = stat_of(text, "lost");
		res.cost_ns = stat_of(text, "median read time per sample");
		res.mean_ns = stat_of(text, r == 0   ? "walk time per python sample"
					    : r == 1 ? "handler time per sample"
						     : "walk time per sample");
		free(text);
		if (c)
			read_profile(outp, &c->prof, &c->half[half], &c->leaf, &c->leaf_half[half]);
	}
	return res;
}

/* --- statistics and output ------------------------------------------------------------ */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct summary {
	double med, min, max;
	int n;
};

#define SUMMARIZE(c, field)                                                                        \
	({                                                                                         \
		double v_[MAX_REPS];                                                               \
		struct summary s_ = { NAN, NAN, NAN, 0 };                                          \
		for (int i_ = 0; i_ < (c)->nruns; i_++)                                            \
			if ((c)->runs[i_].ok && !isnan((c)->runs[i_].field))                       \
				v_[s_.n++] = (c)->runs[i_].field;                                  \
		if (s_.n) {                                                                        \
			qsort(v_, s_.n, sizeof(double), cmp_d);                                    \
			s_.min = v_[0];                                                            \
			s_.max = v_[s_.n - 1];                                                     \
			s_.med = s_.n % 2 ? v_[s_.n / 2] : (v_[s_.n / 2 - 1] + v_[s_.n / 2]) / 2;  \
		}                                                                                  \
		s_;                                                                                \
	})

static const char *cname(const struct config *c, char *buf, size_t len)
{
	if (c->reader < 0)
		snprintf(buf, len, "none");
	else
		snprintf(buf, len, "%s @ %u Hz", readers[c->reader], c->freq);
	return buf;
}

static double mean_of(const struct config *c, size_t off)
{
	double sum = 0;
	int n = 0;

	for (int i = 0; i < c->nruns; i++) {
		double v = *(const double *)((const char *)&c->runs[i] + off);

		if (c->runs[i].ok && !isnan(v)) {
			sum += v;
			n++;
		}
	}
	return n ? sum / n : NAN;
}

static void write_outputs(const struct opts *o, struct config *cfg,
			  double (*depth_cost)[MAX_DEPTHS], const int *depths, int ndepths)
{
	char path[PATH_MAX], name[64];
	struct summary bw = SUMMARIZE(&cfg[0], wall), bc = SUMMARIZE(&cfg[0], cpu);
	FILE *md, *csv;

	snprintf(path, sizeof(path), "%s/readers.md", o->out);
	md = fopen(path, "w");
	snprintf(path, sizeof(path), "%s/readers.csv", o->out);
	csv = fopen(path, "w");
	if (!md || !csv)
		die("cannot write into %s: %s", o->out, strerror(errno));
	fprintf(csv, "config,reader,freq,runs,wall_med,wall_min,wall_max,slowdown_wall,cpu_med,"
		     "slowdown_cpu,cost_ns_med,cost_ns_min,cost_ns_max,target_cpu_ns_per_sample,"
		     "profiler_cpu_s,taken,"
		     "recorded,lost,overlap_bpf,overlap_self\n");
	fprintf(md, "| run | n | wall s (min-max) | slowdown wall | target CPU s | slowdown CPU | "
		    "cost/sample µs, median (min-max) | mean | target CPU µs per sample | "
		    "profiler CPU s | "
		    "samples taken | recorded | lost | "
		    "overlap with bpf (stacks / leaves) | overlap self (stacks) |\n");
	fprintf(md, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < NCONFIGS; i++) {
		struct config *c = &cfg[i];
		struct summary w = SUMMARIZE(c, wall), cp = SUMMARIZE(c, cpu),
			       cost = SUMMARIZE(c, cost_ns), pc = SUMMARIZE(c, prof_cpu),
			       mean = SUMMARIZE(c, mean_ns);
		const struct config *b = c->reader > 0 ? &cfg[1 + (c->freq == freqs[1])] : NULL;
		double ov = b ? overlap(&c->prof, &b->prof) : NAN,
		       ovl = b ? overlap(&c->leaf, &b->leaf) : NAN,
		       self = overlap(&c->half[0], &c->half[1]);
		/* the target's extra CPU time per sample: the whole cost a sample puts on it,
		 * signal delivery and kernel entries included (µs) */
		double tcpu = c->reader < 0 ? NAN
					    : (cp.med - bc.med) /
						      mean_of(c, offsetof(struct run, taken)) * 1e6;

		cname(c, name, sizeof(name));
		fprintf(md, "| %s | %d | %.3f (%.3f-%.3f) | %.3f | %.3f | %.3f |", name, w.n, w.med,
			w.min, w.max, w.med / bw.med, cp.med, cp.med / bc.med);
		if (c->reader < 0)
			fprintf(md, " - | - | - | - | - | - | - | - | - |\n");
		else
			fprintf(md,
				" %.1f (%.1f-%.1f) | %.1f | %.1f | %.3f | %.0f | %.0f | %.0f | "
				"%s%.3f / "
				"%.3f | %.3f |\n",
				cost.med / 1e3, cost.min / 1e3, cost.max / 1e3, mean.med / 1e3,
				tcpu, pc.med, mean_of(c, offsetof(struct run, taken)),
				mean_of(c, offsetof(struct run, recorded)),
				mean_of(c, offsetof(struct run, lost)), b ? "" : "(is bpf) ",
				b ? ov : 1.0, b ? ovl : 1.0, self);
		fprintf(csv,
			"%s,%s,%u,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.0f,%.0f,%.0f,%.0f,%.4f,%.0f,"
			"%.0f,%.0f,%.4f,%.4f\n",
			name, c->reader < 0 ? "none" : readers[c->reader], c->freq, w.n, w.med,
			w.min, w.max, w.med / bw.med, cp.med, cp.med / bc.med, cost.med, cost.min,
			cost.max, tcpu * 1e3, pc.med, mean_of(c, offsetof(struct run, taken)),
			mean_of(c, offsetof(struct run, recorded)),
			mean_of(c, offsetof(struct run, lost)), ov, self);
	}
	fprintf(md,
		"\nPairwise overlap of the readers' profiles (all runs at a rate together):\n\n");
	fprintf(md, "| Hz | bpf-memcpy | bpf-vmreadv | memcpy-vmreadv |\n|---|---|---|---|\n");
	for (int f = 0; f < NFREQS; f++) {
		struct config *b = &cfg[1 + f], *m = &cfg[3 + f], *v = &cfg[5 + f];

		fprintf(md, "| %u | %.3f | %.3f | %.3f |\n", freqs[f], overlap(&b->prof, &m->prof),
			overlap(&b->prof, &v->prof), overlap(&m->prof, &v->prof));
	}
	fprintf(md, "\nCost per sample (µs) against the workload's stack depth, 999 Hz:\n\n"
		    "| depth | bpf | memcpy | vmreadv |\n|---|---|---|---|\n");
	for (int d = 0; d < ndepths; d++)
		fprintf(md, "| %d | %.1f | %.1f | %.1f |\n", depths[d], depth_cost[0][d] / 1e3,
			depth_cost[1][d] / 1e3, depth_cost[2][d] / 1e3);
	fclose(md);
	fclose(csv);

	snprintf(path, sizeof(path), "%s/depth.csv", o->out);
	csv = fopen(path, "w");
	if (!csv)
		die("cannot write %s: %s", path, strerror(errno));
	fprintf(csv, "depth,bpf_ns,memcpy_ns,vmreadv_ns\n");
	for (int d = 0; d < ndepths; d++)
		fprintf(csv, "%d,%.0f,%.0f,%.0f\n", depths[d], depth_cost[0][d], depth_cost[1][d],
			depth_cost[2][d]);
	fclose(csv);
}

/* A log-scale line plot of cost per sample against depth, as plain SVG. */
static void write_svg(const struct opts *o, double (*cost)[MAX_DEPTHS], const int *depths, int nd)
{
	static const char *const colors[NREADERS] = { "#1f77b4", "#d62728", "#2ca02c" };
	const double W = 640, H = 400, L = 70, R = 130, T = 30, B = 50;
	double lo = 1e9, hi = 0, xmax = depths[nd - 1];
	char path[PATH_MAX];
	FILE *f;

	for (int r = 0; r < NREADERS; r++)
		for (int d = 0; d < nd; d++)
			if (cost[r][d] > 0) {
				lo = fmin(lo, cost[r][d]);
				hi = fmax(hi, cost[r][d]);
			}
	if (hi <= 0)
		return;
	lo = pow(10, floor(log10(lo)));
	hi = pow(10, ceil(log10(hi)));
	if (hi <= lo)
		hi = lo * 10;
	snprintf(path, sizeof(path), "%s/depth.svg", o->out);
	f = fopen(path, "w");
	if (!f)
		die("cannot write %s: %s", path, strerror(errno));
#define X(v) (L + (v) / xmax * (W - L - R))
#define Y(v) (H - B - (log10(v) - log10(lo)) / (log10(hi) - log10(lo)) * (H - T - B))
	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" "
		"height=\"100%%\" fill=\"white\"/>\n<text x=\"%.0f\" y=\"18\">Read cost per sample "
		"against stack depth (999 Hz)</text>\n",
		W, H, L);
	for (double v = lo; v <= hi * 1.001; v *= 10)
		fprintf(f,
			"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g µs</text>\n",
			L, W - R, Y(v), Y(v), L - 6, Y(v) + 4, v / 1e3);
	for (int d = 0; d < nd; d++)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n",
			X(depths[d]), H - B + 18, depths[d]);
	fprintf(f,
		"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">coroutine chain depth</text>\n",
		(L + W - R) / 2, H - 12);
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", L,
		W - R, H - B, H - B);
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", L,
		L, T, H - B);
	for (int r = 0; r < NREADERS; r++) {
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
			colors[r]);
		for (int d = 0; d < nd; d++)
			if (cost[r][d] > 0)
				fprintf(f, "%.1f,%.1f ", X(depths[d]), Y(cost[r][d]));
		fprintf(f, "\"/>\n");
		for (int d = 0; d < nd; d++)
			if (cost[r][d] > 0)
				fprintf(f,
					"<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
					X(depths[d]), Y(cost[r][d]), colors[r]);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s</text>\n", W - R + 10,
			T + 20 + 18 * r, colors[r], readers[r]);
	}
	fprintf(f, "</svg>\n");
#undef X
#undef Y
	fclose(f);
}

/* --- main ---------------------------------------------------------------------------- */

static void locate(struct opts *o)
{
	char self[PATH_MAX], dir[PATH_MAX - 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		die("cannot find its own path");
	self[n] = 0;
	if (strlen(dirname(self)) >= sizeof(dir))
		die("its path is too long");
	memcpy(dir, self, strlen(self) + 1);
	snprintf(o->record, sizeof(o->record), "%s/asyncbpf-record", dir);
	snprintf(o->preload, sizeof(o->preload), "%s/libasyncbpf-memcpy.so", dir);
	if (o->workload)
		snprintf(o->script, sizeof(o->script), "%s", o->workload);
	else
		snprintf(o->script, sizeof(o->script), "%s/../tools/bench/workload.py", dir);
	if (access(o->record, X_OK))
		die("%s: %s", o->record, strerror(errno));
	if (access(o->preload, R_OK))
		die("%s: %s", o->preload, strerror(errno));
	if (access(o->script, R_OK))
		die("%s: %s (--workload names it)", o->script, strerror(errno));
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "reps", required_argument, NULL, 'r' },
		{ "python", required_argument, NULL, 'P' },
		{ "out", required_argument, NULL, 'o' },
		{ "workload", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c;

	o->python = "python3";
	o->out = "bench-out";
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			o->quick = true;
			break;
		case 'r': {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || end == optarg || v < 1 || v > MAX_REPS) {
				fprintf(stderr, "asyncbpf-bench: invalid --reps '%s' (1 to %d)\n",
					optarg, MAX_REPS);
				exit(1);
			}
			o->reps = v;
			break;
		}
		case 'P':
			o->python = optarg;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'w':
			o->workload = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fprintf(stderr, "asyncbpf-bench: unknown option '%s' (see --help)\n",
				argv[optind - 1]);
			exit(1);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "asyncbpf-bench: unexpected argument '%s'\n", argv[optind]);
		exit(1);
	}
	if (!o->reps)
		o->reps = o->quick ? 2 : 5;
	o->requests = o->quick ? 24 : 120;
	o->work = 3000;
}

int main(int argc, char **argv)
{
	static struct config cfg[NCONFIGS];
	static const int quick_depths[] = { 10, 30, 60, 120 };
	static const int full_depths[] = { 5, 15, 30, 60, 120, 240 };
	double depth_cost[NREADERS][MAX_DEPTHS] = {};
	char tmp[] = "/tmp/asyncbpf-bench.XXXXXX", md[PATH_MAX];
	struct opts o = {};
	const int *depths;
	int ndepths, failed = 0;
	double t0 = now_s();

	parse_args(argc, argv, &o);
	if (geteuid())
		die("must run as root (the bpf reader needs CAP_BPF and CAP_PERFMON)");
	locate(&o);
	if (mkdir(o.out, 0755) && errno != EEXIST)
		die("cannot create %s: %s", o.out, strerror(errno));
	if (!mkdtemp(tmp))
		die("cannot create a temporary directory: %s", strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	depths = o.quick ? quick_depths : full_depths;
	ndepths = o.quick ? 4 : 6;

	cfg[0].reader = -1;
	for (int r = 0; r < NREADERS; r++)
		for (int f = 0; f < NFREQS; f++) {
			cfg[1 + r * NFREQS + f].reader = r;
			cfg[1 + r * NFREQS + f].freq = freqs[f];
		}
	/* interleaved: every repetition runs each configuration once, in a rotated order */
	for (int rep = 0; rep < o.reps; rep++) {
		for (int k = 0; k < NCONFIGS; k++) {
			struct config *c = &cfg[(k + rep) % NCONFIGS];
			char name[64];

			c->runs[c->nruns] = run_one(&o, tmp, c->reader, c->freq, o.requests, o.work,
						    0, c, rep % 2);
			if (!c->runs[c->nruns].ok)
				failed++;
			fprintf(stderr, "asyncbpf-bench: rep %d %-18s wall %.3f s cost %.0f ns\n",
				rep + 1, cname(c, name, sizeof(name)), c->runs[c->nruns].wall,
				c->runs[c->nruns].cost_ns);
			c->nruns++;
		}
	}
	for (int d = 0; d < ndepths; d++)
		for (int r = 0; r < NREADERS; r++) {
			struct run x = run_one(&o, tmp, r, 999, o.quick ? 4 : 12, o.work, depths[d],
					       NULL, 0);

			depth_cost[r][d] = x.ok ? x.cost_ns : NAN;
			fprintf(stderr, "asyncbpf-bench: depth %d %s: %.0f ns per sample\n",
				depths[d], readers[r], depth_cost[r][d]);
		}
	write_outputs(&o, cfg, depth_cost, depths, ndepths);
	write_svg(&o, depth_cost, depths, ndepths);
	{
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/profile.txt", tmp);
		unlink(path);
		snprintf(path, sizeof(path), "%s/stats.txt", tmp);
		unlink(path);
		rmdir(tmp);
	}
	snprintf(md, sizeof(md), "%s/readers.md", o.out);
	{
		char *text = slurp(md);

		fputs(text, stdout);
		free(text);
	}
	printf("\n%d runs failed; %.0f s; written to %s/\n", failed, now_s() - t0, o.out);
	return failed ? 1 : 0;
}

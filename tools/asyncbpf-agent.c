// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* asyncbpf-agent: profile all the time and ship each interval's profile to Pyroscope
 * and/or a directory of rotating pprof files (user/ship/). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile/profile.h"
#include "recorder/recorder.h"
#include "recorder/recorder_cli.h"
#include "ship/series.h"
#include "ship/ship.h"
#include "clock.h"
#include "errmsg.h"

#define PROG	     "asyncbpf-agent"
#define DEFAULT_FREQ 97 /* as Grafana Alloy's pyroscope.ebpf: not in step with 100 Hz timers */
#define MAX_LABELS   (SHIP_MAX_LABELS - 3) /* service_name, host, container_id */

static const char usage[] =
	"usage: asyncbpf-agent [selection options] [-F HZ] [--interval SECONDS]\n"
	"                      [--pyroscope URL] [--output-dir DIR [--keep N]]\n"
	"                      [--service-name NAME] [--label K=V]... [--tenant ID]\n"
	"                      [--basic-auth-file FILE | --bearer-token-file FILE]\n"
	"                      [--stats-interval SECONDS]\n"
	"\n"
	"Profiles Python processes (CPython 3.8-3.14) all the time and, every interval, sends\n"
	"the profile to Pyroscope and/or writes it into a directory. At least one sink.\n"
	"\n"
	"      --interval SECONDS  between profiles (default 15, 1 to 3600)\n"
	"      --pyroscope URL     POST each service's profile to URL/ingest\n"
	"      --output-dir DIR    write each profile to DIR/asyncbpf-TIME.pb.gz\n"
	"      --keep N            files kept in DIR, the newest (default 240)\n"
	"      --service-name NAME every profile's service (default: the container's label,\n"
	"                          else the process name)\n"
	"      --label K=V         one more label of every series; repeatable\n"
	"      --tenant ID         X-Scope-OrgID header\n"
	"      --basic-auth-file FILE    user:password for HTTP basic auth (read again on\n"
	"                          SIGHUP)\n"
	"      --bearer-token-file FILE  a bearer token (read again on SIGHUP)\n"
	"      --stats-interval SECONDS  a statistics line on stderr this often (default 60;\n"
	"                          0: only at exit)\n"
	"      --timeout SECONDS   per HTTP request (default 10)\n"
	"      --flush-timeout SECONDS   at SIGTERM, time left to send what is queued\n"
	"                          (default 10)\n"
	"      --queue-profiles N  profiles each sink holds while it cannot deliver (256)\n"
	"      --queue-mib MIB     bytes each sink holds (default 64 MiB)\n"
	"      --queue-age SECONDS oldest profile a sink holds (default and at most 3600)\n"
	"%s"
	"(-F defaults to 97 Hz here.)\n"
	"\n"
	"SIGTERM or SIGINT: the current interval is cut, sent with the queue, and the agent\n"
	"exits within --flush-timeout. SIGHUP: the credential files are read again.\n"
	"Exit status: 0 done, 1 usage error, 2 environment error, 3 a -p process cannot be\n"
	"profiled.\n"
	"See asyncbpf-agent(8).\n";

struct opts {
	struct recorder_opts r;
	struct recorder_cli cli;
	struct ship_opts s;
	struct ship_label labels[MAX_LABELS];
	double stats_interval, flush_timeout;
	bool keep_set;
};

static volatile sig_atomic_t stop, hup;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		hup = 1;
	else
		stop = sig;
}

static void handle_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

#define err(...) errmsg(PROG, __VA_ARGS__)

/* A number of seconds in [lo, hi]. */
static int seconds(const char *opt, const char *arg, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(arg, &end);
	if (*end || end == arg || errno || !(*out >= lo && *out <= hi)) {
		err("invalid %s '%s' (seconds, %g to %g)", opt, arg, lo, hi);
		return -1;
	}
	return 0;
}

static int count(const char *opt, const char *arg, unsigned long lo, unsigned long hi,
		 unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(arg, &end, 10);
	if (*end || end == arg || errno || arg[0] == '-' || *out < lo || *out > hi) {
		err("invalid %s '%s' (%lu to %lu)", opt, arg, lo, hi);
		return -1;
	}
	return 0;
}

static int add_label(struct opts *o, char *arg)
{
	char *eq = strchr(arg, '=');
	const char *why;

	if (!eq) {
		err("invalid --label '%s' (K=V)", arg);
		return -1;
	}
	*eq = 0;
	why = series_check_label(arg, eq + 1);
	for (int i = 0; i < o->s.nlabels && !why; i++)
		if (!strcmp(o->labels[i].key, arg))
			why = "given twice";
	if (!why && o->s.nlabels == MAX_LABELS)
		why = "too many labels (Pyroscope takes 30 names, 3 are asyncbpf's)";
	if (why) {
		err("invalid --label %s=%s: %s", arg, eq + 1, why);
		return -1;
	}
	o->labels[o->s.nlabels++] = (struct ship_label){ arg, eq + 1 };
	return 0;
}

enum {
	OPT_INTERVAL = 256,
	OPT_PYROSCOPE,
	OPT_DIR,
	OPT_KEEP,
	OPT_SERVICE,
	OPT_LABEL,
	OPT_TENANT,
	OPT_BASIC,
	OPT_BEARER,
	OPT_STATS,
	OPT_TIMEOUT,
	OPT_FLUSH,
	OPT_QPROFILES,
	OPT_QMIB,
	OPT_QAGE,
};

/* One of the agent's own options: 0, or -1 (said). */
static int agent_option(void *ctx, int c, char *arg)
{
	struct opts *o = ctx;
	/* the options that only name something */
	const char **name = c == OPT_DIR      ? &o->s.dir
			    : c == OPT_BASIC  ? &o->s.basic_auth_file
			    : c == OPT_BEARER ? &o->s.bearer_token_file
					      : NULL;
	unsigned long v;

	if (name) {
		*name = arg;
		return 0;
	}
	switch (c) {
	case OPT_INTERVAL:
		return seconds("--interval", arg, 1, 3600, &o->s.interval);
	case OPT_PYROSCOPE:
		if (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8)) {
			err("invalid --pyroscope '%s' (an http:// or https:// URL)", arg);
			return -1;
		}
		o->s.url = arg;
		return 0;
	case OPT_KEEP:
		o->keep_set = true;
		if (count("--keep", arg, 1, 1000000, &v))
			return -1;
		o->s.keep = (unsigned int)v;
		return 0;
	case OPT_SERVICE:
		if (!series_service_ok(arg)) {
			err("invalid --service-name '%s' (letters, digits, '_', '.', '-', '/')",
			    arg);
			return -1;
		}
		o->s.service = arg;
		return 0;
	case OPT_LABEL:
		return add_label(o, arg);
	case OPT_TENANT:
		if (!*arg || strpbrk(arg, "\r\n")) {
			err("invalid --tenant");
			return -1;
		}
		o->s.tenant = arg;
		return 0;
	case OPT_STATS:
		return seconds("--stats-interval", arg, 0, 86400, &o->stats_interval);
	case OPT_TIMEOUT:
		return seconds("--timeout", arg, 0.1, 600, &o->s.timeout);
	case OPT_FLUSH:
		return seconds("--flush-timeout", arg, 0, 600, &o->flush_timeout);
	case OPT_QPROFILES:
		if (count("--queue-profiles", arg, 2, 1000000, &v))
			return -1;
		o->s.queue_items = v;
		return 0;
	case OPT_QMIB:
		if (count("--queue-mib", arg, 1, 1 << 20, &v))
			return -1;
		o->s.queue_bytes = v << 20;
		return 0;
	case OPT_QAGE:
		return seconds("--queue-age", arg, 1, SHIP_MAX_AGE, &o->s.queue_age);
	case 'h':
		printf(usage, recorder_cli_help);
		exit(0);
	}
	err("unknown option (see --help)");
	return -1;
}

static int check_args(struct opts *o)
{
	if (!o->s.url && !o->s.dir) {
		err("no sink: give --pyroscope URL and/or --output-dir DIR (see --help)");
		return -1;
	}
	if (o->keep_set && !o->s.dir) {
		err("--keep needs --output-dir");
		return -1;
	}
	if (o->s.basic_auth_file && o->s.bearer_token_file) {
		err("--basic-auth-file and --bearer-token-file exclude each other");
		return -1;
	}
	if (!o->s.url && (o->s.tenant || o->s.basic_auth_file || o->s.bearer_token_file ||
			  o->s.service || o->s.nlabels)) {
		err("--tenant, credentials, --service-name and --label need --pyroscope");
		return -1;
	}
	return recorder_cli_finish(&o->cli, &o->r);
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		RECORDER_CLI_LONGOPTS,
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "pyroscope", required_argument, NULL, OPT_PYROSCOPE },
		{ "output-dir", required_argument, NULL, OPT_DIR },
		{ "keep", required_argument, NULL, OPT_KEEP },
		{ "service-name", required_argument, NULL, OPT_SERVICE },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ "tenant", required_argument, NULL, OPT_TENANT },
		{ "basic-auth-file", required_argument, NULL, OPT_BASIC },
		{ "bearer-token-file", required_argument, NULL, OPT_BEARER },
		{ "stats-interval", required_argument, NULL, OPT_STATS },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "flush-timeout", required_argument, NULL, OPT_FLUSH },
		{ "queue-profiles", required_argument, NULL, OPT_QPROFILES },
		{ "queue-mib", required_argument, NULL, OPT_QMIB },
		{ "queue-age", required_argument, NULL, OPT_QAGE },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	o->r.prog = o->s.prog = PROG;
	recorder_cli_init(&o->cli, &o->r, DEFAULT_FREQ);
	o->s.interval = 15;
	o->s.keep = SHIP_DEFAULT_KEEP;
	o->s.timeout = SHIP_SEND_TIMEOUT;
	o->s.queue_items = SHIP_QUEUE_ITEMS;
	o->s.queue_bytes = SHIP_QUEUE_BYTES;
	o->s.queue_age = SHIP_MAX_AGE;
	o->s.labels = o->labels;
	o->stats_interval = 60;
	o->flush_timeout = SHIP_FLUSH_TIMEOUT;
	if (recorder_cli_parse(&o->cli, &o->r, argc, argv, "h", longopts, agent_option, o))
		return -1;
	o->s.freq = o->r.freq;
	/* an agent runs for good and ships every interval: half the recorder's share for
	 * await links (new tasks and their creators still come at once from the uprobe) */
	o->r.snapshot_budget = 0.0025;
	return check_args(o);
}

struct agent {
	struct recorder *rec;
	struct ship *ship;
	uint64_t intervals;
};

static int cut(struct agent *a)
{
	struct recorder_cut c;
	struct profile *prof = recorder_cut(a->rec, &c);
	struct ship_interval iv;

	if (!prof) {
		err("out of memory: the interval's samples are kept for the next");
		return -1;
	}
	iv = (struct ship_interval){ c.start_ns, c.duration_ns, c.lost };
	ship_submit(a->ship, prof, &iv);
	profile_free(prof);
	a->intervals++;
	return 0;
}

static void stats(struct agent *a, bool final)
{
	struct recorder_totals t;
	struct ship_run run;

	recorder_totals(a->rec, &t);
	run = (struct ship_run){ a->intervals, t.recorded, t.lost, recorder_ntargets(a->rec) };
	ship_print_stats(a->ship, stderr, &run, final);
}

/* Cuts every interval until a signal, the -p processes' end or a failure. */
static int run(struct agent *a, const struct opts *o)
{
	double t = mono_s(), next_cut = t + o->s.interval, next_stats = t + o->stats_interval;
	enum recorder_end end;

	while (!stop) {
		double until = next_cut;

		if (o->stats_interval > 0 && next_stats < until)
			until = next_stats;
		/* slices of at most 1 s: SIGHUP is handled within a second */
		if (until > t + 1)
			until = t + 1;
		end = recorder_run(a->rec, until > t + 0.001 ? until - t : 0.001, &stop);
		if (end == RECORDER_FAILED)
			return EXIT_ENV;
		if (hup) {
			hup = 0;
			ship_reload(a->ship);
		}
		if (end == RECORDER_ENDED)
			break;
		t = mono_s();
		if (t >= next_cut) {
			cut(a);
			next_cut += o->s.interval;
			/* a cut that came late does not make the next ones early */
			if (next_cut <= t)
				next_cut = t + o->s.interval;
		}
		if (o->stats_interval > 0 && t >= next_stats) {
			stats(a, false);
			next_stats += o->stats_interval;
			if (next_stats <= t)
				next_stats = t + o->stats_interval;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {};
	struct agent a = {};
	int rc;

	if (parse_args(argc, argv, &o)) {
		recorder_cli_free(&o.cli);
		return EXIT_USAGE;
	}
	/* recorder_start checks privileges and BTF, and calls handle_signals once the reader
	 * is loaded (a handled SIGINT tells tests the agent is about to sample) */
	signal(SIGPIPE, SIG_IGN);
	o.r.stop = &stop;
	o.r.reader_open = handle_signals;
	if (ship_new(&a.ship, &o.s)) {
		recorder_cli_free(&o.cli);
		return EXIT_ENV;
	}
	rc = recorder_start(&a.rec, &o.r);
	if (rc) {
		ship_free(a.ship);
		recorder_cli_free(&o.cli);
		return rc;
	}
	rc = run(&a, &o);
	/* the partial interval, then the queues within the flush timeout */
	recorder_stop(a.rec);
	cut(&a);
	ship_flush(a.ship, o.flush_timeout);
	stats(&a, true);
	ship_free(a.ship);
	recorder_free(a.rec);
	recorder_cli_free(&o.cli);
	return rc;
}

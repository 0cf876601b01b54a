// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The sinks, their sender threads and the statistics; see ship.h. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ship/filesink.h"
#include "ship/pyroscope.h"
#include "ship/series.h"
#include "ship/ship.h"
#include "profile/writers.h"
#include "clock.h"

#define BACKOFF_FIRST 0.5   /* s, doubled at each failure in a row */
#define BACKOFF_MAX   300.0 /* s, whatever the interval */
#define MAX_SAID      32    /* kinds of failure said once */

struct sink {
	struct ship *s;
	const struct sink_ops *ops;
	void *impl;
	struct shipq q; /* its lock also guards what follows */
	pthread_t thread;
	bool started, flushing, quit;
	atomic_bool abort; /* a running delivery gives up */
	uint64_t sent, failed, retried, samples_sent;
	/* the sender's own */
	unsigned int failures; /* in a row */
	int said[MAX_SAID], nsaid;
	unsigned int seed;
};

struct ship {
	struct ship_opts o;
	char host[256];
	struct sink sinks[2];
	int nsinks;
	struct sink *pyro, *files;
	double backoff_cap;
	/* the submitting thread's */
	uint64_t parts, series, samples_dropped, encode_failed;
	double started, last_at, last_cpu;
};

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static long rss_kib(void)
{
	long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%*d %ld", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return pages * (sysconf(_SC_PAGESIZE) / 1024);
}

/* One whole line on stderr (threads say things too). */
static void say(const struct ship *s, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n = snprintf(line, sizeof(line), "%s: ", s->o.prog);

	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	fputs(line, stderr);
}

/* First time this kind of failure is seen by this sender? */
static bool first_time(struct sink *k, int kind)
{
	for (int i = 0; i < k->nsaid; i++)
		if (k->said[i] == kind)
			return false;
	if (k->nsaid < MAX_SAID)
		k->said[k->nsaid++] = kind;
	return true;
}

/* Full jitter would let two retries come back to back; half the delay fixed keeps
 * them spaced while still spreading agents that failed together. */
static double backoff(struct sink *k)
{
	double d = BACKOFF_FIRST;

	for (unsigned int i = 1; i < k->failures && d < k->s->backoff_cap; i++)
		d *= 2;
	if (d > k->s->backoff_cap)
		d = k->s->backoff_cap;
	return d * (0.5 + 0.5 * rand_r(&k->seed) / (double)RAND_MAX);
}

static void abs_time(struct timespec *ts, double t)
{
	ts->tv_sec = (time_t)t;
	ts->tv_nsec = (long)((t - (double)ts->tv_sec) * 1e9);
}

/* Under q.lock: the item to deliver next, NULL when the sender is to end. */
static struct ship_item *next_item(struct sink *k, double retry_at)
{
	struct timespec ts;

	for (;;) {
		if (k->quit)
			return NULL;
		shipq_expire_locked(&k->q, realtime_ns());
		if (k->q.head && mono_s() >= retry_at)
			return k->q.head;
		if (!k->q.head && k->flushing)
			return NULL;
		if (k->q.head) {
			abs_time(&ts, retry_at);
			pthread_cond_timedwait(&k->q.cond, &k->q.lock, &ts);
		} else {
			pthread_cond_wait(&k->q.cond, &k->q.lock);
		}
	}
}

static void delivered(struct sink *k, struct ship_item *it, enum deliver r,
		      const struct deliver_info *di, double *retry_at)
{
	const char *name = k->ops->name;

	switch (r) {
	case DELIVER_OK:
		if (k->failures)
			say(k->s, "%s: delivered again after %u failed attempt%s", name,
			    k->failures, k->failures > 1 ? "s" : "");
		k->failures = 0;
		k->sent++;
		k->samples_sent += it->samples;
		shipq_remove_locked(&k->q, it);
		break;
	case DELIVER_REJECT:
		if (first_time(k, di->kind))
			say(k->s, "%s: %s; profiles refused so are not sent again (said once)",
			    name, di->what);
		k->failed++;
		shipq_remove_locked(&k->q, it);
		break;
	case DELIVER_RETRY:
		/* each kind once, and again at the start of every outage */
		if (first_time(k, di->kind) || !k->failures)
			say(k->s, "%s: %s; retrying with backoff", name, di->what);
		k->failures++;
		k->retried++;
		*retry_at = mono_s() + backoff(k);
		break;
	}
}

static void *sender(void *arg)
{
	struct sink *k = arg;
	struct deliver_info di;
	struct ship_item *it;
	double retry_at = 0;
	enum deliver r;

	pthread_mutex_lock(&k->q.lock);
	while ((it = next_item(k, retry_at))) {
		it->busy = true;
		pthread_mutex_unlock(&k->q.lock);
		memset(&di, 0, sizeof(di));
		r = k->ops->deliver(k->impl, it, &k->abort, &di);
		pthread_mutex_lock(&k->q.lock);
		it->busy = false;
		/* aborted at the flush deadline: it stays, counted as dropped at exit */
		if (k->quit && r == DELIVER_RETRY)
			break;
		delivered(k, it, r, &di, &retry_at);
	}
	pthread_mutex_unlock(&k->q.lock);
	return NULL;
}

static void add_sink(struct ship *s, const struct sink_ops *ops, void *impl)
{
	struct sink *k = &s->sinks[s->nsinks++];

	k->s = s;
	k->ops = ops;
	k->impl = impl;
	k->seed = (unsigned int)(realtime_ns() ^ (uint64_t)getpid() ^ (uint64_t)s->nsinks);
	atomic_init(&k->abort, false);
	shipq_init(&k->q, s->o.queue_items, s->o.queue_bytes, s->o.queue_age);
}

static int open_sinks(struct ship *s)
{
	char why[512];

	if (s->o.url) {
		struct pyro_opts po = {
			.url = s->o.url,
			.tenant = s->o.tenant,
			.basic_auth_file = s->o.basic_auth_file,
			.bearer_token_file = s->o.bearer_token_file,
			.timeout = s->o.timeout,
			.freq = s->o.freq,
		};
		struct pyro *p = pyro_new(&po, why, sizeof(why));

		if (!p) {
			say(s, "pyroscope: %s", why);
			return -1;
		}
		add_sink(s, &pyro_ops, p);
		s->pyro = &s->sinks[s->nsinks - 1];
	}
	if (s->o.dir) {
		struct filesink *f = filesink_new(s->o.dir, s->o.keep, why, sizeof(why));

		if (!f) {
			say(s, "%s", why);
			return -1;
		}
		add_sink(s, &filesink_ops, f);
		s->files = &s->sinks[s->nsinks - 1];
	}
	return 0;
}

int ship_new(struct ship **out, const struct ship_opts *o)
{
	struct ship *s = calloc(1, sizeof(*s));
	sigset_t all, old;

	*out = NULL;
	if (!s) {
		fprintf(stderr, "%s: out of memory\n", o->prog);
		return -1;
	}
	s->o = *o;
	if (!s->o.max_samples)
		s->o.max_samples = SHIP_MAX_SAMPLES;
	if (!s->o.max_bytes)
		s->o.max_bytes = SHIP_MAX_BYTES;
	if (o->host)
		snprintf(s->host, sizeof(s->host), "%s", o->host);
	else if (gethostname(s->host, sizeof(s->host) - 1))
		s->host[0] = 0;
	s->backoff_cap = 2 * o->interval;
	if (s->backoff_cap < 1)
		s->backoff_cap = 1;
	if (s->backoff_cap > BACKOFF_MAX)
		s->backoff_cap = BACKOFF_MAX;
	s->started = s->last_at = mono_s();
	s->last_cpu = cpu_seconds();
	if (open_sinks(s)) {
		ship_free(s);
		return -1;
	}
	/* the senders take no signals: the recording's thread handles them */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (int i = 0; i < s->nsinks; i++) {
		if (pthread_create(&s->sinks[i].thread, NULL, sender, &s->sinks[i])) {
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			say(s, "cannot start a sender thread");
			ship_free(s);
			return -1;
		}
		s->sinks[i].started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	*out = s;
	return 0;
}

static int gzip_mem(const uint8_t *raw, size_t len, uint8_t **out, size_t *outlen)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	int ret;

	if (!m)
		return -ENOMEM;
	ret = pprof_gzip(m, raw, len);
	if (fclose(m) || ret) {
		free(buf);
		return -ENOMEM;
	}
	*out = (uint8_t *)buf;
	*outlen = n;
	return 0;
}

static void push(struct sink *k, uint8_t *data, size_t len, char *name,
		 const struct ship_interval *iv, uint64_t samples)
{
	struct ship_item *it = ship_item_new(data, len, name, iv->start_ns,
					     iv->start_ns + iv->duration_ns, samples);

	if (!it) {
		k->s->encode_failed++;
		return;
	}
	pthread_mutex_lock(&k->q.lock);
	shipq_push_locked(&k->q, it, realtime_ns());
	pthread_mutex_unlock(&k->q.lock);
}

/* gzip and queue: names are the series', data the part's */
static int queue_compressed(struct sink *k, const uint8_t *raw, size_t len, const char *name,
			    const struct ship_interval *iv, uint64_t samples)
{
	uint8_t *data;
	size_t n;
	char *dup = strdup(name);

	if (!dup || gzip_mem(raw, len, &data, &n)) {
		free(dup);
		k->s->encode_failed++;
		return 0;
	}
	push(k, data, n, dup, iv, samples);
	return 0;
}

struct part_ctx {
	struct ship *s;
	const struct ship_interval *iv;
};

static int on_part(void *ctx, const struct series_part *p)
{
	struct part_ctx *c = ctx;

	c->s->parts++;
	return queue_compressed(c->s->pyro, p->raw, p->len, p->name, c->iv, p->samples);
}

void ship_submit(struct ship *s, struct profile *prof, const struct ship_interval *iv)
{
	struct writer_meta meta = {
		.start_ns = iv->start_ns,
		.duration_ns = iv->duration_ns,
		.has_lost = true,
		.lost = iv->lost,
	};

	if (s->files) {
		char name[128];
		uint8_t *raw;
		size_t len;

		filesink_name(name, sizeof(name), iv->start_ns);
		if (pprof_encode(prof, &meta, &raw, &len)) {
			s->encode_failed++;
		} else {
			queue_compressed(s->files, raw, len, name, iv, profile_total(prof));
			free(raw);
		}
	}
	if (s->pyro && profile_total(prof)) {
		struct series_opts so = {
			.service = s->o.service,
			.host = s->host[0] ? s->host : NULL,
			.labels = s->o.labels,
			.nlabels = s->o.nlabels,
			.max_samples = s->o.max_samples,
			.max_bytes = s->o.max_bytes,
		};
		struct part_ctx c = { .s = s, .iv = iv };
		struct series_result res;

		/* lost samples belong to no service: the stats line counts them */
		meta.has_lost = false;
		if (series_split(prof, &so, &meta, on_part, &c, &res))
			s->encode_failed++;
		s->series += res.series;
		s->samples_dropped += res.dropped;
	}
}

void ship_reload(struct ship *s)
{
	char why[512];

	if (!s->pyro || (!s->o.basic_auth_file && !s->o.bearer_token_file))
		return;
	if (pyro_reload(s->pyro->impl, why, sizeof(why)))
		say(s, "pyroscope: credentials not reloaded: %s", why);
	else
		say(s, "pyroscope: credentials reloaded");
}

static void stop_sender(struct sink *k)
{
	pthread_mutex_lock(&k->q.lock);
	k->quit = true;
	atomic_store(&k->abort, true);
	pthread_cond_broadcast(&k->q.cond);
	pthread_mutex_unlock(&k->q.lock);
	pthread_join(k->thread, NULL);
	k->started = false;
}

void ship_flush(struct ship *s, double seconds)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)seconds;
	ts.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	for (int i = 0; i < s->nsinks; i++) {
		struct sink *k = &s->sinks[i];

		pthread_mutex_lock(&k->q.lock);
		k->flushing = true;
		pthread_cond_broadcast(&k->q.cond);
		pthread_mutex_unlock(&k->q.lock);
	}
	for (int i = 0; i < s->nsinks; i++) {
		struct sink *k = &s->sinks[i];

		if (!k->started)
			continue;
		if (!pthread_timedjoin_np(k->thread, NULL, &ts))
			k->started = false;
		else
			stop_sender(k);
		pthread_mutex_lock(&k->q.lock);
		while (k->q.head) {
			k->q.dropped_exit++;
			shipq_remove_locked(&k->q, k->q.head);
		}
		pthread_mutex_unlock(&k->q.lock);
	}
}

static void print_sink(struct sink *k, FILE *f)
{
	const char *n = k->ops->name;
	struct shipq *q = &k->q;

	pthread_mutex_lock(&q->lock);
	fprintf(f,
		" %s.queued=%llu %s.sent=%llu %s.failed=%llu %s.retried=%llu %s.dropped=%llu"
		" %s.dropped_full=%llu %s.dropped_old=%llu %s.dropped_exit=%llu %s.queue=%zu"
		" %s.queue_kib=%zu %s.queue_peak=%zu %s.samples_sent=%llu",
		n, (unsigned long long)q->pushed, n, (unsigned long long)k->sent, n,
		(unsigned long long)k->failed, n, (unsigned long long)k->retried, n,
		(unsigned long long)(q->dropped_full + q->dropped_old + q->dropped_exit), n,
		(unsigned long long)q->dropped_full, n, (unsigned long long)q->dropped_old, n,
		(unsigned long long)q->dropped_exit, n, q->n, n, (q->bytes + 1023) / 1024, n,
		q->peak_n, n, (unsigned long long)k->samples_sent);
	pthread_mutex_unlock(&q->lock);
}

void ship_print_stats(struct ship *s, FILE *f, const struct ship_run *run, bool final)
{
	double now = mono_s(), cpu = cpu_seconds();
	/* the last line averages the whole run */
	double span = final ? now - s->started : now - s->last_at;
	double used = final ? cpu : cpu - s->last_cpu;
	char *line = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len);

	if (!m)
		return;
	fprintf(m,
		"%s: %s uptime_s=%.0f intervals=%llu samples=%llu lost=%llu processes=%zu "
		"series=%llu profiles=%llu samples_dropped=%llu encode_failed=%llu",
		s->o.prog, final ? "exit stats" : "stats", now - s->started,
		(unsigned long long)run->intervals, (unsigned long long)run->samples,
		(unsigned long long)run->lost, run->processes, (unsigned long long)s->series,
		(unsigned long long)s->parts, (unsigned long long)s->samples_dropped,
		(unsigned long long)s->encode_failed);
	for (int i = 0; i < s->nsinks; i++)
		print_sink(&s->sinks[i], m);
	fprintf(m, " cpu_pct=%.2f cpu_s=%.2f rss_kib=%ld\n", span > 0 ? 100 * used / span : 0, cpu,
		rss_kib());
	if (!fclose(m))
		fputs(line, f);
	free(line);
	s->last_at = now;
	s->last_cpu = cpu;
}

void ship_free(struct ship *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nsinks; i++) {
		struct sink *k = &s->sinks[i];

		if (k->started)
			stop_sender(k);
		shipq_destroy(&k->q);
		k->ops->free(k->impl);
	}
	free(s);
}

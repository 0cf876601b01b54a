// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* POST /ingest?name=APP{labels}&from=&until=&format=pprof&sampleRate=&spyName= with the
 * gzip pprof as the body, through libcurl; see pyroscope.h. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ship/pyroscope.h"

#define SECRET_MAX 4096
/* spyName: pyspy, rbspy and scripting make Pyroscope rewrite function names */
#define SPY_NAME "asyncbpf"

struct pyro {
	struct pyro_opts o;
	char *base; /* the URL without a trailing '/' */
	CURL *curl; /* the sender thread's only */
	pthread_mutex_t lock;
	/* credentials, under lock: reloaded by another thread */
	char user[SECRET_MAX], password[SECRET_MAX];
	char bearer[SECRET_MAX + 32]; /* the whole header */
	char errbuf[CURL_ERROR_SIZE];
	char body[256]; /* the start of the last response */
	size_t bodylen;
};

/* The first line of a file of at most SECRET_MAX bytes, trailing white space removed. */
static int read_secret(const char *path, char *buf, size_t len, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t n;
	char *nl;

	if (fd < 0) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return -1;
	}
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf[n] = 0;
	if ((nl = strchr(buf, '\n')))
		*nl = 0;
	for (n = strlen(buf); n > 0 && (buf[n - 1] == '\r' || buf[n - 1] == ' ');)
		buf[--n] = 0;
	if (!n) {
		snprintf(why, whylen, "%s is empty", path);
		return -1;
	}
	return 0;
}

static int load_credentials(struct pyro *p, char *why, size_t whylen)
{
	char secret[SECRET_MAX], *colon;
	int ret = 0;

	if (p->o.basic_auth_file) {
		if (read_secret(p->o.basic_auth_file, secret, sizeof(secret), why, whylen))
			return -1;
		colon = strchr(secret, ':');
		if (!colon) {
			snprintf(why, whylen, "%s: not user:password", p->o.basic_auth_file);
			ret = -1;
		} else {
			*colon = 0;
			pthread_mutex_lock(&p->lock);
			snprintf(p->user, sizeof(p->user), "%s", secret);
			snprintf(p->password, sizeof(p->password), "%s", colon + 1);
			pthread_mutex_unlock(&p->lock);
		}
	} else if (p->o.bearer_token_file) {
		if (read_secret(p->o.bearer_token_file, secret, sizeof(secret), why, whylen))
			return -1;
		pthread_mutex_lock(&p->lock);
		snprintf(p->bearer, sizeof(p->bearer), "Authorization: Bearer %s", secret);
		pthread_mutex_unlock(&p->lock);
	}
	explicit_bzero(secret, sizeof(secret));
	return ret;
}

int pyro_reload(struct pyro *p, char *why, size_t whylen)
{
	return load_credentials(p, why, whylen);
}

static void pyro_free(void *impl)
{
	struct pyro *p = impl;

	if (!p)
		return;
	if (p->curl)
		curl_easy_cleanup(p->curl);
	curl_global_cleanup();
	pthread_mutex_destroy(&p->lock);
	explicit_bzero(p->password, sizeof(p->password));
	explicit_bzero(p->bearer, sizeof(p->bearer));
	free(p->base);
	free(p);
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct pyro *p = ctx;
	size_t len = size * n, room = sizeof(p->body) - 1 - p->bodylen;

	memcpy(p->body + p->bodylen, data, len < room ? len : room);
	p->bodylen += len < room ? len : room;
	return len;
}

static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return atomic_load((atomic_bool *)ctx) ? 1 : 0;
}

struct pyro *pyro_new(const struct pyro_opts *o, char *why, size_t whylen)
{
	struct pyro *p = calloc(1, sizeof(*p));
	size_t n;

	if (!p || curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(why, whylen, "cannot initialise libcurl");
		free(p);
		return NULL;
	}
	p->o = *o;
	pthread_mutex_init(&p->lock, NULL);
	p->base = strdup(o->url);
	p->curl = curl_easy_init();
	if (!p->base || !p->curl) {
		snprintf(why, whylen, "out of memory");
		pyro_free(p);
		return NULL;
	}
	for (n = strlen(p->base); n && p->base[n - 1] == '/';)
		p->base[--n] = 0;
	if (load_credentials(p, why, whylen)) {
		pyro_free(p);
		return NULL;
	}
	curl_easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(p->curl, CURLOPT_USERAGENT, "asyncbpf-agent");
	curl_easy_setopt(p->curl, CURLOPT_ERRORBUFFER, p->errbuf);
	curl_easy_setopt(p->curl, CURLOPT_TIMEOUT_MS, (long)(o->timeout * 1000));
	curl_easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(o->timeout * 1000));
	curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, p);
	curl_easy_setopt(p->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(p->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(p->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (o->basic_auth_file)
		curl_easy_setopt(p->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
	return p;
}

static char *ingest_url(struct pyro *p, const struct ship_item *it)
{
	char *name = curl_easy_escape(p->curl, it->name, 0);
	unsigned long long from = it->from_ns / 1000000000ull, until = it->until_ns / 1000000000ull;
	char *url = NULL;

	if (name &&
	    asprintf(&url,
		     "%s/ingest?name=%s&from=%llu&until=%llu&format=pprof&sampleRate=%u&spyName=%s",
		     p->base, name, from, until < from ? from : until, p->o.freq, SPY_NAME) < 0)
		url = NULL;
	curl_free(name);
	return url;
}

static void first_line(char *s)
{
	for (; *s; s++)
		if (*s == '\n' || *s == '\r') {
			*s = 0;
			break;
		} else if ((unsigned char)*s < 0x20) {
			*s = ' ';
		}
}

static enum deliver pyro_deliver(void *impl, const struct ship_item *it, atomic_bool *abort,
				 struct deliver_info *di)
{
	struct pyro *p = impl;
	struct curl_slist *hdrs = NULL, *h;
	char tenant[512];
	char *url = ingest_url(p, it);
	CURLcode rc;
	long status = 0;

	if (!url) {
		di->kind = ENOMEM;
		snprintf(di->what, sizeof(di->what), "out of memory");
		return DELIVER_RETRY;
	}
	hdrs = curl_slist_append(hdrs, "Content-Type: application/octet-stream");
	/* no 100-continue round trip before each body */
	hdrs = (h = curl_slist_append(hdrs, "Expect:")) ? h : hdrs;
	if (p->o.tenant) {
		snprintf(tenant, sizeof(tenant), "X-Scope-OrgID: %s", p->o.tenant);
		hdrs = (h = curl_slist_append(hdrs, tenant)) ? h : hdrs;
	}
	pthread_mutex_lock(&p->lock);
	if (p->bearer[0])
		hdrs = (h = curl_slist_append(hdrs, p->bearer)) ? h : hdrs;
	if (p->o.basic_auth_file) {
		curl_easy_setopt(p->curl, CURLOPT_USERNAME, p->user);
		curl_easy_setopt(p->curl, CURLOPT_PASSWORD, p->password);
	}
	pthread_mutex_unlock(&p->lock);
	curl_easy_setopt(p->curl, CURLOPT_URL, url);
	curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, (const char *)it->data);
	curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)it->len);
	curl_easy_setopt(p->curl, CURLOPT_XFERINFODATA, abort);
	p->errbuf[0] = 0;
	p->bodylen = 0;
	rc = curl_easy_perform(p->curl);
	curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdrs);
	free(url);
	p->body[p->bodylen] = 0;
	first_line(p->body);
	if (rc != CURLE_OK) {
		di->kind = SINK_KIND_CURL + rc;
		snprintf(di->what, sizeof(di->what), "%s: %s", p->base,
			 p->errbuf[0] ? p->errbuf : curl_easy_strerror(rc));
		return DELIVER_RETRY;
	}
	curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300)
		return DELIVER_OK;
	di->kind = (int)status;
	snprintf(di->what, sizeof(di->what), "%s: HTTP %ld%s%.200s", p->base, status,
		 p->body[0] ? ": " : "", p->body);
	return status == 429 || status == 408 || status >= 500 ? DELIVER_RETRY : DELIVER_REJECT;
}

const struct sink_ops pyro_ops = {
	.name = "pyroscope",
	.deliver = pyro_deliver,
	.free = pyro_free,
};

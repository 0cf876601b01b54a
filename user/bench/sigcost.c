// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "bench/sigcost.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench/benchstats.h"
#include "clock.h"

static volatile sig_atomic_t delivered;

static void on_signal(int sig)
{
	(void)sig;
	delivered++;
}

/* The median time of n tgkill calls to this thread with sig; NAN on an error. */
static double tgkill_ns(int n, int sig)
{
	double *v = malloc(n * sizeof(*v)), med;
	pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);

	if (!v)
		return NAN;
	for (int i = 0; i < n; i++) {
		double t0 = mono_ns();
		/* an unblocked signal to the calling thread is delivered before tgkill returns */
		long rc = syscall(SYS_tgkill, pid, tid, sig);

		v[i] = rc ? NAN : mono_ns() - t0;
	}
	med = bench_summarize(v, n).med;
	free(v);
	return med;
}

double bench_signal_ns(int n)
{
	struct sigaction act = { .sa_handler = on_signal, .sa_flags = SA_RESTART }, old;
	double with, without;
	int sig = SIGRTMIN + 1;

	sigemptyset(&act.sa_mask);
	if (n < 1 || sigaction(sig, &act, &old))
		return NAN;
	delivered = 0;
	with = tgkill_ns(n, sig);
	without = tgkill_ns(n, 0);
	sigaction(sig, &old, NULL);
	if (delivered != n || isnan(with) || isnan(without))
		return NAN;
	return with - without;
}

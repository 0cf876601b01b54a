// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <time.h>

#include "asyncio/snappace.h"

#define ACTIVE_INTERVAL 0.5   /* s between snapshots of a process being sampled */
#define IDLE_MAX	8.0   /* s at most between snapshots of an idle process */
#define PROC_SHARE	0.005 /* of a core, at most, for one process's snapshots */
#define BURST		0.05  /* s of CPU the budget may save up */

double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void snapshot_init(struct snappace *sp, double now, double budget)
{
	*sp = (struct snappace){ .tokens = BURST, .filled = now, .budget = budget };
}

void snapshot_budget_fill(struct snappace *sp, double now)
{
	sp->tokens += (now - sp->filled) * sp->budget;
	if (sp->tokens > BURST)
		sp->tokens = BURST;
	sp->filled = now;
}

static double max_d(double a, double b)
{
	return a > b ? a : b;
}

bool snapshot_due(const struct snapplan *tg, uint64_t samples, double now)
{
	bool active = samples != tg->samples_seen;

	if (now >= tg->next_refresh)
		return true;
	/* an idle process that runs again is read soon, within its cost share */
	return active && now >= tg->last_refresh + max_d(ACTIVE_INTERVAL, tg->snap_floor);
}

bool snapshot_first(const struct snapplan *tg)
{
	return tg->interval == 0;
}

void snapshot_done(struct snappace *sp, struct snapplan *tg, uint64_t samples, double now,
		   double cpu)
{
	bool active = samples != tg->samples_seen;

	sp->taken++;
	sp->cpu += cpu;
	/* one costly process pays with its own interval, not by starving the others */
	sp->tokens = sp->tokens - cpu > -BURST ? sp->tokens - cpu : -BURST;
	tg->snap_floor = cpu / PROC_SHARE;
	if (active || !tg->interval)
		tg->interval = ACTIVE_INTERVAL;
	else if (tg->interval < IDLE_MAX)
		tg->interval = tg->interval * 2 < IDLE_MAX ? tg->interval * 2 : IDLE_MAX;
	tg->samples_seen = samples;
	tg->last_refresh = now;
	tg->next_refresh = now + max_d(tg->interval, tg->snap_floor);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "recorder/status.h"

static bool enabled, shown;
static const char *prefix;

bool status_init(const char *prog)
{
	prefix = prog;
	enabled = isatty(STDERR_FILENO);
	return enabled;
}

void status_show(double elapsed, uint64_t samples, size_t processes, uint64_t lost)
{
	struct winsize ws;
	char line[160];
	int width = sizeof(line) - 1, n;

	if (!enabled)
		return;
	/* a line longer than the terminal wraps, and '\r' would not return to its start */
	if (!ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) && ws.ws_col > 1 && ws.ws_col <= width)
		width = ws.ws_col - 1;
	n = snprintf(line, sizeof(line),
		     "%s: %.0f s, %llu samples, %zu Python process%s, %llu lost", prefix, elapsed,
		     (unsigned long long)samples, processes, processes == 1 ? "" : "es",
		     (unsigned long long)lost);
	if (n > width)
		line[width] = 0;
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	shown = true;
}

void status_clear(void)
{
	if (!shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	shown = false;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A program's own SIGSEGV handler, for fault_target.py. */
#include <signal.h>
#include <unistd.h>

static void on_segv(int sig)
{
	static const char msg[] = "own handler\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(43);
	_exit(42);
}

int install(void)
{
	struct sigaction act = { .sa_handler = on_segv };

	sigemptyset(&act.sa_mask);
	return sigaction(SIGSEGV, &act, NULL);
}

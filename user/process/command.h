/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Running a command under the profiler: the child is forked early and execs only when
 * released, once sampling runs; its descendants are found in /proc (the profiler is
 * their subreaper, so orphans stay in the tree), and an exec is noticed. */
#ifndef ASYNCBPF_COMMAND_H
#define ASYNCBPF_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "process/examine.h"

struct command;

/* Splits "OPTIONS -- COMMAND [ARG...]" at the first "--": returns the command (an empty
 * one if nothing follows) and sets *argc to count what precedes "--". NULL if there is
 * no "--". */
char **command_split(int *argc, char **argv);

/* Called when a descendant already reported has exec'd another image: whatever was
 * known of pid is stale. The new image is then examined. */
typedef void (*command_exec_cb)(void *ctx, pid_t pid);

/* Forks the child, which waits for command_release. 0, or -errno with a reason. */
int command_spawn(struct command **out, char *const argv[], char *why, size_t whylen);

/* Lets the child exec argv. 0 once it has; -errno of a failed exec (the child has then
 * exited) with a one-line reason. */
int command_release(struct command *c, char *why, size_t whylen);

pid_t command_pid(const struct command *c);

/* How many of the command's processes (images) ran a supported Python. */
unsigned int command_pythons(const struct command *c);

/* Examines the command and its descendants, each once per image (not-ready processes
 * again at the next scan). Scans at most every interval_ms; earlier calls return at
 * once. */
int command_scan(struct command *c, unsigned int interval_ms, examine_fn examine,
		 command_exec_cb execd, void *ctx);

/* Collects exited children (orphaned descendants included); true once the command has
 * exited. */
bool command_exited(struct command *c);

/* Ends the command if it still runs: waits grace seconds for it to exit by itself,
 * then sends SIGTERM, and SIGKILL 5 s later. Returns its exit status as a shell reports
 * it: the code it exited with, or 128 + the signal that killed it; -1 if it was never
 * released (the child exits without running it). */
int command_finish(struct command *c, double grace);

/* An unreleased child exits without running the command. */
void command_free(struct command *c);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A one-line progress report on stderr while recording, only when stderr is a
 * terminal: rewritten in place with '\r', erased before any other message. */
#ifndef ASYNCBPF_STATUS_H
#define ASYNCBPF_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Turns the status line on if stderr is a terminal; returns whether it is on. */
bool status_init(void);

void status_show(double elapsed, uint64_t samples, size_t processes, uint64_t lost);

/* Erases the line if one is shown (before another message, and at the end). */
void status_clear(void);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Reading back what the writers wrote, from memory. Any bytes are safe input: a reader
 * either fills the profile or returns -1 with a one-line reason. */
#ifndef ASYNCBPF_READERS_H
#define ASYNCBPF_READERS_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/* Collapsed stacks ("frame;frame COUNT" lines). */
int collapsed_read(const char *buf, size_t len, struct profile *p, char *why, size_t whylen);
/* pprof profile.proto, gzip-compressed or not. */
int pprof_read(const void *buf, size_t len, struct profile *p, char *why, size_t whylen);
/* Either, told apart by their first bytes. */
int profile_read(const void *buf, size_t len, struct profile *p, char *why, size_t whylen);

/* Interns a frame given as the writers print it: "name (pid N)", "name (tid N)",
 * "<task name>", "<thread name>", "qualname (file:line)"; anything else is a
 * FRAME_SPECIAL. */
uint32_t profile_frame_parse(struct profile *p, const char *s, size_t len);

#endif

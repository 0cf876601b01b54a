/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A directory of pprof files, one per interval, the newest N kept: each written under
 * a temporary name and renamed (profile/outfile.c: no symlink followed, mode 0600). */
#ifndef ASYNCBPF_FILESINK_H
#define ASYNCBPF_FILESINK_H

#include <stddef.h>
#include <stdint.h>

#include "ship/sink.h"

extern const struct sink_ops filesink_ops;

/* Checks that dir can be written safely and removes temporary files that earlier runs
 * left; NULL with a one-line reason in why. */
struct filesink *filesink_new(const char *dir, unsigned int keep, char *why, size_t whylen);
/* The file name of a profile that began at from_ns (CLOCK_REALTIME): names sort as
 * times do. */
void filesink_name(char *buf, size_t len, uint64_t from_ns);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef ASYNCBPF_PY_LAYOUTS_H
#define ASYNCBPF_PY_LAYOUTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/pylayout.h"

/* PY_VERSION_HEX helpers: 0xMMmmppLS (major, minor, micro, level, serial). */
#define PYV(major, minor) (((uint32_t)(major) << 24) | ((uint32_t)(minor) << 16))
#define PYV_MAJOR(v)	  ((v) >> 24 & 0xff)
#define PYV_MINOR(v)	  ((v) >> 16 & 0xff)
#define PYV_MICRO(v)	  ((v) >> 8 & 0xff)
#define PYV_LEVEL(v)	  ((v) >> 4 & 0xf) /* 0xA alpha, 0xB beta, 0xC rc, 0xF final */
#define PYV_MINOR_OF(v)	  ((v)&0xffff0000u)

/* Layout for a release line up to 3.12 (3.13+ describe themselves: pydebug.h; 3.13's entry
 * is kept to check that decoding against), or NULL with a one-line reason in why. */
const struct py_layout *py_layout_find(uint32_t version_hex, char *why, size_t whylen);

#endif

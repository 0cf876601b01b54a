/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef ASYNCBPF_PY_LAYOUTS_H
#define ASYNCBPF_PY_LAYOUTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../bpf/pylayout.h"

/* PY_VERSION_HEX helpers: 0xMMmmppLS (major, minor, micro, level, serial). */
#define PYV(major, minor) (((uint32_t)(major) << 24) | ((uint32_t)(minor) << 16))
#define PYV_MAJOR(v)	  ((v) >> 24 & 0xff)
#define PYV_MINOR(v)	  ((v) >> 16 & 0xff)
#define PYV_MICRO(v)	  ((v) >> 8 & 0xff)
#define PYV_LEVEL(v)	  ((v) >> 4 & 0xf) /* 0xA alpha, 0xB beta, 0xC rc, 0xF final */
#define PYV_MINOR_OF(v)	  ((v)&0xffff0000u)

/* Layout for a release, or NULL (unsupported) with a one-line reason in why. */
const struct py_layout *py_layout_find(uint32_t version_hex, char *why, size_t whylen);

/* Cross-checks the layout against the live process where the runtime describes itself
 * (3.13+: _Py_DebugOffsets at the start of _PyRuntime). 0 when it agrees or the version
 * carries no description; -1 with a one-line reason in why on mismatch or read failure. */
int py_layout_check_runtime(const struct py_layout *l, uint32_t version_hex, pid_t pid,
			    uint64_t runtime_addr, char *why, size_t whylen);

#endif

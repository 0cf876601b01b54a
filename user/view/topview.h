/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The live view of asyncbpf-top, apart from the terminal: which table is shown (functions,
 * task paths, processes), its order, the filter and the narrowing, the selected row, the
 * keys that change them, and the screen as lines of text of a given width — or the tables
 * as plain text for a snapshot. Text is UTF-8 when the terminal's is, else ASCII; what
 * the profiled processes named (functions, files, tasks) is fitted to the columns by its
 * display width, control characters shown as '?'. */
#ifndef ASYNCBPF_TOPVIEW_H
#define ASYNCBPF_TOPVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"

enum tv_table { TV_FUNCS, TV_PATHS, TV_PROCS };

struct topview_opts {
	bool utf8;
	bool wall;	   /* wall-clock mode: times are wall time */
	unsigned int freq; /* Hz */
	double window_s;   /* the window's length */
};

/* What the profiles do not say: totals since the start, for the status line. */
struct tv_status {
	uint64_t recorded, lost, unknown_frames;
	size_t nprocs;	     /* processes profiled now */
	const char *message; /* the last message of the recording, or NULL */
};

/* A process's version and its samples lost since the start. */
struct tv_proc {
	int pid;
	char version[32];
	uint64_t lost;
};

struct topview;

struct topview *topview_new(const struct topview_opts *o);
void topview_free(struct topview *tv);

/* New data: the window's profile and the one since the start (both kept until the next
 * update, and read again when the filter or the narrowing changes), the time each covers,
 * and the processes profiled now (their versions are remembered after they exit).
 * 0, or -ENOMEM. */
int topview_update(struct topview *tv, const struct profile *recent, uint64_t recent_ns,
		   const struct profile *all, uint64_t all_ns, const struct tv_status *st,
		   const struct tv_proc *procs, size_t nprocs);

/* Keys other than characters (which are Unicode code points). */
enum {
	TVK_UP = 0x110000,
	TVK_DOWN,
	TVK_PGUP,
	TVK_PGDN,
	TVK_HOME,
	TVK_END,
	TVK_ENTER,
	TVK_ESC,
	TVK_BACKSPACE,
};

enum tv_action { TVA_NONE, TVA_REDRAW, TVA_QUIT };

/* One key press; rows is the screen's height (for paging). */
enum tv_action topview_key(struct topview *tv, uint32_t key, int rows);
bool topview_paused(const struct topview *tv);

enum tv_attr { TV_NORMAL, TV_TITLE, TV_HEADER, TV_SELECTED, TV_STATUS, TV_HELP };

/* Each line of a screen of cols x rows, as UTF-8 (or ASCII) text cols wide. */
typedef void (*tv_line_fn)(void *ctx, int row, const char *text, enum tv_attr attr);
void topview_draw(struct topview *tv, int cols, int rows, tv_line_fn fn, void *ctx);
/* Where the cursor goes (the filter being typed): its column on the last row, or -1. */
int topview_cursor(const struct topview *tv, int cols);

/* Every table since the start, at most top rows each (0: all), as plain text. */
void topview_print(struct topview *tv, FILE *f, size_t top);

#endif

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Output formats and writing a profile to a file or stdout. */
#ifndef ASYNCBPF_WRITERS_H
#define ASYNCBPF_WRITERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "profile/profile.h"

enum out_format {
	OUT_COLLAPSED,
	OUT_PPROF,
	OUT_SPEEDSCOPE,
	OUT_HTML,
};

int writer_format(const char *name, enum out_format *out);
const char *writer_formats(void);
/* The format an output file name implies: .pb.gz/.pprof pprof, .json speedscope, .html
 * html, anything else collapsed. */
enum out_format writer_guess(const char *path);

/* What the output says about the recording besides the stacks. */
struct writer_meta {
	bool has_lost;
	uint64_t lost;	      /* sample records lost before userspace read them */
	uint64_t start_ns;    /* when the recording started (CLOCK_REALTIME), 0: unknown */
	uint64_t duration_ns; /* how long it ran, 0: unknown */
	/* The container a pid runs in ("" or NULL: none known); NULL: no container label. */
	const char *(*container)(void *ctx, int pid);
	void *container_ctx;
	bool has_mode;
	mode_t mode;	       /* of a new output file, when has_mode (else 0600) */
	bool no_sample_labels; /* pprof: no pid, tid, process, thread, task labels */
};

/* Writes prof to path (NULL or "-": stdout). A new file is written with user/profile/outfile.c:
 * under a temporary name in the same directory, never through a symlink, with mode 0600
 * (meta's mode if it has one), and renamed into place when complete; an existing device
 * or FIFO is written in place. 0 on success, else -1 with a one-line reason in why. */
int writer_write(const char *path, enum out_format fmt, struct profile *prof, char *why,
		 size_t whylen);
/* The same with what meta says (meta may be NULL). */
int writer_write_meta(const char *path, enum out_format fmt, struct profile *prof,
		      const struct writer_meta *meta, char *why, size_t whylen);

/* Collapsed stacks: "frame;frame;...;frame COUNT" per line, root first; in a weighted
 * profile the value is the stack's wall time in microseconds. Samples lost
 * (profile_lost) end the file as one more line, "[lost samples] COUNT". */
#define COLLAPSED_LOST "[lost samples]"

int write_collapsed(FILE *f, struct profile *prof);
/* pprof: gzip-compressed profile.proto. */
int write_pprof(FILE *f, struct profile *prof, const struct writer_meta *meta);
/* The profile.proto message, not compressed, in a malloc'ed buffer; -ENOMEM on failure. */
int pprof_encode(struct profile *prof, const struct writer_meta *meta, uint8_t **out, size_t *len);
/* Writes len bytes gzip-compressed to f (write_pprof is pprof_encode then this); 0 or -1
 * with errno. */
int pprof_gzip(FILE *f, const uint8_t *raw, size_t len);
/* speedscope's JSON file format: one sampled profile per thread. */
int write_speedscope(FILE *f, struct profile *prof, const struct writer_meta *meta);
/* One self-contained HTML page with an interactive flame graph. */
int write_flamehtml(FILE *f, struct profile *prof, const struct writer_meta *meta);

/* The frames that label a stack: its process, thread and innermost task (NULL if none). */
struct stack_labels {
	const struct frame_sym *process, *thread, *task;
};

void stack_labels(const struct profile *prof, const struct stack_ent *st, struct stack_labels *l);
/* A frame as one line of text, ';' and line breaks replaced (the collapsed format's frame). */
void frame_text(const struct frame_sym *s, char *buf, size_t len);

#endif

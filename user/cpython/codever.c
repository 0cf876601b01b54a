/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Why a frame named by its code object's address alone is proven its own (3.12+).
 *
 * CPython gives each code object it makes co_version = a counter's value, then adds one
 * (Objects/codeobject.c, init_code; at 0 once it overflowed, where it stays): a global in
 * 3.12, the interpreter's func_state.next_version from 3.13. On a thread of the main
 * interpreter the CPU sampler reads that counter before it reads any frame (E) and after
 * its last read (E2, at time_ns + walk_ns = T); the creation probe does the same for a
 * creation site's frames (task_site: code_seen, code_epoch_end, end_ns), proven when the
 * site is first looked up (asyncio/tasksites.c). The frame's code object X was alive when
 * the walk read the frame, between the two. A check here reads the counter (C), then the
 * object at the address (Z, with its co_version v), then _PyRuntime.interpreters.next_id.
 *
 * Forward: if C == E == E2, no code object was made between the check and the walk (in
 * either order), so X was made before both and was alive at the address when Z was read:
 * X is Z. Backward, for a check after T: if 0 < v < E and next_id was 1 (only the main
 * interpreter was ever made, so v is of the same counter), Z was made before E was read
 * and is alive after T, so it was alive at the address when the frame was read: Z is X.
 * An object made there after X was freed has co_version >= E. A kept frame (pw_kept)
 * holds its code object from the walk that read it through the walk that kept it.
 *
 * The sampler leaves code objects unread only where the counter it reads is the one last
 * confirmed here (py_proc.code_confirmed, set after a check at that value): a process that
 * makes no code objects has every frame proven forward by one check per code object in
 * all, its last samples too once it exited; one that keeps making them keeps having them
 * read, as a frame of a code object made and freed between two drains could not be proven
 * at all. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hash.h"
#include "cpython/codever.h"
#include "process/memread.h"

#include "cpython/vmwalk.h"

#define CV_MAX	 (1u << 16) /* entries, then the table starts again */
#define CV_BATCH 64	    /* code objects checked per pair of reads */
#define CV_READ	 256	    /* bytes read of each: the header up to co_filename */
/* a process whose counter keeps moving is confirmed again at most this often */
#define CV_CONFIRM_NS 10000000ull

struct cv_ent {
	uint64_t code; /* 0: a free slot */
	uint64_t checked_ns;
	pid_t pid;
	uint32_t version, fp;
	uint32_t counter; /* C of the check */
	bool single;	  /* next_id was 1 */
};

struct cv_proc {
	pid_t pid;
	bool gone; /* a check failed: the process cannot be read any more */
	uint32_t confirmed;
	uint64_t confirmed_ns;
	struct py_proc p;
};

struct codever {
	struct cv_ent *slot;
	size_t cap, n; /* cap a power of two */
	struct cv_proc *procs;
	size_t nprocs, procs_cap;
	struct codever_stats st;
	uint8_t buf[CV_BATCH * CV_READ];
};

struct codever *codever_new(void)
{
	struct codever *cv = calloc(1, sizeof(*cv));

	if (!cv)
		return NULL;
	cv->cap = 1024;
	cv->slot = calloc(cv->cap, sizeof(*cv->slot));
	if (!cv->slot) {
		free(cv);
		return NULL;
	}
	return cv;
}

void codever_free(struct codever *cv)
{
	if (!cv)
		return;
	free(cv->slot);
	free(cv->procs);
	free(cv);
}

static struct cv_proc *proc_of(struct codever *cv, pid_t pid)
{
	for (size_t i = 0; i < cv->nprocs; i++)
		if (cv->procs[i].pid == pid)
			return &cv->procs[i];
	return NULL;
}

static size_t slot_of(const struct codever *cv, pid_t pid, uint64_t code)
{
	return (size_t)hash_u64(code ^ (uint64_t)pid << 48) & (cv->cap - 1);
}

static struct cv_ent *find(struct codever *cv, pid_t pid, uint64_t code)
{
	for (size_t i = slot_of(cv, pid, code);; i = (i + 1) & (cv->cap - 1)) {
		struct cv_ent *e = &cv->slot[i];

		if (!e->code || (e->code == code && e->pid == pid))
			return e;
	}
}

/* Moves the entries into a table of cap slots, leaving drop's out (0: none). */
static void rebuild(struct codever *cv, size_t cap, pid_t drop)
{
	struct cv_ent *old = cv->slot, *n = calloc(cap, sizeof(*n));
	size_t ocap = cv->cap;

	if (!n) {
		/* no memory to move them: start again in the old table */
		memset(old, 0, ocap * sizeof(*old));
		cv->n = 0;
		return;
	}
	cv->slot = n;
	cv->cap = cap;
	cv->n = 0;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].code && old[i].pid != drop) {
			*find(cv, old[i].pid, old[i].code) = old[i];
			cv->n++;
		}
	free(old);
}

/* The entry for (pid, code), made unchecked if new. */
static struct cv_ent *entry(struct codever *cv, pid_t pid, uint64_t code)
{
	struct cv_ent *e = find(cv, pid, code);

	if (e->code)
		return e;
	if ((cv->n + 1) * 2 > cv->cap) {
		if (cv->cap < 2 * CV_MAX) {
			rebuild(cv, cv->cap * 2, 0);
		} else {
			/* full: everything goes, a check costs a read again */
			memset(cv->slot, 0, cv->cap * sizeof(*cv->slot));
			cv->n = 0;
		}
		e = find(cv, pid, code);
	}
	e->pid = pid;
	e->code = code;
	e->checked_ns = 0;
	cv->n++;
	return e;
}

/* Whether p's code objects can be proven: the counter and PyCode_Type known, every field
 * within the bytes read. */
static bool provable(const struct py_proc *p)
{
	const struct py_layout *l = &p->layout;

	return p->code_counter && p->code_type && p->code_version && p->interp_next_id &&
	       p->code_version + 4u <= CV_READ && l->object_type + 8u <= CV_READ &&
	       l->code_firstlineno + 4u <= CV_READ && l->code_filename + 8u <= CV_READ &&
	       l->code_name + 8u <= CV_READ;
}

int codever_add(struct codever *cv, pid_t pid, const struct py_proc *p)
{
	struct cv_proc *cp = proc_of(cv, pid);

	if (!provable(p)) {
		codever_del(cv, pid);
		return 0;
	}
	if (!cp) {
		if (cv->nprocs == cv->procs_cap) {
			size_t cap = cv->procs_cap ? 2 * cv->procs_cap : 16;
			struct cv_proc *n = realloc(cv->procs, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			cv->procs = n;
			cv->procs_cap = cap;
		}
		cp = &cv->procs[cv->nprocs++];
	}
	memset(cp, 0, sizeof(*cp));
	cp->pid = pid;
	cp->p = *p;
	return 0;
}

void codever_del(struct codever *cv, pid_t pid)
{
	struct cv_proc *cp = proc_of(cv, pid);

	if (!cp)
		return;
	*cp = cv->procs[--cv->nprocs];
	rebuild(cv, cv->cap, pid);
}

static uint64_t load(const uint8_t *b, size_t off, size_t len)
{
	uint64_t v = 0;

	memcpy(&v, b + off, len);
	return v;
}

/* Reads the counter, the n code objects at codes[] and next_id, in that order, and fills
 * their entries; leaves them as they were when the process cannot be read. 0, or -1 when
 * it could not. */
static int check(struct codever *cv, struct cv_proc *cp, const uint64_t *codes, size_t n,
		 uint32_t *counter)
{
	const struct py_layout *l = &cp->p.layout;
	uint8_t *buf = cv->buf, ok[CV_BATCH];
	uint64_t when = mono_ns(), next_id = 0;
	bool single;

	if (cp->gone)
		return -1;
	cv->st.checks++;
	if (mem_read(cp->pid, cp->p.code_counter, counter, 4)) {
		cp->gone = true;
		return -1;
	}
	/* each read returns before the next starts */
	if (mem_read_many(cp->pid, codes, n, CV_READ, buf, ok))
		memset(ok, 0, n);
	single = !mem_read(cp->pid, cp->p.runtime + cp->p.interp_next_id, &next_id, 8) &&
		 next_id == 1;
	for (size_t i = 0; i < n; i++) {
		struct cv_ent *e = entry(cv, cp->pid, codes[i]);
		const uint8_t *b = buf + i * CV_READ;
		uint64_t refcnt = ok[i] ? load(b, 0, 8) : 0;

		e->checked_ns = when;
		e->counter = *counter;
		e->single = single;
		e->version = 0;
		e->fp = FP_INVALID;
		/* a live object's reference count is plausible; a freed block holds a pointer */
		if (!ok[i] || !refcnt || refcnt > UINT32_MAX)
			continue;
		/* the sampler's own check and fingerprint, on the bytes it would have read */
		e->fp = pw_code_fp_of(&cp->p, b + l->object_type);
		if (e->fp != FP_INVALID)
			e->version = (uint32_t)load(b, cp->p.code_version, 4);
	}
	return 0;
}

/* What a walk saw of the counter, and when it ended (the argument at the top). */
struct cv_walk {
	uint32_t seen, end; /* E, E2 (0: not read) */
	uint64_t end_ns;    /* T */
};

static struct cv_walk walk_of(const struct sample_hdr *h)
{
	return (struct cv_walk){ .seen = h->code_seen,
				 .end = h->code_epoch_end,
				 .end_ns = h->time_ns + h->walk_ns };
}

/* Whether e's check proves a frame of walk w (the argument at the top). */
static bool proves(const struct cv_ent *e, const struct cv_walk *w)
{
	if (!e->code || e->fp == FP_INVALID)
		return false;
	/* seen is E whether the walk left code objects unread or not: a walk that read
	 * them may still copy kept frames that an earlier one left unread; end is 0 in it,
	 * so only the backward proof serves those */
	if (e->counter == w->seen && w->end == w->seen)
		return true;
	return e->checked_ns > w->end_ns && e->single && e->version && e->version < w->seen;
}

/* Checks the code objects of frames[0..total) (of FP_VERSIONED ones only, if versioned)
 * whose entries do not prove them, CV_BATCH at a time; the counter of the last check in
 * *counter. 0, or -1 when a check failed. */
static int check_frames(struct codever *cv, struct cv_proc *cp, const struct frame_rec *frames,
			uint32_t total, const struct cv_walk *w, bool versioned, uint32_t *counter)
{
	uint64_t codes[CV_BATCH];
	size_t n = 0;
	int err = 0;

	for (uint32_t i = 0; i < total && !err; i++) {
		const struct frame_rec *f = &frames[i];
		uint64_t code = FRAME_CODE(f);
		bool queued = false;

		if (!code ||
		    (versioned && (f->fp != FP_VERSIONED || proves(find(cv, cp->pid, code), w))))
			continue;
		for (size_t k = 0; k < n && !queued; k++)
			queued = codes[k] == code;
		if (!queued)
			codes[n++] = code;
		if (n == CV_BATCH) {
			err = check(cv, cp, codes, n, counter);
			n = 0;
		}
	}
	return err || !n ? err : check(cv, cp, codes, n, counter);
}

/* Gives each FP_VERSIONED frame of frames[0..total) its fingerprint, or FP_INVALID (all
 * of them where cp, the process, is not known). */
static void prove_frames(struct codever *cv, struct cv_proc *cp, struct frame_rec *frames,
			 uint32_t total, const struct cv_walk *w)
{
	uint32_t counter;

	if (cp && w->seen)
		check_frames(cv, cp, frames, total, w, true, &counter);
	for (uint32_t i = 0; i < total; i++) {
		struct frame_rec *f = &frames[i];
		uint64_t code = FRAME_CODE(f);
		const struct cv_ent *e;

		if (f->fp != FP_VERSIONED)
			continue;
		e = cp && code && w->seen ? find(cv, cp->pid, code) : NULL;
		if (e && proves(e, w)) {
			f->fp = e->fp;
			cv->st.proven++;
		} else {
			f->fp = FP_INVALID;
			cv->st.unproven++;
		}
	}
}

static uint32_t frames_of(const struct py_sample *s)
{
	uint32_t total = s->hdr.nframes + s->hdr.ncoro;

	return total > MAX_FRAMES + MAX_CORO_FRAMES ? MAX_FRAMES + MAX_CORO_FRAMES : total;
}

void codever_prove(struct codever *cv, struct py_sample *s)
{
	struct cv_proc *cp = proc_of(cv, s->hdr.pid);
	struct cv_walk w = walk_of(&s->hdr);

	/* a record of a process not added is left as it is */
	if (cp)
		prove_frames(cv, cp, s->frames, frames_of(s), &w);
}

void codever_prove_site(struct codever *cv, pid_t pid, struct task_site *site)
{
	struct cv_walk w = { .seen = site->code_seen,
			     .end = site->code_epoch_end,
			     .end_ns = site->end_ns };

	prove_frames(cv, proc_of(cv, pid), site->frames,
		     site->nframes < SITE_FRAMES ? site->nframes : SITE_FRAMES, &w);
}

int codever_confirm(struct codever *cv, const struct py_sample *s, uint32_t *confirmed)
{
	struct cv_proc *cp = proc_of(cv, s->hdr.pid);
	uint64_t now = mono_ns();
	uint32_t counter = 0;
	struct cv_walk w;

	if (!cp || cp->gone || !s->hdr.code_seen || s->hdr.code_seen == cp->confirmed ||
	    now - cp->confirmed_ns < CV_CONFIRM_NS)
		return 0;
	cp->confirmed_ns = now;
	w = walk_of(&s->hdr);
	if (check_frames(cv, cp, s->frames, frames_of(s), &w, false, &counter) || !counter)
		return 0;
	cp->confirmed = counter;
	*confirmed = counter;
	cv->st.confirms++;
	return 1;
}

void codever_stats(const struct codever *cv, struct codever_stats *st)
{
	if (cv)
		*st = cv->st;
	else
		memset(st, 0, sizeof(*st));
}

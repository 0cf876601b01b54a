// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* user/readers/walljoin.c: a wall-mode chain that BPF ended at a task walked earlier in the
 * run (TASK_MEMO) comes out as that walk's chain from the task on, its frames and names
 * with it, through several such joins; never from a walk that BPF would not have reused
 * (a read error, a cycle or a cut in it, another serial, a run since reset); a task met
 * again ends the chain as a cycle, more than MAX_TASKS tasks are cut and marked, and a
 * record whose frame indices do not hold is not joined but marked. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "readers/walljoin.h"
#include "tests/unit/unit.h"

/* A chain: tasks named by one letter each, with n[i] frames whose code is the task's
 * letter times 0x100 plus the frame's index. The last task is TASK_MEMO if memo. */
static struct py_sample *chain(const char *tasks, const int *n, int memo)
{
	struct py_sample *s = calloc(1, sizeof(*s));
	__u32 used = 0;

	s->hdr.flags = SAMPLE_SUSPENDED;
	for (size_t i = 0; tasks[i]; i++) {
		struct task_rec *t = &s->tasks[s->hdr.ntasks++];

		t->addr = 0x1000 * (__u64)tasks[i];
		t->serial = (__u64)tasks[i];
		t->first = (__u16)used;
		snprintf(t->name, sizeof(t->name), "task-%c", tasks[i]);
		if (memo && !tasks[i + 1]) {
			t->flags = TASK_MEMO;
			break;
		}
		t->nframes = (__u16)n[i];
		for (int k = 0; k < n[i]; k++)
			s->frames[used++].code = 0x100 * (__u64)tasks[i] + (__u64)k;
	}
	s->hdr.ncoro = used;
	return s;
}

/* The joined chain's tasks as letters, each task's frames checked against its letter. */
static void letters(const struct py_sample *s, char *out)
{
	for (__u32 i = 0; i < s->hdr.ntasks; i++) {
		const struct task_rec *t = &s->tasks[i];
		char c = (char)(t->addr / 0x1000);

		out[i] = c;
		CHECK(t->first + t->nframes <= s->hdr.nframes + s->hdr.ncoro, "task %c frames", c);
		for (__u32 k = 0; k < t->nframes; k++)
			CHECK(s->frames[t->first + k].code == 0x100 * (__u64)c + k,
			      "task %c frame %u: %#llx", c, k,
			      (unsigned long long)s->frames[t->first + k].code);
		if (!(t->flags & TASK_MEMO))
			CHECK(t->name[5] == c, "task %c named %s", c, t->name);
	}
	out[s->hdr.ntasks] = 0;
}

static void check_join(struct walljoin *j, const struct py_sample *s, const char *want,
		       int want_missing)
{
	char got[MAX_TASKS + 1];
	int missing = -1;
	const struct py_sample *o = walljoin_resolve(j, s, &missing);

	letters(o, got);
	CHECK(!strcmp(got, want), "joined %s, want %s", got, want);
	CHECK(missing == want_missing, "missing %d, want %d", missing, want_missing);
	CHECK(!!(o->hdr.flags & SAMPLE_READ_ERR) == want_missing, "marked %u",
	      o->hdr.flags & SAMPLE_READ_ERR);
}

int main(void)
{
	static const int n3[] = { 2, 3, 1 }, n1[] = { 1, 1, 1, 1 }, n17[MAX_TASKS + 1] = { 1 };
	struct walljoin *j = walljoin_new();
	struct py_sample *s0, *s1, *s2, *s3, *bad, *x;
	const struct py_sample *o;
	int missing;

	CHECK(j, "walljoin_new");
	if (!j)
		return unit_exit();
	/* L0 awaited by A awaited by B: A and B may be ended at */
	s0 = chain("LAB", n3, 0);
	CHECK(walljoin_add(j, s0) == 0, "add");
	o = walljoin_resolve(j, s0, &missing);
	CHECK(o == s0 && !missing, "a chain with no memo is itself");
	s1 = chain("MA", n3, 1);
	check_join(j, s1, "MAB", 0);
	o = walljoin_resolve(j, s1, &missing);
	CHECK(o->tasks[1].nframes == 3 && o->tasks[2].nframes == 1 && o->hdr.ncoro == 6,
	      "frames: %u %u, ncoro %u", o->tasks[1].nframes, o->tasks[2].nframes, o->hdr.ncoro);
	/* a chain that itself ends at a memo, and one that ends at it: two joins */
	s2 = chain("NCA", n1, 1);
	CHECK(walljoin_add(j, s2) == 0, "add");
	check_join(j, s2, "NCAB", 0);
	s3 = chain("PC", n1, 1);
	check_join(j, s3, "PCAB", 0);
	/* a task met again: the chain ends before it, as a cycle */
	x = chain("BA", n1, 1);
	check_join(j, x, "BA", 0);
	o = walljoin_resolve(j, x, &missing);
	CHECK(o->tasks[1].flags & TASK_CYCLE, "cycle marked: flags %#x", o->tasks[1].flags);
	free(x);
	/* never seen, or seen with another serial: cut before it and marked */
	x = chain("QD", n1, 1);
	check_join(j, x, "Q", 1);
	x->tasks[1].addr = 0x1000 * (__u64)'A';
	x->tasks[1].serial = 99;
	check_join(j, x, "Q", 1);
	free(x);
	/* a walk with a read error, a cycle or a cut is not reused */
	bad = chain("REF", n1, 0);
	bad->hdr.flags |= SAMPLE_READ_ERR;
	CHECK(walljoin_add(j, bad) == 0, "add");
	x = chain("SE", n1, 1);
	check_join(j, x, "S", 1);
	bad->hdr.flags &= ~(__u32)SAMPLE_READ_ERR;
	bad->tasks[2].flags |= TASK_MORE;
	CHECK(walljoin_add(j, bad) == 0, "add");
	check_join(j, x, "S", 1);
	free(bad);
	free(x);
	/* a walk whose frame indices do not hold is not joined: marked instead */
	bad = chain("UVW", n1, 0);
	bad->tasks[1].first = 200;
	CHECK(walljoin_add(j, bad) == 0, "add");
	x = chain("XV", n1, 1);
	check_join(j, x, "X", 1);
	free(bad);
	free(x);
	/* past MAX_TASKS: cut, marked */
	{
		char t[MAX_TASKS + 2], want[MAX_TASKS + 1];

		for (int i = 0; i < MAX_TASKS - 2; i++)
			t[i] = (char)('a' + i);
		strcpy(t + MAX_TASKS - 2, "A");
		x = chain(t, n17, 1);
		memcpy(want, t, MAX_TASKS - 2);
		strcpy(want + MAX_TASKS - 2, "AB");
		check_join(j, x, want, 0);
		x->hdr.ntasks = 0;
		for (int i = 0; i < MAX_TASKS - 1; i++)
			t[i] = (char)('a' + i);
		strcpy(t + MAX_TASKS - 1, "A");
		free(x);
		x = chain(t, n17, 1);
		o = walljoin_resolve(j, x, &missing);
		CHECK(o->hdr.ntasks == MAX_TASKS && o->tasks[MAX_TASKS - 1].flags & TASK_MORE,
		      "%u tasks, last flags %#x", o->hdr.ntasks, o->tasks[MAX_TASKS - 1].flags);
		free(x);
	}
	/* a new run: nothing of the last one */
	walljoin_reset(j);
	check_join(j, s1, "M", 1);
	free(s0);
	free(s1);
	free(s2);
	free(s3);
	walljoin_free(j);
	return unit_exit();
}

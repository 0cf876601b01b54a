# asyncbpf build. `make` builds everything into build/, `make test` installs what is
# missing, builds, and runs the whole suite.

CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc
# Debian's pytest, whatever python3 comes first in PATH (pyenv shims may)
PYTEST ?= /usr/bin/python3 -m pytest

OUT := build
# make test's builds use every core (CI calls plain `make test`)
JOBS ?= $(shell nproc)
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

CFLAGS ?= -O2 -g
# user/ is the library, one folder per stage a sample passes through (see their README.md).
# One -I per root: the library's headers are named from user/ ("cpython/pyproc.h"), every
# other header from the repository root ("bpf/asyncbpf.h", "tests/unit/unit.h"), and the
# generated skeletons from $(OUT) ("sampler.skel.h"); see user/README.md.
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I$(OUT) -I. -Iuser
# Extra compiler flags of a variant build (sanitizers; see test-sanitize and fuzz)
SANFLAGS ?=
CFLAGS += $(SANFLAGS)
LDLIBS += -lbpf -ldw -lelf -lz -lpthread -lm
BPF_CFLAGS := -target bpf -g -O2 -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Ibpf -Wall -Werror

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUT)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS))
USER_SRCS := $(wildcard user/*/*.c)
USER_OBJS := $(patsubst user/%.c,$(OUT)/user/%.o,$(USER_SRCS))
LIB := $(OUT)/libasyncbpf.a
TOOLS := $(patsubst tools/%.c,$(OUT)/%,$(wildcard tools/*.c))
UNIT_TESTS := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(wildcard tests/unit/test_*.c))
# what each object includes, as the compiler saw it (-MMD): a header's change rebuilds
# only what includes it
DEPFLAGS = -MMD -MP -MT $@ -MF $@.d
PRELOAD := $(OUT)/libasyncbpf-memcpy.so
NATIVE_CHAIN := $(OUT)/tests/libchain.so $(OUT)/tests/chainext.abi3.so

.PRECIOUS: $(OUT)/%.bpf.o $(OUT)/%.skel.h
.PHONY: all install deb deps trees test unit check-layers integration test-long demo clean vmlinux layouts format test-kernels bench-kernels test-deb
.PHONY: fuzz fuzz-build fuzz-replay fuzzers test-sanitize gen-fuzz-seeds soak soak-agent test-repeat

all: $(TOOLS) $(UNIT_TESTS) $(PRELOAD) $(NATIVE_CHAIN)

# make install: the tools, the memcpy reader's library and asyncbpf-bench's workload,
# the manual pages, the agent's systemd unit (not enabled) and bash completion, under
# $(DESTDIR)$(PREFIX). asyncbpf-bench has $(LIBDIR) compiled in: give the same PREFIX
# to the build as to make install (a build tree finds its own files first).
PREFIX ?= /usr/local
DESTDIR ?=
SBINDIR := $(PREFIX)/sbin
LIBDIR := $(PREFIX)/lib/asyncbpf
MANDIR := $(PREFIX)/share/man
UNITDIR := $(PREFIX)/lib/systemd/system
BASHCOMPDIR := $(PREFIX)/share/bash-completion/completions
INSTALL ?= install

install: all
	$(INSTALL) -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(BASHCOMPDIR)
	$(INSTALL) -m 0755 $(TOOLS) $(DESTDIR)$(SBINDIR)/
	$(INSTALL) -m 0644 $(PRELOAD) tools/bench/workload.py $(DESTDIR)$(LIBDIR)/
	$(INSTALL) -m 0644 $(patsubst $(OUT)/%,man/%.8,$(TOOLS)) $(DESTDIR)$(MANDIR)/man8/
	sed 's|@SBINDIR@|$(SBINDIR)|g' dist/asyncbpf-agent.service > $(OUT)/asyncbpf-agent.service
	$(INSTALL) -m 0644 $(OUT)/asyncbpf-agent.service $(DESTDIR)$(UNITDIR)/
	for t in $(notdir $(TOOLS)); do \
		$(INSTALL) -m 0644 dist/asyncbpf.bash-completion $(DESTDIR)$(BASHCOMPDIR)/$$t || exit 1; \
	done

deps:
	@tools/deps.sh

# The Debian trees (sid, trixie) whose interpreters the integration suite runs in a
# chroot, cached outside the clone (ASYNCBPF_CACHE, default ~/.cache/asyncbpf) and rebuilt
# when older than a week; a tree that cannot be built is skipped by the suite with the reason.
trees:
	@tools/trees.sh

$(OUT)/%.bpf.o: bpf/%.bpf.c vmlinux/vmlinux.h | $(OUT)
	$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

# the bounded-loop variant of the sampler is sampler.bpf.c compiled with PW_BOUNDED_LOOPS
$(OUT)/sampler_bounded.bpf.o: bpf/sampler.bpf.c

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(OUT)/user/%.o: user/%.c | $(SKELS) $(OUT)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# the HTML writer embeds its page
$(OUT)/user/profile/flamehtml.o: user/profile/flame/flame.html

$(LIB): $(USER_OBJS)
	rm -f $@ && ar rcs $@ $^

$(OUT)/%: tools/%.c $(LIB) | $(SKELS)
	$(CC) $(CFLAGS) $(DEPFLAGS) $< $(LIB) $(LDFLAGS) $(LDLIBS) -o $@

# the live view draws with ncursesw (Debian's libncurses-dev)
$(OUT)/asyncbpf-top: LDLIBS += -lncursesw
# where asyncbpf-bench finds the preload library and its workload once installed
$(OUT)/asyncbpf-bench: CFLAGS += -DASYNCBPF_LIBDIR='"$(LIBDIR)"'
# only the agent talks HTTP (user/ship/pyroscope.c)
$(OUT)/asyncbpf-agent: LDLIBS += -lcurl

$(OUT)/tests/%: tests/unit/%.c $(LIB) | $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(DEPFLAGS) $< $(LIB) $(LDLIBS) -o $@

# the memcpy reader's library, loaded into targets with LD_PRELOAD; never with the
# sanitizers, whose runtime the targets do not load
$(PRELOAD): preload/asyncbpf-memcpy.c | $(OUT)
	$(CC) $(filter-out $(SANFLAGS),$(CFLAGS)) $(DEPFLAGS) -fPIC -shared $< $(LDFLAGS) -ldl -o $@

# the --native tests' C chains (a library for ctypes, an extension module): no frame
# pointers, each call a frame of its own
$(OUT)/tests/libchain.so: tests/native/chain.c | $(OUT)
	@mkdir -p $(@D)
	$(CC) -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -fPIC -shared $< -pthread -o $@
$(OUT)/tests/chainext.abi3.so: tests/native/chainext.c | $(OUT)
	@mkdir -p $(@D)
	$(CC) -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -fPIC -shared $< -o $@

$(OUT):
	mkdir -p $@

-include $(wildcard $(OUT)/*.d $(OUT)/*/*.d $(OUT)/*/*/*.d)

# every include in user/ and bpf/ against the "May call (checked):" lines of the folders'
# READMEs, and no new cycle between folders or files (tools/check-layers.py)
check-layers:
	@python3 tools/check-layers.py && echo "PASS check-layers"

# the layers check and its own test, the unit tests, then the manual pages, make install
# and the agent's unit (docs.sh)
unit: check-layers $(UNIT_TESTS)
	@tests/unit/check-layers.sh
	@tests/unit/run.sh $(UNIT_TESTS)
	@MAKE="$(MAKE)" BUILD=$(OUT) tests/unit/docs.sh

# INTEGRATION_SKIP: pytest node ids left out (make test leaves out LONG_TESTS)
integration: all trees
	$(PYTEST) -v -rs --durations=30 $(foreach t,$(INTEGRATION_SKIP),--deselect $(t)) tests/integration

# Timed sweeps that make test leaves out to stay under an hour (about 4 minutes): the
# two-minute process churn and asyncbpf-bench --quick. make test-long runs them.
LONG_TESTS := tests/integration/test_churn.py::test_churn \
	tests/integration/test_readers.py::test_bench_quick
test-long: all trees
	$(PYTEST) -v -rs --durations=0 $(LONG_TESTS)

test: deps
	$(MAKE) -j$(JOBS) all
	$(MAKE) -j$(JOBS) unit
	$(MAKE) -j$(JOBS) fuzz-replay
	$(MAKE) integration INTEGRATION_SKIP="$(LONG_TESTS)"
	$(MAKE) test-kernels
	$(MAKE) test-sanitize SAN_INTERPRETERS=$(SAN_TEST_INTERPRETERS) SAN_SELECT="$(SAN_TEST_SELECT)"

# The Debian package (debian/), built from the committed tree (git archive HEAD) in
# $(OUT)/deb/asyncbpf with Debian's own tools; the .deb lands in $(OUT)/deb/, then
# lintian must find no error. Needs dpkg-dev, debhelper and lintian (make deps).
deb:
	rm -rf $(OUT)/deb && mkdir -p $(OUT)/deb/asyncbpf
	git archive --format=tar HEAD | tar -x -C $(OUT)/deb/asyncbpf
	cd $(OUT)/deb/asyncbpf && dpkg-buildpackage -us -uc -b
	lintian --fail-on error $(OUT)/deb/asyncbpf_*.deb

# The package installed with apt into fresh bookworm and sid trees and used there
# (tests/deb/install.sh): minutes of debootstrap, so not part of make test.
test-deb: deb
	tests/deb/install.sh $(OUT)/deb/asyncbpf_*.deb

# Debian's kernels of bullseye (5.10), bookworm (6.1), trixie (6.12) and sid booted under
# qemu, each running a smoke subset (tests/kernels/); the kernels are cached in
# $${ASYNCBPF_CACHE:-$${XDG_CACHE_HOME:-~/.cache}/asyncbpf}/kernels, the results and a
# summary (times, walker cost) go to build/kernels/.
test-kernels: all
	rm -f $(OUT)/kernels/summary.txt
	$(PYTEST) -v -rs --durations=0 tests/kernels/test_kernels.py
	@cat $(OUT)/kernels/summary.txt

# The BPF walker's cost per sample on those kernels, side by side (tests/kernels/cost.py;
# ASYNCBPF_KERNELS picks them, default bullseye,trixie): a benchmark, not part of make test.
bench-kernels: all
	/usr/bin/python3 tests/kernels/cost.py

# The userspace (library, tools, unit tests) built with ASan and UBSan into build-san/;
# the unit tests and the integration suite then run against those binaries. For time, the
# integration suite runs only SAN_INTERPRETERS: the oldest and the newest supported lines.
SAN_OUT := build-san
SAN_INTERPRETERS ?= pyenv-3.8,sid-3.15
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:verify_asan_link_order=0 UBSAN_OPTIONS=print_stacktrace=1
# the torn-read stress, the churn, the 100 processes and the 60 s mixing check already ran
# in full on the plain build
SAN_ENV += ASYNCBPF_STRESS_SECONDS=20 ASYNCBPF_CHURN_SECONDS=30 ASYNCBPF_SCALE_SECONDS=10 \
	ASYNCBPF_MIX_SECONDS=10

# make test's own pass is shorter, to keep the whole under an hour: the newest line only,
# and without the timed sweeps (the bench, the 100 processes, the churns, the torn-read
# stress, the agent's long runs against its receiver), which ran in full on the plain
# build, nor the demo (tools/demo.sh runs build/'s recorder, not build-san/'s). make
# test-sanitize alone runs them all.
SAN_TEST_INTERPRETERS := sid-3.15
SAN_TEST_SELECT := not test_bench_quick and not test_hundred_processes and not test_churn \
	and not test_demo and not test_memcpy_churn_survives \
	and not test_torn_reads and not test_hung_connection_sampling_goes_on \
	and not test_delivers_each_interval and not test_503_then_recovers \
	and not test_receiver_absent_queue_bounded
SAN_SELECT ?=

test-sanitize: trees
	$(MAKE) -j$(JOBS) OUT=$(SAN_OUT) SANFLAGS="-O1 $(FUZZ_SAN)" all
	$(SAN_ENV) tests/unit/run.sh $(patsubst $(OUT)/%,$(SAN_OUT)/%,$(UNIT_TESTS))
	$(SAN_ENV) ASYNCBPF_BUILD=$(SAN_OUT) ASYNCBPF_INTERPRETERS=$(SAN_INTERPRETERS) \
		$(PYTEST) -v -rs --durations=30 $(if $(SAN_SELECT),-k "$(SAN_SELECT)") tests/integration

# Flake hunting: the chosen tests (pytest node ids or paths) N times, each run's log in
# build/test-repeat/run-I.log, then each failed run's first failure and "K of N runs
# failed" (exit 1 if any). The environment (ASYNCBPF_INTERPRETERS, ...) passes through.
N ?= 5
test-repeat: all
	@PYTEST="$(PYTEST)" tools/test-repeat.sh "$(N)" $(OUT)/test-repeat $(TESTS)

# 10 minutes at 999 Hz with process churn, for asyncbpf-record then asyncbpf-agent; the
# profiler's RSS must stay flat. Not in test. soak-agent: the agent's alone.
soak: all
	ASYNCBPF_SOAK=1 $(PYTEST) -v -s -rs tests/integration/test_soak.py

soak-agent: all
	ASYNCBPF_SOAK=1 $(PYTEST) -v -s -rs tests/integration/test_soak.py -k agent

# Fuzzing: each tests/fuzz/fuzz_NAME.c is a libFuzzer target with its seed corpus in
# tests/fuzz/corpus/fuzz_NAME/. They are built with clang into build-fuzz/, against a
# library built there with the same sanitizers. `make test` replays the seeds; `make fuzz`
# runs each target for FUZZ_SECONDS (new inputs go to build-fuzz/corpus/, crashes to
# build-fuzz/crash-*).
FUZZ_OUT := build-fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 600

fuzzers: $(patsubst %,$(OUT)/%,$(FUZZ_TARGETS))

$(OUT)/fuzz_%: tests/fuzz/fuzz_%.c $(LIB) | $(SKELS)
	$(CC) $(CFLAGS) $(DEPFLAGS) -fsanitize=fuzzer $< $(LIB) $(LDLIBS) -o $@

fuzz-build:
	$(MAKE) OUT=$(FUZZ_OUT) CC=$(CLANG) SANFLAGS="-O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link" fuzzers

fuzz-replay: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
		$(FUZZ_OUT)/$$t -runs=1 tests/fuzz/corpus/$$t/* 2>$(FUZZ_OUT)/$$t.replay.log || \
			{ tail -40 $(FUZZ_OUT)/$$t.replay.log; echo "FAIL fuzz replay $$t"; exit 1; }; \
		echo "PASS fuzz replay $$t ($$(ls tests/fuzz/corpus/$$t | wc -l) inputs)"; \
	done

# The seeds of fuzz_symbolize are generated (and committed): memory images per version.
gen-fuzz-seeds: $(LIB)
	$(CC) $(CFLAGS) tests/fuzz/gen_symbolize_seeds.c $(LIB) $(LDLIBS) -o $(OUT)/gen_symbolize_seeds
	$(OUT)/gen_symbolize_seeds tests/fuzz/corpus/fuzz_symbolize

fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_OUT)/corpus/$$t; \
		nice -n 19 $(FUZZ_OUT)/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_OUT)/crash-$$t- \
			$(FUZZ_OUT)/corpus/$$t tests/fuzz/corpus/$$t || exit 1; \
	done

demo: deps
	$(MAKE) all
	tools/demo.sh

# vmlinux.h is committed; regenerate it from this kernel's BTF.
vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/vmlinux.h

# user/cpython/py_layouts_table.c and user/cpython/py_objmodel_table.c are committed;
# regenerate them from the installed interpreters' headers (the script writes
# py_objmodel_table.c itself).
layouts:
	tools/gen-layouts.sh > user/cpython/py_layouts_table.c.tmp && mv user/cpython/py_layouts_table.c.tmp user/cpython/py_layouts_table.c

format:
	clang-format -i bpf/*.h bpf/*.c user/*.h user/*/*.c user/*/*.h tools/*.c tests/unit/*.c tests/unit/*.h tests/fuzz/*.c tests/native/*.c preload/*.c

clean:
	rm -rf $(OUT) $(FUZZ_OUT) $(SAN_OUT)

# asyncbpf build. `make` builds everything into build/, `make test` installs what is
# missing, builds, and runs the whole suite.

CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc
# Debian's pytest, whatever python3 comes first in PATH (pyenv shims may)
PYTEST ?= /usr/bin/python3 -m pytest

OUT := build
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I$(OUT) -Ibpf -Iuser
LDLIBS += -lbpf -lelf -lz -lpthread -lm
BPF_CFLAGS := -target bpf -g -O2 -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Ibpf -Wall -Werror

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUT)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS))
USER_SRCS := $(wildcard user/*.c)
USER_OBJS := $(patsubst user/%.c,$(OUT)/user/%.o,$(USER_SRCS))
LIB := $(OUT)/libasyncbpf.a
TOOLS := $(patsubst tools/%.c,$(OUT)/%,$(wildcard tools/*.c))
UNIT_TESTS := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(wildcard tests/unit/test_*.c))
HEADERS := $(wildcard bpf/*.h user/*.h)
PRELOAD := $(OUT)/libasyncbpf-memcpy.so

.PHONY: all deps test unit integration demo clean vmlinux layouts format

all: $(TOOLS) $(UNIT_TESTS) $(PRELOAD)

deps:
	@tools/deps.sh

$(OUT)/%.bpf.o: bpf/%.bpf.c $(HEADERS) vmlinux/vmlinux.h | $(OUT)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(OUT)/user/%.o: user/%.c $(HEADERS) $(SKELS) | $(OUT)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(USER_OBJS)
	rm -f $@ && ar rcs $@ $^

$(OUT)/%: tools/%.c $(LIB) $(HEADERS)
	$(CC) $(CFLAGS) $< $(LIB) $(LDLIBS) -o $@

$(OUT)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIB) $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/unit $< $(LIB) $(LDLIBS) -o $@

# the memcpy reader's library, loaded into targets with LD_PRELOAD
$(PRELOAD): preload/asyncbpf-memcpy.c $(HEADERS) | $(OUT)
	$(CC) $(CFLAGS) -fPIC -shared $< -ldl -o $@

$(OUT):
	mkdir -p $@

unit: $(UNIT_TESTS)
	@tests/unit/run.sh $(UNIT_TESTS)

integration: all
	$(PYTEST) -v -rs tests/integration

test: deps
	$(MAKE) all
	$(MAKE) unit
	$(MAKE) integration

demo: deps
	$(MAKE) all
	tools/demo.sh

# vmlinux.h is committed; regenerate it from this kernel's BTF.
vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/vmlinux.h

# user/py_layouts.c and user/py_objmodel.c are committed; regenerate them from the installed
# interpreters' headers (the script writes py_objmodel.c itself).
layouts:
	tools/gen-layouts.sh > user/py_layouts.c.tmp && mv user/py_layouts.c.tmp user/py_layouts.c

format:
	clang-format -i bpf/*.h bpf/*.c user/*.c user/*.h tools/*.c tests/unit/*.c tests/unit/*.h preload/*.c

clean:
	rm -rf $(OUT)

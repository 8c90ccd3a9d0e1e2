# wpack - entropy-coded and lossless LLM weights as small Unix filters.
#
#   make            lib/libwpack.a and every program into bin/
#   make check      install what the tests need, then run every test
#                   (check, demo and bench build in parallel: make's own -j
#                   when given, make -j1 check for one job; else one job a CPU)
#   make demo       install what the demo needs, then run it on stories260K
#   make bench      benchmarks (ratios against a baseline in the same run)
#   make fuzz       the fuzz targets, longer than in make check
#   make install PREFIX=/usr/local   (DESTDIR too; make uninstall with the same)

# Its paths are relative to its own folder: `make -f DIR/Makefile` from elsewhere found no
# pipelines/lazyweights and no rule for bin/gptq, after writing a point's stamp (a fresh
# user's find). Said at once, with the way that works. (This Makefile is the last one read
# so far: MAKEFILES's come first, a reviewer's find.) Named without a folder, it is this
# folder's (a folder with a space in its path was refused: a re-tester's find).
ifneq ($(findstring /,$(lastword $(MAKEFILE_LIST))),)
WPACK_HOME := $(realpath $(dir $(lastword $(MAKEFILE_LIST))))
ifneq ($(WPACK_HOME),$(realpath $(CURDIR)))
$(error run make in $(WPACK_HOME), as make -C $(WPACK_HOME) ...: its paths are relative to its folder)
endif
endif

PREFIX   ?= /usr/local
CC       ?= cc
CFLAGS   ?= -O2 -g
WFLAGS   := -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Wall -Wextra -Wno-unused-parameter
# lib/ecma_regex.cc and lib/cxx_guard.cc alone are C++: std::regex, the engine llama-quantize
# reads --tensor-type with, and std::set_terminate for libllama's uncaught exceptions
CXX      ?= g++
CXXFLAGS ?= -O2 -g
CXXWFLAGS:= -std=c++17 -Wall -Wextra -Wno-unused-parameter
CPPFLAGS += -Ilib
LDLIBS   := -lzstd -lxxhash -lcjson -llapacke -lopenblas -lm -lpthread -lstdc++

# check, demo and bench build in parallel, and so does the reference build:
# with the caller's -j when there is one (in a recipe MAKEFLAGS holds it, -j1
# too), else one job a CPU (getconf: nproc follows OMP_NUM_THREADS)
NPROC    := $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
PAR       = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC))

# Data shared with the tests and the demo (never copied into the project).
WPACK_DATA ?= $(abspath $(CURDIR)/../shared/data)

# The pinned reference llama.cpp: node-llama-cpp@3.21.1 (prebuilt CPU libllama
# and libggml, and llama.cpp's source as a git bundle). The clone and the build
# of its tools are cached outside the project.
DEPS     := $(CURDIR)/.deps
CACHE    ?= $(HOME)/.cache/wpack
REF_SRC  ?= $(CACHE)/llama.cpp
REF_BUILD?= $(CACHE)/llama.cpp-build
REF_LIB_TAIL := node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
REF_LIB  := $(DEPS)/$(REF_LIB_TAIL)
REF_CFLAGS := -I$(REF_SRC)/include -I$(REF_SRC)/ggml/include
# the prebuilt libraries by soname (tests/helpers.bash ref_libs gives llama.cpp's
# own build these names)
REF_LINK   := -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -lggml-base
# (found from the programs' own folder first, bin/ or build/*/, so that a build tree moved or
# restored elsewhere, as a CI cache does, still runs; it named the tree's absolute path alone:
# a new user's trial)
REF_LIBS   := -L$(REF_LIB) -Wl,-rpath,'$$ORIGIN/../.deps/$(REF_LIB_TAIL)' \
              -Wl,-rpath,'$$ORIGIN/../../.deps/$(REF_LIB_TAIL)' -Wl,-rpath,$(REF_LIB) $(REF_LINK)

# Programs that run llama.cpp's forward pass prefer a llama.cpp found by
# pkg-config; otherwise they use the pinned reference.
REF_STAMPS := $(DEPS)/.npm-ok $(REF_SRC)/.wpack-ok
ifeq ($(shell pkg-config --exists llama 2>/dev/null && echo y),y)
LLAMA_CFLAGS ?= $(shell pkg-config --cflags llama)
LLAMA_LIBS   ?= $(shell pkg-config --libs llama)
LLAMA_STAMPS :=
else
LLAMA_CFLAGS ?= $(REF_CFLAGS)
# bin/ finds the pinned libraries in .deps/ (bin/../lib/wpack does not exist in the
# build tree); install copies them to PREFIX/lib/wpack and installs hessian and ppl
# linked again with that folder alone in RUNPATH (build/install/)
LLAMA_LIBS   ?= -Wl,-rpath,'$$ORIGIN/../lib/wpack' $(REF_LIBS)
LLAMA_STAMPS := $(REF_STAMPS)
INSTALL_REF  := 1
endif
LLAMA_PROGS := hessian ppl

LIB_SRC  := $(sort $(wildcard lib/*.c))
LIB_OBJ  := $(LIB_SRC:lib/%.c=build/lib/%.o) build/lib/ecma_regex.o build/lib/cxx_guard.o
PROGS    := $(sort $(basename $(notdir $(wildcard filters/*.c))))
BINS     := $(PROGS:%=bin/%)
UNITS    := $(sort $(basename $(notdir $(wildcard tests/unit/test_*.c))))
UNIT_BINS:= $(UNITS:%=build/unit/%)
# tests/tools: programs, and the shared objects the tests preload into llama.cpp's tools
PRELOADS := linger
TOOLS    := $(filter-out $(PRELOADS),$(sort $(basename $(notdir $(wildcard tests/tools/*.c)))))
TOOL_BINS:= $(TOOLS:%=build/tools/%) $(PRELOADS:%=build/tools/%.so)
FUZZ     := $(sort $(basename $(notdir $(wildcard tests/fuzz/*.c))))

# the pipelines a user's build and CI call, installed beside the programs (they run
# the programs of the folder they are in; lazyweights and unweight source jobs.sh, from
# PREFIX/lib/wpack); bitrates, frontier and demo need the
# source tree (build/tools, .deps, the reference llama.cpp tools) and stay there
INSTALL_PIPES := bitcheck lazyweights unweight

.PHONY: all check demo bench fuzz install install-strip uninstall clean deps deps-apt reftools tests runtime
all: lib/libwpack.a $(BINS) runtime

# The GPU runner (runtime/): its own rules, built with nvcc when present.
-include runtime/runtime.mk

build/lib/%.o: lib/%.c $(wildcard lib/*.h) | build/lib
	$(CC) $(WFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

build/lib/%.o: lib/%.cc lib/%.h | build/lib
	$(CXX) $(CXXWFLAGS) $(CPPFLAGS) $(CXXFLAGS) -c -o $@ $<

lib/libwpack.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

# The programs that run llama.cpp need it first (fetched into .deps/ by npm).
$(LLAMA_PROGS:%=bin/%): | $(LLAMA_STAMPS)
# ... and they include filters/llm_common.h (as does tests/tools/llgen.c): a change
# there rebuilds them (it did not: hessian kept its old messages)
$(LLAMA_PROGS:%=bin/%) build/tools/llgen: filters/llm_common.h
# the synthetic-matrix generators include tests/unit/synth.h, the GPTQ tests tests/unit/stories.h
build/tools/mksynth build/tools/mkllama: tests/unit/synth.h
build/unit/test_gptq build/unit/test_gptq_ref: tests/unit/stories.h

bin/%: filters/%.c lib/libwpack.a | bin
	$(CC) $(WFLAGS) $(CPPFLAGS) $(if $(filter $*,$(LLAMA_PROGS)),$(LLAMA_CFLAGS)) $(CFLAGS) -o $@ $< lib/libwpack.a $(if $(filter $*,$(LLAMA_PROGS)),$(LLAMA_LIBS)) $(LDLIBS)

# what install copies of them: linked again with PREFIX/lib/wpack alone in RUNPATH (the
# build tree's .deps/ after it leaked the build folder's path into installed programs)
INSTALL_LLAMA := $(if $(INSTALL_REF),$(LLAMA_PROGS:%=build/install/%))
build/install/%: filters/%.c filters/llm_common.h lib/libwpack.a | $(LLAMA_STAMPS)
	@mkdir -p $(@D)
	$(CC) $(WFLAGS) $(CPPFLAGS) $(LLAMA_CFLAGS) $(CFLAGS) -o $@ $< lib/libwpack.a \
	  -Wl,-rpath,'$$ORIGIN/../lib/wpack' -L$(REF_LIB) $(REF_LINK) $(LDLIBS)

build/unit/%: tests/unit/%.c tests/unit/tap.h lib/libwpack.a | build/unit $(REF_STAMPS)
	$(CC) $(WFLAGS) $(CPPFLAGS) -Itests/unit $(REF_CFLAGS) $(CFLAGS) -o $@ $< lib/libwpack.a $(REF_LIBS) $(LDLIBS)

build/tools/%: tests/tools/%.c lib/libwpack.a | build/tools $(REF_STAMPS)
	$(CC) $(WFLAGS) $(CPPFLAGS) -Itests/unit $(REF_CFLAGS) $(CFLAGS) -o $@ $< lib/libwpack.a $(REF_LIBS) $(LDLIBS)

# (no -fsanitize: a sanitized object cannot be preloaded into llama.cpp's unsanitized tools)
build/tools/%.so: tests/tools/%.c | build/tools
	$(CC) $(WFLAGS) $(filter-out -fsanitize%,$(CFLAGS)) -shared -fPIC -o $@ $< -ldl

bin build/lib build/unit build/tools build/fuzz:
	mkdir -p $@

tests: all $(UNIT_BINS) $(TOOL_BINS)

# ---- what a fresh Debian 12 machine needs (root); each step skips itself when done
APT_PKGS := build-essential pkg-config git cmake clang libopenblas-dev liblapacke-dev \
            libzstd-dev zstd libxxhash-dev libcjson-dev bats parallel gnuplot-nox procps man-db
deps-apt:
	@missing=$$(for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm"; \
	if [ -n "$$(echo $$missing)" ]; then \
	  echo "deps: apt-get install$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

$(DEPS)/.npm-ok:
	command -v npm >/dev/null || $(MAKE) deps-apt
	mkdir -p $(DEPS) && cd $(DEPS) && { [ -f package.json ] || echo '{"private":true}' > package.json; } \
	  && npm install --no-audit --no-fund --ignore-scripts --save-exact node-llama-cpp@3.21.1
	test -f $(REF_LIB)/libllama.v0.4.0.so
	touch $@

$(REF_SRC)/.wpack-ok: | $(DEPS)/.npm-ok
	rm -rf $(REF_SRC).tmp && mkdir -p $(CACHE)
	git clone -q $(DEPS)/node_modules/node-llama-cpp/llama/gitRelease.bundle $(REF_SRC).tmp
	rm -rf $(REF_SRC) && mv $(REF_SRC).tmp $(REF_SRC) && touch $@

deps:
	$(MAKE) deps-apt
	$(MAKE) $(DEPS)/.npm-ok $(REF_SRC)/.wpack-ok

# llama.cpp's own tools (llama-quantize, llama-perplexity, llama-imatrix),
# built once from the bundled source into $(REF_BUILD), for this CPU (GGML_NATIVE) but without
# AMX on x86: a CPU that lists AMX in a machine that does not let a process use it (a VM) made
# llama-perplexity die of SIGILL in its AMX Q8_0 kernel on every quantized GGUF (a new user's
# find; ggml's AMX code compiles only where the compiler's flags allow AMX, and an explicit
# -mno-amx-* wins over -march=native). The stamp names the flags: a build without them is redone.
REF_TOOLS := llama-quantize llama-perplexity llama-imatrix
REF_NOAMX := $(if $(filter x86_64 amd64,$(shell uname -m)),-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
reftools: $(REF_BUILD)/.wpack-ok-noamx
$(REF_BUILD)/.wpack-ok-noamx: | $(REF_SRC)/.wpack-ok
	cmake -S $(REF_SRC) -B $(REF_BUILD) -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_SERVER=OFF \
	  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=ON \
	  -DCMAKE_C_FLAGS='$(REF_NOAMX)' -DCMAKE_CXX_FLAGS='$(REF_NOAMX)' >/dev/null
	+cmake --build $(REF_BUILD) $(PAR) --target $(REF_TOOLS) >/dev/null
	touch $@

# the tests run as many at a time as the build's jobs (tests/run)
TEST_JOBS = $(or $(patsubst -j%,%,$(filter -j%,$(MAKEFLAGS))),$(NPROC))
check: deps
	$(MAKE) $(PAR) reftools tests
	WPACK_DATA=$(WPACK_DATA) REF_BUILD=$(REF_BUILD) WPACK_TEST_JOBS=$(TEST_JOBS) sh tests/run

demo: deps
	$(MAKE) $(PAR) reftools all
	WPACK_DATA=$(WPACK_DATA) bash pipelines/demo

bench: deps
	$(MAKE) $(PAR) tests
	WPACK_DATA=$(WPACK_DATA) sh tests/bench

fuzz: deps
	WPACK_FUZZ_SECONDS=$${WPACK_FUZZ_SECONDS:-120} sh tests/fuzz/run

# the version the programs say (--version), from its one place
WPACK_VERSION := $(shell sed -n 's/^\#define WPACK_VERSION "\(.*\)"$$/\1/p' lib/cli.h)

# PREFIX goes into wpack.pc: a relative one would name a folder relative to
# wherever it is read (autoconf refuses it too); one with a blank is several
# words to install and rm (PREFIX="x /usr" removed /usr/bin/gptq, DESTDIR or not)
ifneq ($(filter install install-strip uninstall,$(MAKECMDGOALS)),)
ifneq ($(words $(PREFIX))$(filter /%,$(PREFIX)),1$(PREFIX))
$(error PREFIX must be an absolute path without blanks, got '$(PREFIX)')
endif
endif

install: all $(INSTALL_LLAMA)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/include/wpack $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/man/man3 $(DESTDIR)$(PREFIX)/share/man/man5 \
	  $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 755 $(INSTALL_STRIP) $(BINS) $(wildcard bin/wprun) $(DESTDIR)$(PREFIX)/bin/
	install -m 755 $(INSTALL_PIPES:%=pipelines/%) $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/lib/wpack && install -m 644 pipelines/jobs.sh $(DESTDIR)$(PREFIX)/lib/wpack/
	$(if $(INSTALL_LLAMA),install -m 755 $(INSTALL_STRIP) $(INSTALL_LLAMA) $(DESTDIR)$(PREFIX)/bin/)
	install -m 644 lib/libwpack.a $(DESTDIR)$(PREFIX)/lib/
	install -m 644 lib/*.h $(DESTDIR)$(PREFIX)/include/wpack/
	if [ -n "$(INSTALL_REF)" ]; then install -d $(DESTDIR)$(PREFIX)/lib/wpack && \
	  cp -P $(REF_LIB)/*.so* $(DESTDIR)$(PREFIX)/lib/wpack/; fi
	install -m 644 $(wildcard man/man1/*.1) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(wildcard man/man3/*.3) $(DESTDIR)$(PREFIX)/share/man/man3/
	install -m 644 $(wildcard man/man5/*.5) $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 644 $(wildcard man/man7/*.7) $(DESTDIR)$(PREFIX)/share/man/man7/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBS@|$(LDLIBS)|' -e 's|@VERSION@|$(WPACK_VERSION)|' lib/wpack.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/wpack.pc

# install-strip: install with the programs stripped (install -s), as GNU's targets have it:
# unstripped, their debug info names this tree (a new user's trial)
install-strip:
	$(MAKE) --no-print-directory install INSTALL_STRIP=-s

# removes the files install writes, by name, and wpack's own folders (include/wpack,
# lib/wpack); the shared folders (bin, lib, share/man/man1 ...) stay, as automake leaves them
uninstall:
	rm -f $(PROGS:%=$(DESTDIR)$(PREFIX)/bin/%) $(DESTDIR)$(PREFIX)/bin/wprun \
	  $(INSTALL_PIPES:%=$(DESTDIR)$(PREFIX)/bin/%) $(DESTDIR)$(PREFIX)/lib/libwpack.a \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig/wpack.pc \
	  $(patsubst lib/%,$(DESTDIR)$(PREFIX)/include/wpack/%,$(wildcard lib/*.h)) \
	  $(patsubst man/%,$(DESTDIR)$(PREFIX)/share/man/%,$(wildcard man/man1/*.1 man/man3/*.3 man/man5/*.5 man/man7/*.7))
	rm -f $(DESTDIR)$(PREFIX)/lib/wpack/*.so* $(DESTDIR)$(PREFIX)/lib/wpack/jobs.sh
	@# (a folder holding files install did not write is kept, said, not an error: it failed with
	@# rmdir's "Directory not empty", a new user's trial)
	@for d in $(DESTDIR)$(PREFIX)/include/wpack $(DESTDIR)$(PREFIX)/lib/wpack; do \
	  [ ! -d $$d ] || rmdir $$d 2> /dev/null || echo "make uninstall: kept $$d: it holds files make install did not write" >&2; done

clean:
	rm -rf build lib/libwpack.a $(BINS)

# ---- model builds and the rate-quality frontier (real file targets: make -j
# rebuilds only what changed; points of one model share its Hessian file)
#   make model MODEL=m.gguf [POINT=IQ4_XS_g0_lam0_c1] [TEXT=calib.txt] [OUT=dir] [DIST=1]
#     (POINT by default Q4_K_M_g0_lam0_c1)
#     (POINT may list several points; make -j builds them in parallel; DIST=1 adds each
#     point's OUT/NAME-POINT.dist.bundle, made from its bundle, lazyweights --dist-only: a
#     point built without it gets it without GPTQ run again; WPACK_THREADS=N: the steps'
#     --threads, as lazyweights(1) takes it)
#   make frontier MODEL=m.gguf EVAL=eval.txt [TEXT=calib.txt] [OUT=dir]
# TEXT= (empty) builds by RTN, without Hessians; HESSIAN_CHUNKS (default 8)
# chunks of TEXT go into the Hessians, cached in OUT/NAME-TEXTNAME-kCHUNKS.hess
# (pipelines/lazyweights names them the same way; hessian --share-inputs's, one H for
# q/k/v and one for gate/up, which gptq reads to the same bytes: a 7B's 41 GiB, not 53),
# with the model, text and
# chunk count they came from in OUT/NAME-TEXTNAME-kCHUNKS.hess.id: another
# MODEL or TEXT file of the same name rebuilds them. A failed hessian leaves no
# .id without Hessians, nor the .calib stamps (or OUT) this run made, nor does one stopped by
# INT, TERM or HUP (Ctrl-C, or timeout's TERM to make alone: hessian is stopped too, as the
# recipe's shell waits for it in the background; INT or HUP sent to make alone, not to its
# group, reaches no recipe: GNU make waits for hessian to end, whose Hessians and stamps then
# stand). One run at a time computes OUT's Hessians, by a lock on OUT (flock, as lazyweights
# takes it): a second make model into OUT, a run of its own, waits, then reuses the Hessians the
# first made (each computed them, and the second's replaced them under the first's points,
# which were then out of date: a CI maintainer's trial); one stopped while it waits removes
# nothing (it took the first's .id: a breaker's find); hessian holds the lock too, so that one
# orphaned by a SIGKILL keeps it; an OUT that cannot be read goes unlocked (dash's exec of a
# redirection that fails ended the recipe unsaid: a breaker's find). A point's outputs are
# rebuilt when its model or calibration changes (MODEL, TEXT, HESSIAN_CHUNKS,
# or RTN against GPTQ, IMATRIX): OUT/NAME-POINT.calib holds the one it was built with.
# IMATRIX=FILE: llama-imatrix's importance matrix (GGUF or imatrix.dat) for gptq
# --imatrix, beside GPTQ's Hessians or RTN (none by default); a newer one rebuilds.
MODEL ?= $(WPACK_DATA)/models/stories260K/stories260K-f32.gguf
# (POINT's default: llama.cpp's usual 4-bit mix by plain GPTQ, no shared widened step; it was
# Q4_0_g1_lam0_c1.25, a point README's own table shows costs PPL on stories260K)
POINT ?= Q4_K_M_g0_lam0_c1
EVAL  ?= $(WPACK_DATA)/text/tinystories_valid_1000.txt
TEXT  ?= $(WPACK_DATA)/text/groups_merged.txt
OUT   ?= out/frontier
# an OUT that starts with - as an absolute path: the recipes and stamps pass it to mkdir, cat,
# rm and hessian -o, which took it for an option (make drops a ./ before a target's name; a
# breaker's and a re-tester's finds)
OUT_ORIGIN := $(origin OUT)
override OUT := $(if $(filter -%,$(OUT)),$(abspath $(OUT)),$(OUT))
# a ~ or ~/ at a path's start as the shell expands it: make's targets took ~/x for $HOME/x and
# the recipes' single-quoted paths for ./~/x (OUT=~/x, given through a recipe's sh, built in
# both and removed a stamp: a new user's trial); ~USER is refused below
tilde = $(if $(filter ~ ~/%,$(1)),$(patsubst ~%,$(HOME)%,$(1)),$(1))
$(foreach v,MODEL TEXT OUT IMATRIX EVAL,$(if $(filter ~ ~/%,$($(v))),$(if $(HOME),,$(error $(v)=$($(v)): HOME is not set: ~ means nothing here (give the path)))$(eval override $(v) := $$(call tilde,$$($(v))))))
HESSIAN_CHUNKS ?= 8
# DIST=1 (or yes, true, on) adds the distribution bundles (lazyweights --dist-only); 0, no, false,
# off or nothing leaves them out; from the command line only (an environment's DIST, such as
# a Debian build's release name, turned them on: a breaker's find)
ifeq ($(origin DIST),environment)
override DIST :=
endif
DIST_GIVEN := $(strip $(DIST))
override DIST := $(filter 1 yes true on YES TRUE ON Yes True On,$(DIST_GIVEN))
unexport DIST
IMATRIX ?=
unexport IMATRIX   # given to lazyweights by make model's recipe alone (frontier and bitrates took it)
# (MODEL's name without a last .gguf or .GGUF, as the pipelines' model_name (jobs.sh) says it:
# $(basename) took any suffix off, so m.bin's and Story.GGUF's outputs, named otherwise by
# lazyweights, were built again at every run)
MODEL_FILE := $(notdir $(MODEL))
MODEL_NAME := $(if $(filter-out .gguf .GGUF,$(MODEL_FILE)),$(if $(filter %.gguf,$(MODEL_FILE)),$(MODEL_FILE:.gguf=),$(MODEL_FILE:.GGUF=)),$(MODEL_FILE))
LAZY_BINS  := $(addprefix bin/,ggufcat gptq ggufpack histogram huffbuild laneinterleave verify unbundle)
# (= not :=: HESSIAN_CHUNKS is checked and its leading zeros go below, for make model)
HESS       = $(OUT)/$(MODEL_NAME)-$(basename $(notdir $(TEXT)))-k$(HESSIAN_CHUNKS).hess
# each file named with its size and modification time (lazyweights writes the Hessians' .id
# alike): a link re-pointed at another file, or a file replaced by an older one (cp -p), has
# another; by path alone such a change went unseen, the old Hessians reused (a breaker's find)
fsig       = size $(shell stat -L -c '%s mtime %.9Y' -- '$(1)' 2>/dev/null || echo '? mtime ?')
HESS_ID    = model $(abspath $(MODEL)) $(call fsig,$(MODEL)) text $(abspath $(TEXT)) $(call fsig,$(TEXT)) chunks $(HESSIAN_CHUNKS)
CALIB_ID   = model $(abspath $(MODEL)) $(call fsig,$(MODEL)) $(if $(TEXT),gptq $(abspath $(TEXT)) $(call fsig,$(TEXT)) chunks $(HESSIAN_CHUNKS),rtn)$(if $(IMATRIX), imatrix $(abspath $(IMATRIX)) $(call fsig,$(IMATRIX)))

.PHONY: model frontier
model: $(foreach p,$(POINT),$(OUT)/$(MODEL_NAME)-$(p).gguf $(OUT)/$(MODEL_NAME)-$(p).bundle $(if $(DIST),$(OUT)/$(MODEL_NAME)-$(p).dist.bundle))

# the .calib stamps are rewritten (made newer) only when the calibration differs, as the
# Makefile is read, so make -q and "Nothing to be done" still hold for an unchanged build
# (the Hessians' .id likewise: lazyweights writes the same line beside the Hessians it makes)
# (it prints the name of a stamp it writes). make -n and make -q write nothing (make -n
# made OUT and wrote the stamps): a stamp that differs is named, not written, and its rule
# runs (-n prints it, and what it rebuilds; -q says out of date)
dry := $(findstring n,$(firstword -$(MAKEFLAGS)))$(findstring q,$(firstword -$(MAKEFLAGS)))
stamp = $(shell f='$(1)' && { [ "$$(cat "$$f" 2>/dev/null)" = '$(2)' ] || \
    { $(if $(dry),,mkdir -p -- '$(OUT)' && echo '$(2)' > "$$f" && )echo "$$f"; }; })
ifneq ($(filter model,$(MAKECMDGOALS)),)
$(if $(filter-out 1 yes true on YES TRUE ON Yes True On 0 no false off NO FALSE OFF No False Off,$(DIST_GIVEN)),$(error DIST=$(DIST_GIVEN): expected 1 or yes (the --dist bundles too), 0 or no))
comma := ,
# paths go to the shell in single quotes, and make cannot carry a space in a file name: a
# quote, space or backslash is refused first (a ' in MODEL skipped the check, in OUT it ran
# what followed it as a shell command)
path_bad = $(or $(word 2,$(1)),$(findstring ',$(1)),$(findstring ",$(1)),$(findstring \,$(1)),$(findstring ;,$(1)),$(findstring %,$(1)),$(findstring :,$(1)),$(findstring $(hash),$(1)))
hash := \#
$(foreach v,MODEL TEXT OUT IMATRIX,$(if $(call path_bad,$($(v))),$(error $(v)=$($(v)): a space, quote, backslash, ;, %, : or # in this path cannot go through make (link the file under a plain name))))
$(foreach v,MODEL TEXT OUT IMATRIX,$(if $(filter ~%,$($(v))),$(error $(v)=$($(v)): only ~ and ~/ are expanded here, not ~USER or ~+ (give the path as the shell expands it))))
# HESSIAN_CHUNKS, with a TEXT (RTN uses none: TEXT= HESSIAN_CHUNKS=abc was refused), is a
# count, 1 to 2147483647 as hessian --chunks takes it (0, -3 or abc wrote the stamps, then
# hessian failed); without its leading zeros (08 named Hessians k08, apart from 8's k8)
no_digits = $(subst 0,,$(subst 1,,$(subst 2,,$(subst 3,,$(subst 4,,$(subst 5,,$(subst 6,,$(subst 7,,$(subst 8,,$(subst 9,,$(1)))))))))))
chunks_bad = $(or $(if $(1),,x),$(subst x$(strip $(1))x,,x$(1)x),$(call no_digits,$(1)),$(if $(subst 0,,$(1)),,x),$(shell [ $(1) -le 2147483647 ] 2>/dev/null || echo x))
strip0 = $(if $(filter 0%,$(1)),$(call strip0,$(1:0%=%)),$(1))
ifneq ($(TEXT),)
$(if $(call chunks_bad,$(HESSIAN_CHUNKS)),$(error HESSIAN_CHUNKS=$(HESSIAN_CHUNKS): expected a count of chunks from 1 to 2147483647))
override HESSIAN_CHUNKS := $(call strip0,$(HESSIAN_CHUNKS))
endif
# WPACK_THREADS (lazyweights' and hessian's --threads), said before any stamp is written (0
# left OUT and a .calib stamp, then lazyweights refused it: a fresh user's find)
threads_bad = $(or $(call no_digits,$(1)),$(word 2,$(1)),$(shell [ '$(1)' -ge 1 ] 2>/dev/null && [ '$(1)' -le 512 ] 2>/dev/null || echo x))
$(if $(WPACK_THREADS),$(if $(call threads_bad,$(WPACK_THREADS)),$(error WPACK_THREADS=$(WPACK_THREADS): expected a count of threads from 1 to 512)))
override WPACK_THREADS := $(call strip0,$(WPACK_THREADS))
# what is wrong with MODEL, TEXT or POINT is said before any stamp is written (a missing
# default text was "No rule to make target", a bad POINT left its .calib behind)
# (a relative path is read from the source tree, where make -C runs: said, as a path given
# from another folder said "no such file" alone, a fresh user's find)
rel_note = $(if $(filter /%,$(1)),, (read from $(CURDIR)$(comma) where make runs: with make -C$(comma) give a path from there or an absolute one))
# a relative OUT given from another folder (make -C) is under this one: said, once, as the
# outputs went there unsaid while a relative MODEL was told where it was read from (a new
# user's trial); PWD is the caller's folder, which make -C leaves as it was
$(if $(and $(filter command line environment,$(OUT_ORIGIN)),$(filter-out /%,$(OUT)),$(PWD),$(filter-out $(CURDIR),$(realpath $(PWD)))),$(info make model: OUT=$(OUT) is $(CURDIR)/$(OUT), under the folder where make runs (make -C), not $(PWD): give an absolute path to put the outputs elsewhere))
$(if $(wildcard $(MODEL)),,$(error MODEL=$(MODEL): no such file$(if $(filter $(WPACK_DATA)/%,$(MODEL)), (the default; set MODEL=FILE$(comma) or WPACK_DATA=dir),$(call rel_note,$(MODEL)))))
$(if $(wildcard $(MODEL)/.),$(error MODEL=$(MODEL): is a directory))
$(if $(strip $(POINT)),,$(error POINT= names no operating point (such as Q4_K_M_g1_lam0_c1.25)))
$(if $(TEXT),$(if $(wildcard $(TEXT)),,$(error TEXT=$(TEXT): no such file (TEXT= builds by RTN$(if $(filter $(WPACK_DATA)/%,$(TEXT)),; this is the default: set TEXT=FILE$(comma) or WPACK_DATA=dir))$(call rel_note,$(TEXT)))))
$(if $(IMATRIX),$(if $(wildcard $(IMATRIX)),,$(error IMATRIX=$(IMATRIX): no such file$(call rel_note,$(IMATRIX)))))
# lazyweights knows what a point is, and asks gptq --check whether it takes the point on
# MODEL (its metadata and tensor shapes: a type gptq lacks, a model already quantized or no
# GGUF): what is wrong, or nothing; so gptq is built first, before the Hessians
# (built when out of date too: an older gptq knows no --check)
# (the environment's MAKEFLAGS, a parent make's, without its jobserver, which $(shell) does not
# pass on: under a user's make -j it said "warning: jobserver unavailable: using -j1", a new
# user's trial; this make's own flags, -n or -q, are not passed, as before: a breaker's find)
# (the compiler variables given on the command line passed on: $(shell) gets none of them, and
# gptq was built with cc whatever CC= said, a breaker's find)
gptq_vars = $(foreach v,CC CFLAGS CPPFLAGS LDFLAGS LDLIBS WPACK_NO_CUDA,$(if $(filter command line,$(origin $(v))),'$(v)=$($(v))'))
$(shell MAKEFLAGS=$$(printf '%s' "$$MAKEFLAGS" | sed 's/--jobserver-[a-z]*=[^ ]*//g') $(MAKE) -s --no-print-directory $(gptq_vars) bin/gptq >&2)
point_why = $(shell $(if $(IMATRIX),IMATRIX='$(IMATRIX)' )pipelines/lazyweights --check '$(1)' '$(MODEL)' $(if $(TEXT),'$(TEXT)'))
# $$(call ...): eval expands its text once more, and gptq's line can quote a tensor name
# of the model, such as $(shell ...) (which ran)
# (a reason that names the IMATRIX file is said of IMATRIX: it was blamed on POINT, a fresh user's find;
# one that starts with TEXT's or MODEL's name ("TEXT: not a calibration text: ..."), of TEXT or
# MODEL, as is gptq's "gptq: MODEL: not a GGUF file", "empty file", "no weight matrix", "an
# importance matrix", "requantizing ... is disabled", "an already quantized model", a file
# cut short ("runs past the end of the file", "larger than the file allows", "truncated"): a breaker's and fresh and new
# users' finds; the last three were blamed on POINT, the last by a CI maintainer's trial)
model_why = $(or $(filter $(MODEL):,$(firstword $(why_))),$(and $(filter gptq:,$(word 1,$(why_))),$(filter $(MODEL):,$(word 2,$(why_))),$(or $(filter not empty no requantizing,$(word 3,$(why_))),$(filter importance already,$(word 4,$(why_))),$(findstring past the end of the file,$(why_)),$(findstring the file allows,$(why_)),$(findstring truncated,$(why_)))))
$(foreach p,$(POINT),$(eval why_ := $$(call point_why,$(p)))$(if $(why_),$(error $(if $(and $(TEXT),$(filter $(TEXT):,$(firstword $(why_)))),TEXT=$(why_),$(if $(model_why),MODEL=$(strip $(patsubst gptq:,,$(why_))),$(if $(and $(IMATRIX),$(findstring $(IMATRIX),$(why_))),IMATRIX=$(IMATRIX) (for POINT=$(p)),POINT=$(p)): $(why_))))))
# OUT must be a directory that can be made (a regular file on its path left make deleting
# a .calib it could not write: "make: unlink: ... Not a directory")
# (not made by make -n or -q); nor one named as a file, llama-quantize's OUT (OUT=out.gguf was
# made a folder: a fresh user's find), unless such a folder is there
$(if $(and $(filter %.gguf %.GGUF %.bundle %.BUNDLE,$(OUT)),$(if $(wildcard $(OUT)/.),,1)),$(error OUT=$(OUT): named as a file; OUT is the folder NAME-POINT.gguf and .bundle go into (such as $(patsubst %/,%,$(dir $(OUT))))))
out_new := $(if $(wildcard $(OUT)/.),,1)
out_why := $(if $(dry),,$(shell mkdir -p -- '$(OUT)' 2>&1 | sed -n '1s/^mkdir: //p'))
# (an OUT it cannot write into gave the shell's "cannot create" twice and make's lines: a
# breaker's find)
out_why := $(or $(out_why),$(if $(dry),,$(shell [ -w '$(OUT)' ] && [ -x '$(OUT)' ] || echo 'cannot write into the directory')))
$(if $(out_why),$(error OUT=$(OUT): $(out_why)))
# the .calib stamps this run writes, which a failed hessian removes (with its .id)
new_calibs := $(foreach p,$(POINT),$(call stamp,$(OUT)/$(MODEL_NAME)-$(p).calib,$(CALIB_ID)))
new_id := $(if $(TEXT),$(call stamp,$(HESS).id,$(HESS_ID)))
# make -n or -q: the stamps that differ are out of date (their rules below run under -n)
ifneq ($(dry),)
$(new_calibs) $(new_id): stamp-differs
.PHONY: stamp-differs
stamp-differs: ;
endif
endif
$(OUT)/$(MODEL_NAME)-%.calib:
	mkdir -p -- $(@D)
	echo '$(CALIB_ID)' > $@
$(HESS).id:
	mkdir -p -- $(@D)
	echo '$(HESS_ID)' > $@

$(HESS): $(MODEL) $(TEXT) $(HESS).id bin/hessian
	mkdir -p -- $(@D)
	@undo() { [ -s $@ ] || rm -f $@.id; rm -f $(new_calibs); $(if $(out_new),rmdir $(OUT) 2>/dev/null;) :; }; \
	stop() { [ -z "$$pid" ] || { kill -TERM $$pid 2>/dev/null; wait $$pid; }; [ -z "$$started" ] || undo; exit $$1; }; \
	trap 'stop 130' INT; trap 'stop 143' TERM; trap 'stop 129' HUP; started=; \
	if command -v flock > /dev/null && [ -r $(OUT) ] && [ -x $(OUT) ] && { exec 9< $(OUT); } 2> /dev/null; then \
	    if ! flock -n 9; then \
	        echo "make: waiting for another run's Hessians in $(OUT)" >&2; \
	        flock 9 & pid=$$!; wait $$pid; pid=; \
	        if [ -s $@ ] && [ $@ -nt $@.id ] && ! [ $(MODEL) -nt $@ ] && ! [ $(TEXT) -nt $@ ] && ! [ bin/hessian -nt $@ ]; then \
	            echo "make: $@: made by the other run meanwhile: reused" >&2; exit 0; \
	        fi; \
	    fi; \
	    for f in $@.tmp.??????; do [ -f "$$f" ] && rm -f -- "$$f" && echo "make: removed $$f, a killed run's temporary Hessians" >&2; done; \
	fi; \
	echo 'bin/hessian --model $(MODEL) --text $(TEXT) --chunks $(HESSIAN_CHUNKS) --share-inputs$(if $(WPACK_THREADS), --threads $(WPACK_THREADS)) -o $@'; \
	started=1; exec 3<&0; bin/hessian --model $(MODEL) --text $(TEXT) --chunks $(HESSIAN_CHUNKS) --share-inputs$(if $(WPACK_THREADS), --threads $(WPACK_THREADS)) -o $@ <&3 3<&- & pid=$$!; \
	wait $$pid || { rc=$$?; undo; exit $$rc; }

# (the two targets of one lazyweights run; it removes an earlier .dist.bundle of a point whose
# GGUF it changes; exec'd, so that the TERM make passes its children on reaches lazyweights:
# the recipe's shell, there for the variables, died of it, and lazyweights and gptq ran on and
# installed the point after make had exited, a CI cancel's TERM: a CI maintainer's trial)
$(OUT)/$(MODEL_NAME)-%.gguf $(OUT)/$(MODEL_NAME)-%.bundle: \
    $(MODEL) $(OUT)/$(MODEL_NAME)-%.calib $(if $(TEXT),$(HESS)) $(IMATRIX) $(LAZY_BINS) pipelines/lazyweights
	exec $(if $(TEXT)$(IMATRIX),env )$(if $(TEXT),HESSIAN_CHUNKS=$(HESSIAN_CHUNKS) )$(if $(IMATRIX),IMATRIX=$(IMATRIX) )pipelines/lazyweights $(MODEL) $* $(OUT) $(TEXT)
# DIST: a point's .dist.bundle made from its bundle, the bytes lazyweights --dist makes, without
# GPTQ (the three were one run's targets: a point built without DIST, then with it, ran GPTQ
# again, an hour on a 7B model)
$(OUT)/$(MODEL_NAME)-%.dist.bundle: $(OUT)/$(MODEL_NAME)-%.gguf $(OUT)/$(MODEL_NAME)-%.bundle \
    bin/unbundle bin/histogram bin/huffbuild bin/laneinterleave bin/verify pipelines/lazyweights
	pipelines/lazyweights --dist-only $(MODEL) $* $(OUT)

frontier: deps reftools
	$(MAKE) all
	REF_BUILD=$(REF_BUILD) REF_SRC=$(REF_SRC) pipelines/frontier $(MODEL) $(EVAL) $(OUT) $(TEXT)

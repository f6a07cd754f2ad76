# qwenpipe: libcommon (lib/) and one executable per tools/<name>/.
#
#   make            build lib/libcommon.a into build/ and every tool into bin/
#   make run        install what is missing (scripts/deps), build, and
#                   generate text with the bundled model
#   make test       the same install and build, the tokenizer oracle (npm ci
#                   in tests/oracle), then every C test (tests/c/) and every
#                   bats test (tests/*.bats), then name what failed
#   make test-long  the tests too long for make test (tests/long/: the
#                   whole-text perplexity gates); CI runs them
#   make check      the same test suite built with AddressSanitizer + UBSan (build/san/)
#   make browser    the page scripts/viz writes, in headless Chromium (needs
#                   scripts/deps --browser and npm ci in tests/browser)
#   make fuzz       the libFuzzer targets tests/fuzz/fuzz_*.c (clang; build/fuzz/),
#                   run by scripts/fuzz
#   make man        the man pages of the tools and scripts, from their --help
#                   (help2man), into build/man/
#   make install    the tools and the user's scripts (generate, chat, viz) to
#                   $(PREFIX)/bin (PREFIX=/usr/local), their man pages to
#                   $(PREFIX)/share/man/man1, the bundled tokenizer and tiny
#                   model to $(PREFIX)/share/qwenpipe (the tools' defaults)
#   make clean
#
# Sources are discovered, not listed: a new lib/LAYER/foo.c joins libcommon,
# a new bench/harness/foo.c joins libbench (the benchmark harness, linked
# only by tools/bench and bench/*.c), a new tools/foo/ directory becomes
# bin/foo, a new tests/c/test_foo.c becomes a C test. Files named *_avx2.c,
# *_avx512.c, *_vnni.c are compiled for that ISA only; the code that calls
# them checks CPUID first (lib/core/cpu.h). The layers of lib/ and what each
# may include are in docs/architecture.md.

CC      ?= cc
PREFIX  ?= /usr/local
OPT     ?= -O2 -g
BUILD   ?= build
BIN     ?= bin

VERSION := $(shell cat VERSION)

# -ffp-contract=off everywhere: the compiler must not fuse a multiply and an
# add that a kernel's canonical order keeps apart (lib/kernels/kernels.h),
# whatever OPT says (-march=native gives every file FMA to fuse into).
CFLAGS  += $(OPT) -ffp-contract=off -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
           -Ilib -Ibench -I/usr/include/cjson -MMD -MP -pthread
LDLIBS  += -lcjson -lutf8proc -lm -pthread
# OpenBLAS is the bench harness's reference to beat, never the engine's:
# only bin/bench and bench/*.c link it (tests/link.bats checks the rest).
BLAS_LIBS := -lopenblas
# libmicrohttpd is serve's HTTP, linked by bin/serve alone.
HTTP_LIBS := -lmicrohttpd

LIB_SRC   := $(wildcard lib/*/*.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB_A     := $(BUILD)/libcommon.a
HARN_SRC  := $(wildcard bench/harness/*.c)
HARN_OBJ  := $(HARN_SRC:%.c=$(BUILD)/%.o)
HARN_A    := $(BUILD)/libbench.a
TOOLS     := $(notdir $(wildcard tools/*))
TOOL_BINS := $(TOOLS:%=$(BIN)/%)
CTEST_SRC := $(wildcard tests/c/test_*.c)
CTESTS    := $(CTEST_SRC:tests/c/%.c=$(BUILD)/tests/%)
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZERS   := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/%)
BENCH_SRC := $(wildcard bench/*.c)
BENCHES   := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: all run test test-long ctest bats browser check fuzz fuzzers bench man install clean
.SECONDARY:

all: $(TOOL_BINS)

# Per-ISA kernel files. Their loops start on a 64-byte line, so that how
# fast a kernel streams does not depend on where the linker happens to put
# it (docs/performance.md, "Loops on a line of their own").
KERN_CFLAGS := -falign-loops=64
$(BUILD)/%_avx2.o:   CFLAGS += $(KERN_CFLAGS) -mavx2 -mfma -mf16c
$(BUILD)/%_avx512.o: CFLAGS += $(KERN_CFLAGS) -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c
$(BUILD)/%_vnni.o:   CFLAGS += $(KERN_CFLAGS) -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mfma -mf16c

# The one version string (VERSION): every tool's --version, through
# lib/cli; the scripts ask a tool for it.
$(BUILD)/lib/cli/cli.o: CFLAGS += -DQWENPIPE_VERSION='"$(VERSION)"'
$(BUILD)/lib/cli/cli.o: VERSION

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIB_A): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(HARN_A): $(HARN_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BIN)/bench: $(HARN_A)
$(BIN)/bench: LDLIBS += $(BLAS_LIBS)
$(BIN)/serve: LDLIBS += $(HTTP_LIBS)

# (No % inside the secondary expansion: make would replace it with the stem.)
.SECONDEXPANSION:
$(BIN)/%: $$(addprefix $(BUILD)/,$$(addsuffix .o,$$(basename $$(wildcard tools/$$*/*.c)))) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter $(HARN_A),$^) $(LIB_A) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/c/%.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(HARN_A) $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(HARN_A) $(LIB_A) $(LDLIBS) $(BLAS_LIBS)

# Benchmarks (bench/*.c) assert nothing: each prints one JSON line, which is
# appended to bench/results.jsonl; then bin/bench compares the synthetic
# full-size bf16, int8 and int4 models (it appends its own records).
bench: $(BENCHES) $(BIN)/bench
	@set -e; for b in $(BENCHES); do $$b | tee -a bench/results.jsonl; done
	$(BIN)/bench --synthetic

# Every C test program runs, whatever an earlier one gave; the last line
# counts them and names the ones that failed.
ctest: $(CTESTS)
	@failed=; for t in $(CTESTS); do echo "== $$t"; $$t || failed="$$failed $${t##*/}"; done; \
	echo "$$failed" > $(BUILD)/ctest.failed; \
	set -- $$failed; \
	echo "ctest: $$(( $(words $(CTESTS)) - $$# )) of $(words $(CTESTS)) programs passed$${1:+, failed:$$failed}"; \
	[ $$# -eq 0 ]

bats: $(TOOL_BINS)
	BIN=$(abspath $(BIN)) bats tests/

# What `make run` and `make test` need before they build: the Debian
# packages (scripts/deps, which installs only what is missing; once per
# build directory, again when scripts/deps changes) and, for the tests, the
# tokenizer oracle (tests/oracle: HuggingFace tokenizers from npm, pinned by
# its package-lock.json).
DEPS   := $(BUILD)/deps.ok
ORACLE := tests/oracle/node_modules/.package-lock.json

$(DEPS): scripts/deps
	scripts/deps
	@mkdir -p $(dir $@) && touch $@

$(ORACLE): tests/oracle/package-lock.json | $(DEPS)
	cd tests/oracle && npm ci --no-audit --no-fund --loglevel=error

# A newcomer's first command: install, build, generate with the bundled model.
run: $(DEPS)
	@$(MAKE) --no-print-directory all
	scripts/generate data/shakespeare-tiny "ROMEO:" --seed 42 -n 40

# The C programs, then every bats file (even when a program failed), then
# one line naming what failed: the programs, and the bats tests by name
# (bats runs in TAP mode for that; its output is kept in $(BUILD)/bats.tap).
# tests/long/ (the whole-text perplexity gates, minutes) is `make test-long`.
test: $(DEPS) $(ORACLE)
	@$(MAKE) --no-print-directory all $(CTESTS)
	@rm -f $(BUILD)/ctest.failed; $(MAKE) --no-print-directory ctest || true; \
	[ -f $(BUILD)/ctest.failed ] || echo "ctest-did-not-run" > $(BUILD)/ctest.failed; \
	{ BIN=$(abspath $(BIN)) bats --tap tests/; echo $$? > $(BUILD)/bats.rc; } | tee $(BUILD)/bats.tap; \
	c=$$(cat $(BUILD)/ctest.failed); set -- $$c; nc=$$#; \
	nb=$$(grep -c '^not ok' $(BUILD)/bats.tap || true); \
	if [ $$nc -eq 0 ] && [ $$nb -eq 0 ] && [ "$$(cat $(BUILD)/bats.rc)" = 0 ]; then \
		echo "make test: all passed"; exit 0; fi; \
	echo "make test: FAILED: $$nc C program(s)$${c:+ ($$(echo $$c))}, $$nb bats test(s)"; \
	grep '^not ok' $(BUILD)/bats.tap | sed 's/^not ok [0-9]* /  bats: /'; \
	[ "$$(cat $(BUILD)/bats.rc)" = 0 ] || [ $$nb -gt 0 ] || echo "  bats itself exited $$(cat $(BUILD)/bats.rc)"; \
	exit 1

test-long: all
	BIN=$(abspath $(BIN)) bats tests/long/

browser: all
	BIN=$(abspath $(BIN)) bats tests/browser/

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer.
check:
	$(MAKE) BUILD=build/san BIN=build/san/bin \
	  OPT="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=address,undefined" test

# The fuzz targets: lib/ instrumented for coverage and built with the same
# sanitizers, each target linked with libFuzzer's main().
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
fuzz:
	$(MAKE) CC=clang BUILD=build/fuzz \
	  OPT="-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
	  LDFLAGS="-fsanitize=fuzzer $(FUZZ_SAN)" fuzzers

fuzzers: $(FUZZERS)

$(BUILD)/fuzz_%: $(BUILD)/tests/fuzz/fuzz_%.o $(LIB_A)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

# The scripts a user runs (the rest need a checkout: deps, fuzz, bench-tok,
# valgrind-check, plot-bench, download-qwen), and what they read: their
# shared helpers, the VERSION they print, viz's page template.
SCRIPTS   := generate chat viz
SHARE     := $(DESTDIR)$(PREFIX)/share/qwenpipe
MAN1      := $(DESTDIR)$(PREFIX)/share/man/man1
MANS      := $(TOOLS:%=$(BUILD)/man/%.1) $(SCRIPTS:%=$(BUILD)/man/%.1)

# Man pages, generated from each tool's --help and --version by help2man, so
# that they say what the tool does; the NAME line is the summary that opens
# the tool's main.c (or the script's header), up to its first full stop
# or blank comment line.
man: $(MANS)

summary = $(shell awk 'NR == 1 && FILENAME ~ /\.c$$/ { sub(/^\/\* [a-z-]+: /, "") } \
	NR == 2 && FILENAME !~ /\.c$$/ { sub(/^# [a-z-]+: /, "") } \
	NR >= (FILENAME ~ /\.c$$/ ? 1 : 2) { sub(/^ ?[*#] ?/, ""); \
		if ($$0 == "") { print s; exit } s = s (s ? " " : "") $$0 } \
	/\.$$/ { sub(/\.$$/, "", s); print s; exit }' $(1))

$(BUILD)/man/%.1: $(BIN)/% tools/%/main.c VERSION
	@mkdir -p $(dir $@)
	help2man -N -n "$(call summary,tools/$*/main.c)" -o $@ $<

$(BUILD)/man/%.1: scripts/% VERSION $(TOOL_BINS)
	@mkdir -p $(dir $@)
	help2man -N -n "$(call summary,$<)" -o $@ $<

install: all man
	install -d $(DESTDIR)$(PREFIX)/bin $(SHARE) $(MAN1)
	install -m 755 $(TOOL_BINS) $(SCRIPTS:%=scripts/%) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 scripts/common.bash scripts/pipeline.bash scripts/viz.html VERSION $(SHARE)/
	install -m 644 $(MANS) $(MAN1)/
	install -d $(SHARE)/qwen2.5-0.5b-instruct $(SHARE)/shakespeare-tiny
	install -m 644 data/qwen2.5-0.5b-instruct/tokenizer.json \
	  data/qwen2.5-0.5b-instruct/tokenizer_config.json $(SHARE)/qwen2.5-0.5b-instruct/
	install -m 644 $(wildcard data/shakespeare-tiny/*) $(SHARE)/shakespeare-tiny/

clean:
	rm -rf build bin

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

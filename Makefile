# Sluice build. Plain GNU Make: one file, fast no-op rebuilds; every source
# under src/ is compiled, so adding a file needs no edit here. One generator
# step: the web console's files become build/gen/console_assets.h. Two trees: build/ (release, -O2) and build/debug/ (ASan+UBSan,
# used by the tests); two more on demand: build/fuzz/ (clang, libFuzzer,
# `make fuzz`, fuzz/README.md) and build/tsan/ (ThreadSanitizer, `make tsan`).

CC      ?= gcc
PKGS    := libcjson libxxhash libmicrohttpd libzstd liblz4 libcurl zlib ompi-c libpq rdkafka gnutls libpcre2-8
WARN    := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow=local -Wstrict-prototypes
CFLAGS_COMMON := -std=gnu11 -D_GNU_SOURCE -pthread $(WARN) $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -MMD -MP
LIBS    := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lcjson -lxxhash -lmicrohttpd -lzstd -llz4 -lcurl -lz -lmpi -lpq -lrdkafka -lgnutls -lpcre2-8) -lpthread -lm
REL_CFLAGS := $(CFLAGS_COMMON) -O2 -g
DBG_CFLAGS := $(CFLAGS_COMMON) -DSL_DEBUG -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
DBG_LDFLAGS := -fsanitize=address,undefined

LIB_SRC  := $(shell find src -name '*.c' ! -path 'src/cli/*' ! -path 'src/slt/*' | sort)
CLI_SRC  := $(shell find src/cli -name '*.c' | sort)
SLT_SRC  := $(shell find src/slt -name '*.c' | sort)
TEST_SRC := $(shell find tests -name 'test_*.c' | sort)
TOOL_SRC := $(shell find tests -name 'tool_*.c' | sort)

REL_OBJ := $(patsubst src/%.c,build/obj/%.o,$(LIB_SRC))
DBG_OBJ := $(patsubst src/%.c,build/debug/obj/%.o,$(LIB_SRC))
REL_CLI := $(patsubst src/%.c,build/obj/%.o,$(CLI_SRC))
DBG_CLI := $(patsubst src/%.c,build/debug/obj/%.o,$(CLI_SRC))
REL_SLT := $(patsubst src/%.c,build/obj/%.o,$(SLT_SRC))
DBG_SLT := $(patsubst src/%.c,build/debug/obj/%.o,$(SLT_SRC))
TEST_BIN := $(patsubst tests/%.c,build/debug/tests/%,$(TEST_SRC))
TOOL_BIN := $(patsubst tests/%.c,build/debug/tests/%,$(TOOL_SRC))

.PHONY: all debug test unit e2e demo deps clean bench fuzz fuzz-smoke tsan
all: build/sluice build/sluice-slt

deps:
	@sh scripts/deps.sh

build/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) -c $< -o $@

build/debug/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(DBG_CFLAGS) -c $< -o $@

build/libsluice.a: $(REL_OBJ)
	@rm -f $@
	ar rcs $@ $^

build/debug/libsluice.a: $(DBG_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

build/sluice: $(REL_CLI) build/libsluice.a
	$(CC) $(REL_CFLAGS) -o $@ $(REL_CLI) build/libsluice.a $(LIBS)

build/debug/sluice: $(DBG_CLI) build/debug/libsluice.a
	$(CC) $(DBG_CFLAGS) $(DBG_LDFLAGS) -o $@ $(DBG_CLI) build/debug/libsluice.a $(LIBS)

build/debug/tests/%: tests/%.c build/debug/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(DBG_CFLAGS) -Isrc $(DBG_LDFLAGS) -o $@ $< build/debug/libsluice.a $(LIBS) -lcmocka

# The sqllogictest runner (tests/slt/README.md).
build/sluice-slt: $(REL_SLT) build/libsluice.a
	$(CC) $(REL_CFLAGS) -o $@ $(REL_SLT) build/libsluice.a $(LIBS) -lnettle

build/debug/sluice-slt: $(DBG_SLT) build/debug/libsluice.a
	$(CC) $(DBG_CFLAGS) $(DBG_LDFLAGS) -o $@ $(DBG_SLT) build/debug/libsluice.a $(LIBS) -lnettle

# The web console's files (src/console/) become a generated header of byte
# arrays (scripts/embed_assets.sh) that src/console/console.c includes.
CONSOLE_ASSETS := $(sort $(wildcard src/console/*.html src/console/*.js src/console/*.css))
CONSOLE_OBJ := $(foreach t,build/obj build/debug/obj build/fuzz/obj build/tsan/obj,$(t)/console/console.o)
build/gen/console_assets.h: $(CONSOLE_ASSETS) scripts/embed_assets.sh
	@mkdir -p $(dir $@)
	sh scripts/embed_assets.sh $@ $(CONSOLE_ASSETS)
$(CONSOLE_OBJ): build/gen/console_assets.h
$(CONSOLE_OBJ): REL_CFLAGS += -Ibuild/gen
$(CONSOLE_OBJ): DBG_CFLAGS += -Ibuild/gen
$(CONSOLE_OBJ): FUZZ_CFLAGS += -Ibuild/gen
$(CONSOLE_OBJ): TSAN_CFLAGS += -Ibuild/gen

debug: build/debug/sluice build/debug/sluice-slt

# All tests: unit tests (cmocka) under ASan/UBSan, then end-to-end tests
# (pytest) driving the debug binary.
test: deps
	@$(MAKE) --no-print-directory debug build/sluice build/sluice-slt $(TEST_BIN) $(TOOL_BIN)
	@sh scripts/run_unit.sh $(TEST_BIN)
	@$(MAKE) --no-print-directory fuzz-smoke
	@SLUICE_BIN=$(CURDIR)/build/debug/sluice SLUICE_RELEASE=$(CURDIR)/build/sluice SLUICE_TOOLS=$(CURDIR)/build/debug/tests SLUICE_SLT=$(CURDIR)/build/debug/sluice-slt SLUICE_SLT_RELEASE=$(CURDIR)/build/sluice-slt /usr/bin/pytest -q --durations=15 tests/e2e

unit: debug $(TEST_BIN)
	@sh scripts/run_unit.sh $(TEST_BIN)

e2e: debug build/sluice build/sluice-slt $(TOOL_BIN)
	@SLUICE_BIN=$(CURDIR)/build/debug/sluice SLUICE_RELEASE=$(CURDIR)/build/sluice SLUICE_TOOLS=$(CURDIR)/build/debug/tests SLUICE_SLT=$(CURDIR)/build/debug/sluice-slt SLUICE_SLT_RELEASE=$(CURDIR)/build/sluice-slt /usr/bin/pytest -q tests/e2e

# The demo: the bank program with 100M generated transactions, one worker
# per core.
DEMO_WORKERS ?= $(shell nproc 2>/dev/null || echo 1)
demo: deps
	@$(MAKE) --no-print-directory build/sluice
	@rm -rf build/demo
	./build/sluice run examples/bank.sql --until-done --workers $(DEMO_WORKERS) --dump build/demo
	@echo
	@echo "balance (account, balance):"
	@cat build/demo/balance.csv

bench: deps
	@$(MAKE) --no-print-directory build/sluice
	@sh bench/run.sh

clean:
	rm -rf build

# ---------------------------------------------------------------- fuzzing
# libFuzzer targets fuzz/fuzz_*.c (fuzz/README.md) against a clang-built
# copy of the library with ASan+UBSan and coverage (build/fuzz/). `make
# fuzz` runs each for FUZZ_SECS seconds from its seed corpus fuzz/corpus/
# <name>/ (new inputs go to build/fuzz/corpus/, crashes to build/fuzz/
# crashes/); `make fuzz-smoke` (part of `make test`) runs FUZZ_RUNS inputs
# of each with a fixed seed and fails on any crash.
FUZZ_CC   ?= clang
FUZZ_SECS ?= 60
FUZZ_RUNS ?= 2000
# Targets whose short burst in `make test` only replays the seeds, because
# fuzzing them still finds a known bug within a few runs (fuzz/README.md
# lists them); empty this once they are fixed.
FUZZ_SEEDS_ONLY ?=
FUZZ_SAN  := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := -std=gnu11 -D_GNU_SOURCE -DSL_DEBUG -pthread -w $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
	-MMD -MP -O1 -g -fno-omit-frame-pointer $(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BIN := $(patsubst fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
FUZZ_OBJ := $(patsubst src/%.c,build/fuzz/obj/%.o,$(LIB_SRC))

build/fuzz/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

build/fuzz/libsluice.a: $(FUZZ_OBJ)
	@rm -f $@
	@ar rcs $@ $^

# The harnesses themselves are held to the warnings of the rest.
build/fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz.h build/fuzz/libsluice.a
	@$(FUZZ_CC) $(subst -w ,-Wall -Wextra -Werror -Wno-unused-parameter ,$(FUZZ_CFLAGS)) -Isrc \
		-fsanitize=fuzzer -o $@ $< build/fuzz/libsluice.a $(LIBS)

fuzz: deps
	@$(MAKE) --no-print-directory $(FUZZ_BIN)
	@sh fuzz/run.sh secs $(FUZZ_SECS) $(FUZZ_BIN)

fuzz-smoke: deps
	@$(MAKE) --no-print-directory $(FUZZ_BIN)
	@FUZZ_SEEDS_ONLY="$(FUZZ_SEEDS_ONLY)" sh fuzz/run.sh runs $(FUZZ_RUNS) $(FUZZ_BIN)

# ---------------------------------------------------------------- tsan
# ThreadSanitizer: the binary and the threaded unit tests (the runtime,
# workers and exchange under tests/circuit/) built with gcc
# -fsanitize=thread in build/tsan/, then run (scripts/run_tsan.sh): the
# tests, a short 3-worker run of an example, and HTTP clients pushing and
# querying concurrently with checkpoints. Any race report fails the target.
TSAN_CFLAGS := $(CFLAGS_COMMON) -DSL_DEBUG -O1 -g -fno-omit-frame-pointer -fsanitize=thread
TSAN_OBJ := $(patsubst src/%.c,build/tsan/obj/%.o,$(LIB_SRC))
TSAN_CLI := $(patsubst src/%.c,build/tsan/obj/%.o,$(CLI_SRC))
TSAN_TEST_SRC := $(sort $(wildcard tests/circuit/test_*.c))
TSAN_TEST := $(patsubst tests/%.c,build/tsan/tests/%,$(TSAN_TEST_SRC))

build/tsan/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TSAN_CFLAGS) -c $< -o $@

build/tsan/libsluice.a: $(TSAN_OBJ)
	@rm -f $@
	ar rcs $@ $^

build/tsan/sluice: $(TSAN_CLI) build/tsan/libsluice.a
	$(CC) $(TSAN_CFLAGS) -o $@ $(TSAN_CLI) build/tsan/libsluice.a $(LIBS)

build/tsan/tests/%: tests/%.c build/tsan/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(TSAN_CFLAGS) -Isrc -o $@ $< build/tsan/libsluice.a $(LIBS) -lcmocka

tsan: deps
	@$(MAKE) --no-print-directory build/tsan/sluice $(TSAN_TEST)
	@sh scripts/run_tsan.sh $(TSAN_TEST)

-include $(FUZZ_OBJ:.o=.d) $(FUZZ_BIN:=.d) $(TSAN_OBJ:.o=.d) $(TSAN_CLI:.o=.d)
-include $(REL_OBJ:.o=.d) $(DBG_OBJ:.o=.d) $(REL_CLI:.o=.d) $(DBG_CLI:.o=.d) $(REL_SLT:.o=.d) $(DBG_SLT:.o=.d)

# Benchmark programs (built by `make bench`, never by `make test`).
build/bench/bank_bench: bench/bank_bench.c build/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) -o $@ $< build/libsluice.a $(LIBS)

# Storage write/read throughput and the cost of re-checkpointing an
# unchanged batch (src/storage/).
build/bench/store_bench: bench/store_bench.c build/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) -Isrc -o $@ $< build/libsluice.a $(LIBS)

build/bench/probe: bench/probe/probe.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -pthread -Wall -Wextra -Werror -o $@ $< -lm

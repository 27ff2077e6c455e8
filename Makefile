# strata — the two commands a new user runs: `make serve` and `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=
# CI builds set STRATA_WERROR=ON (warnings are errors).
STRATA_WERROR ?= OFF
export STRATA_WERROR

.PHONY: all deps build models test unit-test fuzz format-check check check-tsan serve bench clean

all: build

deps:
	@./scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_WERROR=$(STRATA_WERROR) \
	  $(CMAKE_FLAGS)

# Binary at build/strata. A build directory `make serve` configured has the
# tests and benchmarks off: turned on here.
build: deps $(BUILD)/build.ninja
	@if grep -q '^STRATA_BUILD_TESTS:BOOL=OFF' $(BUILD)/CMakeCache.txt; then \
	  cmake -S . -B $(BUILD) -DSTRATA_BUILD_TESTS=ON -DSTRATA_BUILD_BENCH=ON; fi
	cmake --build $(BUILD) -j $(JOBS)

# Test and default models, generated (seeded, deterministic) by the tiny-model writer.
models: build
	@./scripts/make-models.sh $(BUILD)

unit-test: build models
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Every fuzz target (fuzz/fuzz_*.cpp: the GGUF parser, the KV chunk codec,
# the HTTP request parser) under libFuzzer with ASan + UBSan, FUZZ_SECONDS
# each from its committed seed corpus (fuzz/corpus/<name>/).
fuzz: deps
	@./scripts/fuzz.sh $(FUZZ_SECONDS)

# clang-format 14 over src/ tests/ tools/ bench/ fuzz/ (*.h, *.cpp): lists
# the files that differ from .clang-format; changes nothing.
format-check:
	@./scripts/format-check.sh

test: unit-test fuzz

# Every test with asserts live under AddressSanitizer + UBSan (build-check/).
check: deps
	@./scripts/sanitize.sh address

# The threaded parts under ThreadSanitizer (build-tsan/); suppressions, for
# third-party code only, in tsan.supp.
check-tsan: deps
	@./scripts/sanitize.sh thread

# The OpenAI-compatible server on the bundled demo model (models/default.gguf),
# at http://127.0.0.1:8000 (override: make serve SERVE_ARGS="--port 9000 -m X.gguf").
# Installs only the build and runtime packages and builds only build/strata
# (a fresh build directory is configured without tests and benchmarks).
SERVE_ARGS ?=
serve:
	@./scripts/install-deps.sh --serve
	@[ -f $(BUILD)/build.ninja ] || cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DSTRATA_WERROR=$(STRATA_WERROR) -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF \
	  $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target strata
	$(BUILD)/strata serve $(SERVE_ARGS)

bench: build models
	@./scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-fuzz build-check build-tsan

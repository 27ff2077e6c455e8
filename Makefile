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

# Binary at build/strata.
build: deps $(BUILD)/build.ninja
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
SERVE_ARGS ?=
serve: build models
	$(BUILD)/strata serve $(SERVE_ARGS)

bench: build models
	@./scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-fuzz build-check build-tsan

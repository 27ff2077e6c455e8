# strata — the two commands a new user runs: `make serve` and `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=

.PHONY: all deps build models test unit-test fuzz serve bench clean

all: build

deps:
	@./scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

# Binary at build/strata.
build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Test and default models, generated (seeded, deterministic) by the tiny-model writer.
models: build
	@./scripts/make-models.sh $(BUILD)

unit-test: build models
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The GGUF parser and the Jinja engine under libFuzzer with ASan + UBSan,
# each for a bounded time from its committed seed corpus.
fuzz: deps
	@./scripts/fuzz.sh $(FUZZ_SECONDS)
	@./scripts/fuzz.sh $(FUZZ_SECONDS) fuzz_jinja

test: unit-test fuzz

# The OpenAI-compatible server on the bundled demo model (models/default.gguf),
# at http://127.0.0.1:8000 (override: make serve SERVE_ARGS="--port 9000 -m X.gguf").
SERVE_ARGS ?=
serve: build models
	$(BUILD)/strata serve $(SERVE_ARGS)

bench: build models
	@./scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-fuzz

#!/bin/sh
# The disaggregated prefill/decode tests (tests/disagg/*.test.mjs) with node's
# test runner: real `strata serve --role prefill|decode|both` and `strata
# router` processes on loopback.
# Usage: tests/disagg/run_disagg_e2e.sh BUILD_DIR
set -u
build=${1:?usage: run_disagg_e2e.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
model="$build/models/llama-f32-peaky.gguf"
if [ ! -f "$model" ]; then echo "run_disagg_e2e: no model in $build/models (run make models)"; exit 1; fi
STRATA_BIN="$build/strata" STRATA_MODEL_PATH="$model" \
  node --test --test-concurrency=1 "$here"/*.test.mjs

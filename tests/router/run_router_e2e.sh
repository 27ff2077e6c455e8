#!/bin/sh
# The router's multi-process tests (tests/router/*.test.mjs) with node's test
# runner: real `strata serve` replicas and `strata router` processes on
# loopback, or in network namespaces where the test can make them (root and
# iproute2; it skips with a message otherwise).
# Usage: tests/router/run_router_e2e.sh BUILD_DIR
set -u
build=${1:?usage: run_router_e2e.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
model="$build/models/llama-f32-peaky.gguf"
if [ ! -f "$model" ]; then echo "run_router_e2e: no model in $build/models (run make models)"; exit 1; fi
STRATA_BIN="$build/strata" STRATA_MODEL_PATH="$model" \
  node --test --test-concurrency=1 "$here"/*.test.mjs

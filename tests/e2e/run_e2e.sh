#!/bin/sh
# End-to-end tests of `strata serve` with the official OpenAI client:
# starts the server on a free port with a small generated model, waits for
# /health, runs tests/e2e/*.test.mjs with node's test runner, then stops the
# server with SIGTERM (checking that it drains and exits 0).
# Usage: tests/e2e/run_e2e.sh BUILD_DIR
# A model-parallel group instead of one process (tests/CMakeLists.txt,
# server_e2e_tp2): STRATA_E2E_LAUNCHER="mpirun -np 2", STRATA_E2E_SERVE_ARGS=
# "--tensor-parallel-size 2", STRATA_E2E_THREADS=1; SIGTERM then goes to rank 0.
set -u
build=${1:?usage: run_e2e.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
model="$build/models/llama-f32-peaky.gguf"
[ -f "$model" ] || model="$build/models/default.gguf"
if [ ! -f "$model" ]; then echo "run_e2e: no model in $build/models (run make models)"; exit 1; fi
if [ ! -d "$root/oracle/node_modules/openai" ]; then
  echo "run_e2e: npm package openai missing (cd oracle && npm install)"; exit 1
fi
# STRATA_E2E_SKIP_FILES: test files (basenames) left out, e.g. by the TSan
# stage (scripts/sanitize.sh), whose threads those files add nothing to.
files=""
for f in "$here"/*.test.mjs; do
  case " ${STRATA_E2E_SKIP_FILES:-} " in *" $(basename "$f") "*) continue ;; esac
  files="$files $f"
done
log=$(mktemp)
key="e2e-$$-key"
# shellcheck disable=SC2086
${STRATA_E2E_LAUNCHER:-} "$build/strata" serve -m "$model" --port 0 --api-key "$key" --served-model-name e2e-model \
  --kv-cache-memory 64MiB --header-timeout 3 --request-timeout 3 --idle-timeout 2 --max-body-bytes 1MiB \
  --log-interval 2 -t "${STRATA_E2E_THREADS:-2}" ${STRATA_E2E_SERVE_ARGS:-} >"$log" 2>&1 &
pid=$!
port=""
for _ in $(seq 1 200); do
  port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$log" | head -1)
  [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  if ! kill -0 $pid 2>/dev/null; then cat "$log"; echo "run_e2e: server died"; exit 1; fi
  sleep 0.1
done
if [ -z "$port" ]; then cat "$log"; kill $pid; echo "run_e2e: server did not start"; exit 1; fi
STRATA_BASE_URL="http://127.0.0.1:$port" STRATA_API_KEY="$key" STRATA_MODEL=e2e-model \
  STRATA_BIN="$build/strata" STRATA_MODEL_PATH="$model" node --test --test-concurrency=1 $files
rc=$?
# SIGTERM drains: an in-flight stream still completes with [DONE], a new
# request meanwhile gets 503 (or, once drained, a closed port), exit code 0.
out=$(mktemp)
curl -sN "http://127.0.0.1:$port/v1/completions" -H "Authorization: Bearer $key" \
  -d '{"prompt":"drain","max_tokens":200,"n":16,"ignore_eos":true,"stream":true}' >"$out" &
curl_pid=$!
sleep 0.1
term_pid=$pid
if [ -n "${STRATA_E2E_LAUNCHER:-}" ]; then
  for c in $(pgrep -P $pid); do
    tr '\0' '\n' < "/proc/$c/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0' && term_pid=$c
  done
fi
kill -TERM $term_pid
sleep 0.02
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/completions" \
  -H "Authorization: Bearer $key" -d '{"prompt":"late"}')
wait $pid
server_rc=$?
wait $curl_pid
if ! tail -c 20 "$out" | grep -q 'data: \[DONE\]'; then
  echo "run_e2e: the in-flight stream did not finish during the drain"; rc=1
fi
case "$code" in 503|000) ;; *) echo "run_e2e: request during drain got $code"; rc=1 ;; esac
rm -f "$out"
if [ $rc -ne 0 ] || [ $server_rc -ne 0 ]; then
  echo "--- server log (exit $server_rc) ---"; tail -50 "$log"
fi
rm -f "$log"
[ $rc -eq 0 ] && [ $server_rc -eq 0 ]

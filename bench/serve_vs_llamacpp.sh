#!/usr/bin/env bash
# strata serve vs llama.cpp's llama-server, both measured by `strata bench serve`
# on the same load, the same model file, the same thread count and the same KV
# memory (llama-server's context of CTX tokens; strata's --kv-cache-memory is
# CTX x the model's KV bytes per token).
#
#   LLAMA_SERVER=/path/to/llama-server bench/serve_vs_llamacpp.sh [BUILD_DIR]
#   env: MODEL (default: the TinyLlama-1.1B shape in Q8_0, as scripts/bench.sh
#        writes it), CTX=8192, THREADS=2, OUT=/tmp/serve_vs_llamacpp,
#        CASES="c4 c8 r16"
#
# Loads (issue #5): 16 requests of 200 prompt tokens and 64 output tokens with
# 4 concurrent clients (llama-server with 4 slots) and with 8 (8 slots); then
# random 256-in / 128-out, 16 requests at 16 concurrency (16 slots).
# llama-server is built from the llama.cpp source that node-llama-cpp@3.22.1
# carries (llama/gitRelease.bundle), outside this repository, for measurement
# only.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
LLAMA_SERVER=${LLAMA_SERVER:?set LLAMA_SERVER to a llama-server binary}
CTX=${CTX:-8192}
THREADS=${THREADS:-2}
OUT=${OUT:-/tmp/serve_vs_llamacpp}
STRATA=$BUILD/strata
mkdir -p "$OUT"
if [ -z "${MODEL:-}" ]; then
  MODEL=$BUILD/models/bench/1.1b-q8_0.gguf
  if [ ! -f "$MODEL" ]; then
    mkdir -p "$(dirname "$MODEL")"
    "$BUILD/strata-mkmodel" --arch llama --layers 22 --hidden 2048 --heads 32 --kv-heads 4 \
      --ffn 5632 --vocab 32000 --ctx 2048 --type q8_0 --seed 1 -o "$MODEL" >/dev/null
  fi
fi
# KV bytes per token = layers x 2 (K and V) x kv_heads x head_dim x 2 (fp16).
KV_PER_TOKEN=$(node --input-type=module -e '
  import { createRequire } from "node:module";
  const require = createRequire(process.cwd() + "/oracle/package.json");
  const { gguf } = require("@huggingface/gguf");
  const { metadata: m } = await gguf(process.argv[1], { allowLocalFile: true });
  const a = m["general.architecture"];
  const heads = m[`${a}.attention.head_count`], kv = m[`${a}.attention.head_count_kv`] ?? heads;
  const hd = m[`${a}.attention.key_length`] ?? m[`${a}.embedding_length`] / heads;
  console.log(m[`${a}.block_count`] * 2 * kv * hd * 2);' "$MODEL")
KV_BYTES=$((CTX * KV_PER_TOKEN))
PORT=18180  # each server gets the next port (a stopped one may linger)
SERVER_PID=""
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true' EXIT
CASES=${CASES:-c4 c8 r16}

wait_up() {  # url pid
  for _ in $(seq 1 600); do
    curl -sf "$1/health" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

run_load() {  # name url concurrency num_prompts input output
  "$STRATA" bench serve --base-url "$2" --dataset-name random --num-prompts "$4" \
    --input-len "$5" --output-len "$6" --max-concurrency "$3" --seed 1 --num-warmups 1 \
    --save-result "$OUT/$1.json" >"$OUT/$1.txt" 2>&1 || { cat "$OUT/$1.txt"; return 1; }
}

serve_strata() {  # name concurrency num_prompts input output
  PORT=$((PORT + 1))
  "$STRATA" serve -m "$MODEL" --port $PORT -t "$THREADS" --kv-cache-memory "$KV_BYTES" \
    --max-model-len "$CTX" --allow-long-max-model-len --log-interval 0 >"$OUT/strata-$1.log" 2>&1 &
  local pid=$!
  SERVER_PID=$pid
  wait_up "http://127.0.0.1:$PORT" $pid || { cat "$OUT/strata-$1.log"; exit 1; }
  run_load "strata-$1" "http://127.0.0.1:$PORT" "$2" "$3" "$4" "$5"
  kill $pid; wait $pid 2>/dev/null || true
}

serve_llama() {  # name slots concurrency num_prompts input output
  PORT=$((PORT + 1))
  "$LLAMA_SERVER" -m "$MODEL" --port $PORT -t "$THREADS" -c "$CTX" -np "$2" -fa off \
    >"$OUT/llama-$1.log" 2>&1 &
  local pid=$!
  SERVER_PID=$pid
  wait_up "http://127.0.0.1:$PORT" $pid || { tail -20 "$OUT/llama-$1.log"; exit 1; }
  run_load "llama-$1" "http://127.0.0.1:$PORT" "$3" "$4" "$5" "$6"
  kill $pid; wait $pid 2>/dev/null || true
}

echo "model $MODEL, $THREADS threads, KV $CTX tokens ($KV_BYTES bytes), results in $OUT"
for c in $CASES; do
  case $c in
    c4) serve_llama c4 4 4 16 200 64; serve_strata c4 4 16 200 64 ;;
    c8) serve_llama c8 8 8 16 200 64; serve_strata c8 8 16 200 64 ;;
    r16) serve_llama r16 16 16 16 256 128; serve_strata r16 16 16 256 128 ;;
  esac
done

python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
def load(n):
    return json.load(open(f"{out}/{n}.json"))
print(f"{'load':<28} {'engine':<13} {'out tok/s':>10} {'mean TTFT s':>12} {'mean TPOT ms':>13} {'p99 TPOT ms':>12} {'failed':>7}")
import os
for case, desc in [("c4", "200/64, 4 clients (4 slots)"), ("c8", "200/64, 8 clients (8 slots)"),
                   ("r16", "256/128, 16 clients (16 sl.)")]:
    if not os.path.exists(f"{out}/strata-{case}.json"):
        continue
    rows = {}
    for eng in ("llama", "strata"):
        r = load(f"{eng}-{case}")
        rows[eng] = r
        print(f"{desc:<28} {('llama-server' if eng == 'llama' else 'strata'):<13} {r['output_throughput']:10.1f}"
              f" {r['mean_ttft_ms']/1e3:12.2f} {r['mean_tpot_ms']:13.1f} {r['p99_tpot_ms']:12.1f}"
              f" {r.get('failed', 0):7}")
    l, s = rows["llama"], rows["strata"]
    print(f"{'':<28} {'ratio':<13} {s['output_throughput']/l['output_throughput']:9.2f}x"
          f" {s['mean_ttft_ms']/l['mean_ttft_ms']:11.2f}x {s['mean_tpot_ms']/l['mean_tpot_ms']:12.2f}x"
          f" {s['p99_tpot_ms']/l['p99_tpot_ms']:11.2f}x")
PY

#!/usr/bin/env bash
# The serving core's performance figures (issue 3) on the TinyLlama-1.1B shape,
# Q8_0, 2 threads: KV waste, batched decode at 1..32 streams, shared-prefix
# TTFT, and the chunked-prefill sweep that picks the CPU default of
# --max-prefill-tokens (prompt tokens per step while others decode). Also one `strata bench throughput` run.
# Usage: bench/serving_core.sh BUILD_DIR [scenario...]   (scenarios: waste
#        decode prefix chunked throughput; default: all)
# Env: THREADS (2), BUDGETS (16,32,64,128,256,512,1024,2048): the
# --max-prefill-tokens values swept; ATTENTION_COST (the engine's default
# --prefill-attention-cost; 0 counts prompt tokens only).
# Generates BUILD_DIR/tinyllama-q8_0.gguf (random weights, seeded) if missing.
# Takes ~15-25 minutes on a 2-core host, most of it the chunked sweep.
set -euo pipefail
build=${1:?usage: serving_core.sh BUILD_DIR [scenario...]}
shift
threads=${THREADS:-2}
budgets=${BUDGETS:-16,32,64,128,256,512,1024,2048}
cost_args=()
[ -z "${ATTENTION_COST:-}" ] || cost_args=(--attention-cost "$ATTENTION_COST")
model="$build/tinyllama-q8_0.gguf"
cmake --build "$build" --target strata strata-mkmodel bench_serving_core >/dev/null
if [ ! -f "$model" ]; then
  "$build/strata-mkmodel" --arch llama --layers 22 --hidden 2048 --heads 32 --kv-heads 4 \
    --ffn 5632 --vocab 32000 --ctx 2048 --type q8_0 --seed 1 -o "$model"
fi
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(waste decode prefix chunked throughput)
core=()
run_throughput=0
for s in "${scenarios[@]}"; do
  if [ "$s" = throughput ]; then run_throughput=1; else core+=("$s"); fi
done
if [ ${#core[@]} -gt 0 ]; then
  "$build/bench_serving_core" "$model" "${core[@]}" --threads "$threads" --budgets "$budgets" \
    "${cost_args[@]}"
fi
if [ $run_throughput = 1 ]; then
  echo
  echo "== strata bench throughput (16 prompts of 128 tokens, 32 outputs each) =="
  "$build/strata" bench throughput -m "$model" --num-prompts 16 --input-len 128 \
    --output-len 32 -t "$threads"
fi

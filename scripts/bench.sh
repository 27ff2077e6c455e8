#!/usr/bin/env bash
# End-to-end speed, side by side with llama.cpp (node-llama-cpp@3.21.1's
# prebuilt CPU build) on the same GGUF files: prefill of a 512-token prompt and
# decode of 128 tokens, single stream, 2 threads, median of REPS runs.
# Then the kernel microbenchmarks (Google Benchmark).
#
#   scripts/bench.sh [BUILD_DIR]
#   env: MODELS="1.1b:q8_0 1.1b:q4_0 1.1b:q4_k_m 1.1b:f16 0.4b:q8_0" REPS=3 THREADS=2 KERNELS=1
#
# Each row also shows the floors strata measures on this machine before it
# runs (kernels/roofline.h): prefill = FLOPs per token over the arithmetic
# peak of the kernels' instructions, decode = weight bytes per token over
# the measured read bandwidth.
#
# The reference is node-llama-cpp's prebuilt llama.cpp by default. Set
# LLAMA_BENCH=/path/to/llama-bench to use a llama-bench binary instead (built
# from the llama.cpp source that node-llama-cpp@3.22.1 carries, outside this
# repository), which has no JavaScript in its decode loop.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
MODELS_LIST=${MODELS:-1.1b:q8_0 1.1b:q4_0 1.1b:q4_k_m 1.1b:f16 0.4b:q8_0}
REPS=${REPS:-3}
THREADS=${THREADS:-2}
PROMPT=${PROMPT:-512}
GEN=${GEN:-128}
MODELS=$BUILD/models/bench
mkdir -p "$MODELS"

shape_args() {
  case "$1" in
    1.1b) echo "--arch llama --layers 22 --hidden 2048 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000 --ctx 2048" ;;
    0.4b) echo "--arch qwen2 --layers 24 --hidden 896 --heads 14 --kv-heads 2 --ffn 4864 --vocab 32000 --ctx 2048" ;;
    *) echo "unknown shape $1" >&2; exit 2 ;;
  esac
}

printf '\n== end-to-end: prefill %d tokens, decode %d tokens, %d threads, median of %d ==\n' \
  "$PROMPT" "$GEN" "$THREADS" "$REPS"
printf '%-14s %10s %10s %7s %10s %10s %10s %7s %10s\n' model strata_pp llama_pp ratio pp_floor \
  strata_tg llama_tg ratio tg_floor
for entry in $MODELS_LIST; do
  shape=${entry%%:*}
  type=${entry##*:}
  f=$MODELS/$shape-$type.gguf
  if [ ! -f "$f" ]; then
    # shellcheck disable=SC2046
    "$BUILD/strata-mkmodel" $(shape_args "$shape") --type "$type" --seed 1 -o "$f" >/dev/null
  fi
  s=$("$BUILD/strata" bench forward -m "$f" --prompt "$PROMPT" --gen "$GEN" \
      --threads "$THREADS" --reps "$REPS" --json)
  if [ -n "${LLAMA_BENCH:-}" ]; then
    l=$("$LLAMA_BENCH" -m "$f" -p "$PROMPT" -n "$GEN" -t "$THREADS" -r "$REPS" -fa off -o json |
        python3 -c 'import json,sys; r=json.load(sys.stdin); t={x["n_prompt"]>0: x["avg_ts"] for x in r}; print(json.dumps({"prefill_tok_s": t[True], "decode_tok_s": t[False]}))')
  else
    l=$(node scripts/bench_llamacpp.mjs "$f" --prompt "$PROMPT" --gen "$GEN" \
        --threads "$THREADS" --reps "$REPS")
  fi
  python3 - "$shape-$type" "$s" "$l" <<'PY'
import json, sys
name, s, l = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
print(f"{name:<14} {s['prefill_tok_s']:10.1f} {l['prefill_tok_s']:10.1f} {s['prefill_tok_s']/l['prefill_tok_s']:6.2f}x"
      f" {s['prefill_floor_tok_s']:10.1f}"
      f" {s['decode_tok_s']:10.1f} {l['decode_tok_s']:10.1f} {s['decode_tok_s']/l['decode_tok_s']:6.2f}x"
      f" {s['decode_floor_tok_s']:10.1f}")
PY
done
printf '(machine, measured by strata: read %s GB/s, fp32 FMA %s GFLOP/s, int8 dot %s GOP/s)\n' \
  "$(echo "$s" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["mem_bw_gbs"],1))')" \
  "$(echo "$s" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["peak_fp32_gflops"]))')" \
  "$(echo "$s" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["peak_int8_gops"]))')"

if [ "${KERNELS:-1}" = 1 ] && [ -x "$BUILD/bench_kernels" ]; then
  printf '\n== kernel microbenchmarks ==\n'
  "$BUILD/bench_kernels" --benchmark_min_time=0.2 --benchmark_repetitions="$REPS" \
    --benchmark_report_aggregates_only=true
fi

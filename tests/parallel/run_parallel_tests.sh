#!/usr/bin/env bash
# Model parallelism under mpirun on real processes (2 cores: 4 ranks run
# oversubscribed). Usage: run_parallel_tests.sh BUILD_DIR
#   - logits of TP=2, PP=2 and TP=2 x PP=2 against one process (parallel_parity);
#   - greedy continuations of `strata generate` identical to one process's;
#   - the tiered KV cache's per-rank slices (parallel_tiers);
#   - pipeline micro-batches in flight: tokens as one process's, overlap
#     (parallel_pipeline);
#   - one-line errors for sizes that do not match the launch or the model.
set -uo pipefail
build=${1:?usage: run_parallel_tests.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
strata="$build/strata"
models="$build/models"
[ -e "$models/llama-f32.gguf" ] || { echo "no models in $models (run make models)"; exit 1; }
command -v mpirun >/dev/null || { echo "mpirun missing (scripts/install-deps.sh installs openmpi-bin)"; exit 1; }
# CI runs as root; 4 ranks on 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
num_failed=0
num_passed=0
pass() { num_passed=$((num_passed + 1)); }
fail() { echo "FAIL: $*"; num_failed=$((num_failed + 1)); }

layouts=("2 --tensor-parallel-size 2" "2 --pipeline-parallel-size 2"
         "4 --tensor-parallel-size 2 --pipeline-parallel-size 2")

# 1. Logits parity.
for m in llama-f32 llama-q8_0 qwen2-f16 qwen2-q4_0 qwen3-bf16 qwen3-q8_0 llama-f32-peaky; do
  for lay in "${layouts[@]}"; do
    np=${lay%% *}
    args=${lay#* }
    # shellcheck disable=SC2086
    if timeout 60 mpirun -np "$np" "$build/parallel_parity" $args "$models/$m.gguf" \
        > "$tmp/out" 2>&1; then
      pass
    else
      fail "parity $m ($args)"; tail -5 "$tmp/out"
    fi
  done
done

# 2. Greedy continuations through the CLI, printed once (by rank 0).
for m in llama-f32-peaky qwen2-q8_0-peaky llama-q8_0 qwen3-f16; do
  "$strata" generate -m "$models/$m.gguf" -p "The quick brown" -n 32 --temperature 0 -t 1 \
    > "$tmp/want" 2> /dev/null || fail "generate $m alone"
  for lay in "${layouts[@]}"; do
    np=${lay%% *}
    args=${lay#* }
    # shellcheck disable=SC2086
    timeout 60 mpirun -np "$np" "$strata" generate -m "$models/$m.gguf" -p "The quick brown" \
      -n 32 --temperature 0 -t 1 $args > "$tmp/have" 2> "$tmp/err"
    if [ $? -eq 0 ] && cmp -s "$tmp/want" "$tmp/have"; then
      pass
    else
      fail "generate $m ($args) differs from one process"; diff "$tmp/want" "$tmp/have" | head -5
      tail -3 "$tmp/err"
    fi
  done
done

# 3. The tiered KV cache: per-rank slices on disk, loaded after a restart on
#    every rank (parallel_tiers: greedy tokens as one process's; nothing
#    loads when one rank lacks its slice, nor into one process).
for lay in "2 --tp 2" "2 --pp 2"; do
  np=${lay%% *}
  args=${lay#* }
  rm -rf "$tmp/kv"
  # shellcheck disable=SC2086
  if timeout 60 mpirun -np "$np" "$build/parallel_tiers" $args "$models/llama-f32-peaky.gguf" \
      "$tmp/kv" > "$tmp/out" 2>&1; then
    pass
  else
    fail "tiers ($args)"; tail -5 "$tmp/out"
  fi
done

# 4. Pipeline micro-batches: several concurrent requests (greedy and seeded
#    sampling) through an engine that keeps P plans in flight give one
#    process's tokens, and plans really overlapped (parallel_pipeline).
for lay in "2 --pp 2" "4 --tp 2 --pp 2"; do
  np=${lay%% *}
  args=${lay#* }
  # shellcheck disable=SC2086
  if timeout 60 mpirun -np "$np" "$build/parallel_pipeline" $args \
      "$models/llama-f32.gguf" > "$tmp/out" 2>&1; then
    pass
  else
    fail "pipeline ($args)"; tail -5 "$tmp/out"
  fi
done

# 5. Sizes that do not fit: one line naming the flags, exit 1.
check_error() {  # check_error NAME PATTERN CMD...
  local name=$1 pattern=$2; shift 2
  timeout 60 "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q -- "$pattern" "$tmp/err"; then
    pass
  else
    fail "$name (rc=$rc)"; head -5 "$tmp/err"
  fi
}
check_error "TP without mpirun" "x --pipeline-parallel-size 1 = 2 ranks, but this process was not started by mpirun" \
  "$strata" generate -m "$models/llama-f32.gguf" -p hi -n 2 --tensor-parallel-size 2
check_error "-np differs from T x P" "= 2 ranks, but mpirun started 3" \
  mpirun -np 3 "$strata" generate -m "$models/llama-f32.gguf" -p hi -n 2 --tensor-parallel-size 2
check_error "q4_K blocks do not split" "not whole blocks of 256 (--tensor-parallel-size 2)" \
  mpirun -np 2 "$strata" generate -m "$models/llama-q4_k.gguf" -p hi -n 2 --tensor-parallel-size 2

echo "parallel: $num_passed passed, $num_failed failed"
[ "$num_failed" -eq 0 ]

#!/usr/bin/env bash
# End-to-end checks of the strata binary on every generated model:
# generate (greedy and sampled), inspect, tokenize; and clear one-line errors
# for a prompt longer than the context, a missing file and a corrupt file.
# Usage: cli_smoke.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: cli_smoke.sh BUILD_DIR}
strata="$build/strata"
models=("$build"/models/*.gguf)
[ -e "${models[0]}" ] || { echo "no models in $build/models (run make models)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
num_failed=0
num_passed=0
check() {  # check NAME CMD... : the command must succeed
  local name=$1; shift
  if "$@" > "$tmp/out" 2> "$tmp/err"; then
    num_passed=$((num_passed + 1))
  else
    echo "FAIL: $name"; tail -3 "$tmp/err"; num_failed=$((num_failed + 1))
  fi
}
check_error() {  # check_error NAME PATTERN CMD... : must fail, stderr matching PATTERN, no crash
  local name=$1 pattern=$2; shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  if [ "$rc" -eq 1 ] && grep -q -- "$pattern" "$tmp/err" && [ "$(wc -l < "$tmp/err")" -le 2 ]; then
    num_passed=$((num_passed + 1))
  else
    echo "FAIL: $name (rc=$rc)"; cat "$tmp/err"; num_failed=$((num_failed + 1))
  fi
}

for m in "${models[@]}"; do
  n=$(basename "$m" .gguf)
  check "generate greedy $n" "$strata" generate -m "$m" -p "Hello world" -n 8 --temperature 0 -t 2
  grep -q "decode: 8 tokens" "$tmp/err" || grep -q "finish: stop" "$tmp/err" ||
    { echo "FAIL: generate $n did not report decode speed"; num_failed=$((num_failed + 1)); }
  check "generate sampled $n" "$strata" generate -m "$m" -p "Once upon a time" -n 8 \
    --temperature 0.9 --top-k 20 --top-p 0.9 --seed 7 -t 2
  check "inspect $n" "$strata" inspect "$m"
  check "tokenize $n" "$strata" tokenize -m "$m" "Hello world"
done

# Greedy decoding is deterministic: the same text twice.
m=${models[0]}
"$strata" generate -m "$m" -p "abc" -n 12 --temperature 0 > "$tmp/a" 2>/dev/null
"$strata" generate -m "$m" -p "abc" -n 12 --temperature 0 > "$tmp/b" 2>/dev/null
if cmp -s "$tmp/a" "$tmp/b"; then num_passed=$((num_passed + 1)); else
  echo "FAIL: greedy output differs between runs"; num_failed=$((num_failed + 1)); fi

# Speculative decoding: greedy text identical to plain decoding; bad configs
# are one-line errors naming the problem.
spec='{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 1, "gating": "off"}'
"$strata" generate -m "$m" -p "abc abc abc" -n 24 --temperature 0 --ignore-eos > "$tmp/a" 2>/dev/null
"$strata" generate -m "$m" -p "abc abc abc" -n 24 --temperature 0 --ignore-eos \
  --speculative-config "$spec" > "$tmp/b" 2>/dev/null
if cmp -s "$tmp/a" "$tmp/b"; then num_passed=$((num_passed + 1)); else
  echo "FAIL: speculative greedy output differs from plain"; num_failed=$((num_failed + 1)); fi
check_error "speculative bad json" "not valid JSON" "$strata" generate -m "$m" -p hi \
  --speculative-config '{method: ngram}'
check_error "speculative unknown method" "unknown method" "$strata" generate -m "$m" -p hi \
  --speculative-config '{"method": "eagle", "num_speculative_tokens": 2}'
check_error "speculative unknown field" "unknown field" "$strata" bench throughput -m "$m" \
  --num-prompts 1 --speculative-config '{"method": "ngram", "num_speculative_tokens": 2, "x": 1}'

long=$(printf 'word %.0s' $(seq 1 400))
check_error "prompt longer than context" "ctx-size" "$strata" generate -m "$m" -p "$long" -c 64
check_error "missing model file" "no-such" "$strata" inspect "$tmp/no-such.gguf"
head -c 100 "$m" > "$tmp/truncated.gguf"
check_error "truncated model file" "gguf" "$strata" inspect "$tmp/truncated.gguf"
check_error "truncated model generate" "gguf" "$strata" generate -m "$tmp/truncated.gguf" -p hi

echo "cli_smoke: $num_passed passed, $num_failed failed"
[ "$num_failed" -eq 0 ]

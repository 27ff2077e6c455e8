#!/usr/bin/env bash
# `strata serve` and the flag parser as a new user meets them: a mistyped
# flag or command gets the closest name; every flag has help text; the model
# path may be positional (`strata serve MODEL`); a --max-model-len beyond the
# model's trained context is refused unless --allow-long-max-model-len; the
# default KV budget is what --max-num-seqs x --max-model-len can use, and a
# pool smaller than one request is a warning; the start-up log says what was
# loaded and where it listens; `bench serve` aims at serve's port.
# Usage: serve_cli.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: serve_cli.sh BUILD_DIR}
strata="$build/strata"
model="$build/models/llama-f32-peaky.gguf"  # ctx 256, 2 layers, 2 KV heads of 64
[ -f "$model" ] || { echo "no $model (run make models)"; exit 1; }
tmp=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
num_failed=0
num_passed=0
pass() { num_passed=$((num_passed + 1)); }
fail() { echo "FAIL: $*"; num_failed=$((num_failed + 1)); }

# usage_error NAME PATTERN ARGS...: strata ARGS fails with one line on stderr
# matching PATTERN.
usage_error() {
  local name=$1 pattern=$2; shift 2
  "$strata" "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] &&
     grep -q -- "$pattern" "$tmp/err"; then
    pass
  else
    fail "$name (rc=$rc)"; cat "$tmp/err"
  fi
}

usage_error "flag suggestion" "unknown flag '--kv-cache-mem'; did you mean --kv-cache-memory?" \
  serve --kv-cache-mem 1G
usage_error "flag suggestion, --flag=value" "did you mean --max-num-seqs?" \
  serve --max-num-seq=4
usage_error "short typo" "did you mean --port?" serve --prot 9000
usage_error "command suggestion" "unknown command 'sevre'; did you mean serve?" sevre
usage_error "subcommand flag suggestion" "did you mean --num-prompts?" bench serve --num-prompt 3
usage_error "generate flag suggestion" "did you mean --temperature?" generate -p x --temprature 0
usage_error "nothing close" "unknown flag '--zzzzzz' (strata serve --help lists them)" \
  serve --zzzzzz
usage_error "two model paths" "unexpected argument" serve "$model" "$model"

# Every option and positional of every command has a description: CLI11
# pads the name to column 30 and writes the description after it, or on the
# next line (indented 30) when the name is longer.
for cmd in "" inspect tokenize generate bench "bench forward" "bench throughput" "bench serve" \
           serve; do
  # shellcheck disable=SC2086
  "$strata" $cmd --help > "$tmp/help" 2>&1
  missing=$(awk '
    /^[A-Za-z]+:$/ { section = $0; next }
    function check(line, next_line) {
      if (next_line ~ /^                              [^ ]/) return
      if (length(line) > 30 && substr(line, 30, 1) == " " && substr(line, 31, 1) != " ") return
      print line
    }
    { if (pending != "") check(pending, $0); pending = "" }
    (section == "Options:" || section == "Positionals:") && /^  [^ ]/ { pending = $0 }
    END { if (pending != "") check(pending, "") }' "$tmp/help")
  if [ -z "$missing" ] && grep -q "^Options:" "$tmp/help"; then pass; else
    fail "strata $cmd --help: options without help text:"; echo "$missing"; fi
done

# bench serve aims at strata serve's default address.
"$strata" bench serve --help > "$tmp/help" 2>&1
if grep -q -- "--base-url TEXT=http://127.0.0.1:8000" "$tmp/help"; then pass; else
  fail "bench serve --base-url default is not serve's port 8000"; grep -- --base-url "$tmp/help"; fi

usage_error "max-model-len beyond the trained context" \
  "exceeds the model's trained context of 256 tokens.*--allow-long-max-model-len" \
  serve "$model" --max-model-len 4096

# start_server ARGS...: starts strata serve ARGS in the background on a free
# port and waits (at most 30 s) until it listens; sets server_pid and port.
start_server() {
  # Emptied here, not only by the child's redirection (which runs later): the
  # loop below must not read the previous server's log.
  : > "$tmp/serve.err"
  "$strata" serve "$@" --port 0 --log-interval 0 -t 1 > "$tmp/serve.out" 2> "$tmp/serve.err" &
  server_pid=$!
  port=""
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/serve.err")
    [ -n "$port" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not start:"; cat "$tmp/serve.err"
  return 1
}
stop_server() {
  kill "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null
  server_pid=""
}
log_has() {  # log_has NAME PATTERN: the start-up log has a line matching PATTERN
  if grep -q -- "$2" "$tmp/serve.err"; then pass; else fail "$1: no '$2' in:"; cat "$tmp/serve.err"; fi
}

# Positional model path, as `vllm serve MODEL`; the default KV budget: 256
# sequences x 256 tokens = 4096 blocks of 16 tokens (1 KiB of fp16 K+V per
# token: 2 layers x 2 x 2 heads x 64), not the 2 GiB cap.
if start_server "$model"; then
  pass
  models=$(curl -s "http://127.0.0.1:$port/v1/models")
  if echo "$models" | grep -q '"id":"llama-f32-peaky"'; then pass; else
    fail "positional model: /v1/models says $models"; fi
  log_has "start-up log: model" "\[serve\] model $model (.*): llama, 2 layers, hidden 256, 4 heads (2 KV) of 64, vocab 512, trained context 256"
  log_has "start-up log: weights" "\[serve\] weights: f32 x "
  log_has "start-up log: kernels" "\[serve\] kernels: [a-z0-9]*, 1 thread$"
  log_has "default KV budget" "KV cache: 4096 blocks of 16 tokens = 65536 tokens, 64.0 MiB fp16 (auto: --max-num-seqs 256 x --max-model-len 256"
  log_has "start-up log: concurrency" "maximum concurrency at --max-model-len 256: 256.00x"
  log_has "start-up log: address" "listening on http://127.0.0.1:$port"
  if grep -q "warning" "$tmp/serve.err"; then fail "default start-up warns:"; cat "$tmp/serve.err"; else pass; fi
  # The machine's ceilings, measured at start-up, and after one request the
  # forward phases against them in /metrics.
  log_has "start-up log: roofline" \
    "\[serve\] roofline: read [0-9.]* GB/s, fp32 FMA [0-9]* GFLOP/s, int8 dot [0-9]* GOP/s"
  curl -s "http://127.0.0.1:$port/v1/completions" -H 'content-type: application/json' \
    -d '{"prompt": "a b c", "max_tokens": 2}' > /dev/null
  curl -s "http://127.0.0.1:$port/metrics" > "$tmp/metrics"
  for series in 'strata:forward_phase_seconds_total{model_name="llama-f32-peaky",phase="qkv_proj"' \
                'strata:forward_phase_floor_seconds_total{model_name="llama-f32-peaky",phase="gate_up_proj"' \
                'strata:machine_read_bandwidth_bytes_per_second{'; do
    if grep -qF "$series" "$tmp/metrics"; then pass; else fail "/metrics has no $series"; fi
  done
  stop_server
else
  fail "strata serve MODEL did not start"
fi

# --no-roofline: nothing measured, so time and work per phase but no floors.
if start_server "$model" --no-roofline; then
  if grep -q "roofline:" "$tmp/serve.err"; then fail "--no-roofline still measured:"; cat "$tmp/serve.err"; else pass; fi
  curl -s "http://127.0.0.1:$port/v1/completions" -H 'content-type: application/json' \
    -d '{"prompt": "a b c", "max_tokens": 2}' > /dev/null
  curl -s "http://127.0.0.1:$port/metrics" > "$tmp/metrics"
  if grep -q "forward_phase_seconds_total" "$tmp/metrics" &&
     ! grep -q "forward_phase_floor_seconds\|machine_read_bandwidth" "$tmp/metrics"; then pass; else
    fail "--no-roofline /metrics:"; grep "forward_phase\|machine_" "$tmp/metrics"; fi
  stop_server
else
  fail "strata serve --no-roofline did not start"
fi

# The budget follows the flags: 4 sequences x ceil(100 / 16) = 28 blocks.
if start_server "$model" --max-num-seqs 4 --max-model-len 100; then
  log_has "KV budget from the flags" "KV cache: 28 blocks of 16 tokens = 448 tokens"
  stop_server
else
  fail "strata serve --max-num-seqs 4 --max-model-len 100 did not start"
fi

# A pool smaller than one --max-model-len request: a warning, and it runs.
if start_server -m "$model" --kv-cache-memory 64KiB; then
  log_has "small pool warning" "warning: the KV pool holds 64 tokens, fewer than one --max-model-len request (256)"
  stop_server
else
  fail "strata serve --kv-cache-memory 64KiB did not start"
fi

# The override: a longer --max-model-len starts, with a warning.
if start_server "$model" --max-model-len 1024 --allow-long-max-model-len; then
  log_has "long max-model-len warning" "warning: --max-model-len 1024 is beyond the model's trained context of 256"
  stop_server
else
  fail "strata serve --allow-long-max-model-len did not start"
fi

# Each KV tier is logged with whether it answers (loopback port 1 refuses).
if start_server "$model" --kv-cpu-bytes 16MiB --kv-remote redis://127.0.0.1:1; then
  log_has "ram tier line" "\[kv\] tier ram (16 MiB): reachable"
  log_has "unreachable redis line" "\[kv\] tier redis (redis://127.0.0.1:1): unreachable at start-up"
  stop_server
else
  fail "strata serve with an unreachable Redis tier did not start"
fi

echo "serve_cli: $num_passed passed, $num_failed failed"
[ "$num_failed" -eq 0 ]

#!/usr/bin/env bash
# strata router benchmarks (issue 14), two parts:
#
#   multiturn  Two `strata serve` replicas (THREADS each) behind `strata router`,
#              for each policy in POLICIES: SESSIONS chat conversations x TURNS
#              turns, a SYSTEM_TOKENS system prompt shared by none (each session
#              has its own), ~USER_TOKENS new user tokens and OUTPUT_TOKENS output
#              tokens per turn; sessions start as a Poisson process at each rate
#              of RATES (sessions/s; fresh conversations per rate, fresh replicas
#              per policy), each sends its next turn when the last answer is in.
#              Reports mean and p90 TTFT, output tok/s and the cached-token
#              fraction (usage.prompt_tokens_details.cached_tokens / prompt
#              tokens), and the same workload on ONE replica with both replicas'
#              KV memory (the fraction to compare against).
#   hotprefix  Two replicas sharing one Redis tier (redis-server on a free port)
#              behind a cache-aware router: HOT_REQUESTS completions at HOT_RATE/s,
#              HOT_SHARE of them on one HOT_PREFIX_TOKENS-token prefix (+ a unique
#              tail), the rest unique prompts of the same length. Reports each
#              replica's share of the requests (neither should fall below 70% of
#              the other) and the hot requests' mean/p90 TTFT against the all-hits
#              case (the same run again, every replica already holding the prefix).
#   overhead   `strata bench serve` at OVERHEAD_RPS requests/s of tiny requests
#              (16 prompt tokens, 1 output token) straight to one replica of
#              OVERHEAD_MODEL, then through a router in front of that replica
#              (probes included): the p50/p99 E2E latency of both, their
#              difference, and the router's own added-latency histogram
#              (strata_router_added_latency_seconds).
#
#   bench/router_bench.sh [BUILD_DIR]
#   env: MODEL=path.gguf (default: the TinyLlama-1.1B shape, Q8_0, strata-mkmodel),
#        THREADS=1 KV_MEMORY=256MiB SESSIONS=32 TURNS=6 SYSTEM_TOKENS=600
#        USER_TOKENS=100 OUTPUT_TOKENS=64 RATES="0.25 0.5 1 2"
#        POLICIES="cache-aware least-load round-robin session" PARTS="multiturn hotprefix overhead"
#        HOT_REQUESTS=200 HOT_RATE=4 HOT_SHARE=0.8 HOT_PREFIX_TOKENS=2000
#        OVERHEAD_RPS=200 OVERHEAD_REQUESTS=2000 OVERHEAD_MODEL=build/models/llama-f32.gguf
#        PORT_BASE=19300
#
# Expect hours with the 1.1B model on 2 cores (one 700-token prefill is tens of
# seconds at 1 thread). A quick look: MODEL=build/models/bench/router-small.gguf
# (made below when MODEL=small) SESSIONS=8 TURNS=4 RATES="1 4".
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
STRATA=$BUILD/strata
THREADS=${THREADS:-1}
KV_MEMORY=${KV_MEMORY:-256MiB}
SESSIONS=${SESSIONS:-32}
TURNS=${TURNS:-6}
SYSTEM_TOKENS=${SYSTEM_TOKENS:-600}
USER_TOKENS=${USER_TOKENS:-100}
OUTPUT_TOKENS=${OUTPUT_TOKENS:-64}
RATES=${RATES:-0.25 0.5 1 2}
POLICIES=${POLICIES:-cache-aware least-load round-robin session}
PARTS=${PARTS:-multiturn hotprefix overhead}
HOT_REQUESTS=${HOT_REQUESTS:-200}
HOT_RATE=${HOT_RATE:-4}
HOT_SHARE=${HOT_SHARE:-0.8}
HOT_PREFIX_TOKENS=${HOT_PREFIX_TOKENS:-2000}
OVERHEAD_RPS=${OVERHEAD_RPS:-200}
OVERHEAD_REQUESTS=${OVERHEAD_REQUESTS:-2000}
PORT_BASE=${PORT_BASE:-19300}
OVERHEAD_MODEL=${OVERHEAD_MODEL:-$BUILD/models/llama-f32.gguf}

MODEL=${MODEL:-}
if [ -z "$MODEL" ] || [ "$MODEL" = small ]; then
  if [ "$MODEL" = small ]; then
    MODEL=$BUILD/models/bench/router-small.gguf
    args="--arch llama --layers 4 --hidden 512 --heads 8 --kv-heads 4 --ffn 1024 --vocab 512 --ctx 8192 --type q8_0 --seed 1"
  else
    MODEL=$BUILD/models/bench/1.1b-q8_0.gguf
    args="--arch llama --layers 22 --hidden 2048 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000 --ctx 2048 --type q8_0 --seed 1"
  fi
  if [ ! -f "$MODEL" ]; then
    mkdir -p "$(dirname "$MODEL")"
    # shellcheck disable=SC2086
    "$BUILD/strata-mkmodel" $args -o "$MODEL" >/dev/null
  fi
fi
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "router_bench: model $MODEL, $THREADS thread(s) per replica, CPU: $CPU ($(nproc) cores)"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# start_listening LOG CMD...: runs CMD in the background, waits for its
# "listening on" line; sets $started_pid.
start_listening() {
  local log=$1; shift
  "$@" >"$log" 2>&1 &
  started_pid=$!
  pids+=("$started_pid")
  for _ in $(seq 1 600); do
    [ -f "$log" ] && grep -q "listening on" "$log" && return 0
    kill -0 "$started_pid" 2>/dev/null || { cat "$log"; echo "router_bench: $1 died" >&2; exit 1; }
    sleep 0.1
  done
  echo "router_bench: $* did not start" >&2; exit 1
}
stop_pid() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
replica() {  # replica PORT KV_MEMORY
  start_listening "$tmp/replica-$1.log" "$STRATA" serve -m "$MODEL" --port "$1" -t "$THREADS" \
    --kv-cache-memory "$2" --log-interval 0 --served-model-name bench --max-queue 100000
}
router() {  # router PORT POLICY REPLICA_PORT...
  local port=$1 policy=$2; shift 2
  local reps=()
  for p in "$@"; do reps+=(--replica "http://127.0.0.1:$p"); done
  start_listening "$tmp/router-$port.log" "$STRATA" router -m "$MODEL" --port "$port" \
    --policy "$policy" "${reps[@]}"
}
tmp=$(mktemp -d)

# The multi-turn driver: prints one JSON line of results.
drive() {  # drive URL RATE TAG
  node --input-type=module - "$@" <<'JS'
const [url, rate, tag] = process.argv.slice(2);
const env = process.env;
const S = Number(env.SESSIONS), T = Number(env.TURNS), O = Number(env.OUTPUT_TOKENS);
async function tokens(text) {
  const r = await fetch(`${url}/tokenize`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: text, add_special_tokens: false }) });
  return (await r.json()).count;
}
const words = ['river', 'stone', 'light', 'north', 'table', 'green', 'quiet', 'paper', 'metal', 'cloud'];
let seed = 1;
for (const c of tag) seed = (seed * 31 + c.charCodeAt(0)) >>> 0;
function rnd() { seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0; return seed / 2 ** 32; }
async function textOf(n, prefix) {  // about n tokens
  let t = prefix;
  while (true) {
    const chunk = Array.from({ length: 16 }, () => words[Math.floor(rnd() * words.length)]).join(' ');
    const next = `${t} ${chunk}`;
    if (await tokens(next) > n) return t;
    t = next;
  }
}
const sys = [];
for (let s = 0; s < S; ++s) sys.push(await textOf(Number(env.SYSTEM_TOKENS), `${tag} session ${s}:`));
const user = await textOf(Number(env.USER_TOKENS), 'Tell me more:');
const results = [];
async function turn(messages, s) {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages, max_tokens: O, temperature: 0, ignore_eos: true, stream: true,
      user: `${tag}-session-${s}`,
      stream_options: { include_usage: true } }) });
  let ttft = null, text = '', usage = null, buf = '';
  const dec = new TextDecoder();
  for await (const chunk of res.body) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(6, i); buf = buf.slice(i + 2);
      if (ev === '[DONE]') continue;
      const j = JSON.parse(ev);
      if (j.error) throw new Error(j.error.message);
      for (const c of j.choices ?? []) {
        if (c.delta?.content) { if (ttft === null) ttft = performance.now() - t0; text += c.delta.content; }
      }
      if (j.usage) usage = j.usage;
    }
  }
  results.push({ ttft: ttft ?? performance.now() - t0, end: performance.now(), usage });
  return text;
}
async function session(s) {
  const messages = [{ role: 'system', content: sys[s] }];
  for (let t = 0; t < T; ++t) {
    messages.push({ role: 'user', content: `${user} (${t})` });
    messages.push({ role: 'assistant', content: await turn(messages, s) });
  }
}
const start = performance.now();
const running = [];
let at = 0;
for (let s = 0; s < S; ++s) {
  const wait = at - (performance.now() - start);
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  running.push(session(s));
  at += (-Math.log(1 - rnd()) / Number(rate)) * 1000;
}
await Promise.all(running);
const secs = (performance.now() - start) / 1000;
const ttfts = results.map((r) => r.ttft).sort((a, b) => a - b);
const p = (q) => ttfts[Math.min(ttfts.length - 1, Math.floor(q * ttfts.length))];
const sum = (f) => results.reduce((a, r) => a + f(r), 0);
console.log(JSON.stringify({ rate: Number(rate), requests: results.length,
  mean_ttft_ms: +(sum((r) => r.ttft) / results.length).toFixed(1), p90_ttft_ms: +p(0.9).toFixed(1),
  output_tok_s: +(sum((r) => r.usage.completion_tokens) / secs).toFixed(1),
  cached_fraction: +(sum((r) => r.usage.prompt_tokens_details.cached_tokens) /
                     sum((r) => r.usage.prompt_tokens)).toFixed(4),
  mean_prompt_tokens: Math.round(sum((r) => r.usage.prompt_tokens) / results.length), seconds: +secs.toFixed(1) }));
JS
}
export SESSIONS TURNS SYSTEM_TOKENS USER_TOKENS OUTPUT_TOKENS

# The hot-prefix driver: prints one JSON line (TTFT of the hot requests).
drive_hot() {  # drive_hot URL TAG SHARE
  node --input-type=module - "$@" <<'JS'
const [url, tag, share] = process.argv.slice(2);
const env = process.env;
const N = Number(env.HOT_REQUESTS), rate = Number(env.HOT_RATE), P = Number(env.HOT_PREFIX_TOKENS);
const words = ['river', 'stone', 'light', 'north', 'table', 'green', 'quiet', 'paper', 'metal', 'cloud'];
let seed = 7;  // the hot prefix is the same text in every run
function rnd() { seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0; return seed / 2 ** 32; }
async function count(text) {
  const r = await fetch(`${url}/tokenize`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: text, add_special_tokens: false }) });
  return (await r.json()).count;
}
async function textOf(n, prefix) {
  let t = prefix;
  for (let step = 256; step >= 1; step = Math.floor(step / 4)) {
    while (true) {
      const next = `${t} ${Array.from({ length: step }, () => words[Math.floor(rnd() * 10)]).join(' ')}`;
      if (await count(next) > n) break;
      t = next;
    }
  }
  return t;
}
const hot = await textOf(P, 'The shared document:');
for (const c of tag) seed = (seed * 31 + c.charCodeAt(0)) >>> 0;
const results = [];
async function one(i, isHot) {
  const prompt = isHot ? `${hot} question ${tag} ${i}?` : `${await textOf(P, `cold ${tag} ${i}:`)}?`;
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: 16, temperature: 0, ignore_eos: true, stream: true,
      stream_options: { include_usage: true } }) });
  let ttft = null, usage = null, buf = '';
  const dec = new TextDecoder();
  for await (const chunk of res.body) {
    buf += dec.decode(chunk, { stream: true });
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(6, k); buf = buf.slice(k + 2);
      if (ev === '[DONE]') continue;
      const j = JSON.parse(ev);
      if (j.choices?.some((c) => c.text) && ttft === null) ttft = performance.now() - t0;
      if (j.usage) usage = j.usage;
    }
  }
  results.push({ isHot, ttft: ttft ?? performance.now() - t0, usage });
}
const start = performance.now();
const running = [];
let at = 0;
for (let i = 0; i < N; ++i) {
  const wait = at - (performance.now() - start);
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  running.push(one(i, rnd() < Number(share)));
  at += (-Math.log(1 - rnd()) / rate) * 1000;
}
await Promise.all(running);
const h = results.filter((r) => r.isHot).map((r) => r.ttft).sort((a, b) => a - b);
const sum = (f) => results.reduce((a, r) => a + f(r), 0);
console.log(JSON.stringify({ requests: results.length, hot: h.length,
  hot_mean_ttft_ms: +(h.reduce((a, b) => a + b, 0) / h.length).toFixed(1),
  hot_p90_ttft_ms: +h[Math.min(h.length - 1, Math.floor(0.9 * h.length))].toFixed(1),
  cached_fraction: +(sum((r) => r.usage.prompt_tokens_details.cached_tokens) / sum((r) => r.usage.prompt_tokens)).toFixed(4),
  seconds: +((performance.now() - start) / 1000).toFixed(1) }));
JS
}
export HOT_REQUESTS HOT_RATE HOT_PREFIX_TOKENS

if [[ " $PARTS " == *" multiturn "* ]]; then
  echo "== multi-turn: $SESSIONS sessions x $TURNS turns, system ~$SYSTEM_TOKENS, user ~$USER_TOKENS, output $OUTPUT_TOKENS tokens; KV $KV_MEMORY per replica"
  r1=$PORT_BASE; r2=$((PORT_BASE + 1)); rp=$((PORT_BASE + 2))
  for policy in $POLICIES; do
    replica $r1 "$KV_MEMORY"; p1=$started_pid
    replica $r2 "$KV_MEMORY"; p2=$started_pid
    router $rp "$policy" $r1 $r2; p3=$started_pid
    for rate in $RATES; do
      echo "$policy $(drive "http://127.0.0.1:$rp" "$rate" "$policy-$rate")"
    done
    curl -s "http://127.0.0.1:$rp/metrics" | grep -E '^strata_router_replica_(routed|predicted_cached_tokens|actual_cached_tokens)_total' | sed "s/^/  $policy /"
    stop_pid $p3; stop_pid $p1; stop_pid $p2
  done
  # One replica with both replicas' memory: the cached fraction to reach.
  double=$(numfmt --from=iec-i "${KV_MEMORY%B}" 2>/dev/null || numfmt --from=iec "${KV_MEMORY%B}" 2>/dev/null || echo "")
  if [ -n "$double" ]; then
    replica $r1 "$((double * 2))"; p1=$started_pid
    for rate in $RATES; do
      echo "single-2x-memory $(drive "http://127.0.0.1:$r1" "$rate" "single-$rate")"
    done
    stop_pid $p1
  fi
fi

if [[ " $PARTS " == *" hotprefix "* ]]; then
  echo "== hot prefix: $HOT_REQUESTS requests at $HOT_RATE/s, $HOT_SHARE on one ~$HOT_PREFIX_TOKENS-token prefix, Redis shared"
  command -v redis-server >/dev/null || { echo "router_bench: hotprefix needs redis-server" >&2; exit 1; }
  rport=$((PORT_BASE + 20)); r1=$((PORT_BASE + 21)); r2=$((PORT_BASE + 22)); rp=$((PORT_BASE + 23))
  redis-server --port $rport --save "" --appendonly no >"$tmp/redis.log" 2>&1 &
  pids+=($!); redis_pid=$!
  sleep 0.5
  for p in $r1 $r2; do
    start_listening "$tmp/replica-$p.log" "$STRATA" serve -m "$MODEL" --port "$p" -t "$THREADS" \
      --kv-cache-memory "$KV_MEMORY" --log-interval 0 --served-model-name bench --max-queue 100000 \
      --kv-remote "redis://127.0.0.1:$rport"
    eval "hp_$p=$started_pid"
  done
  router $rp cache-aware $r1 $r2; p3=$started_pid
  echo "hot $(drive_hot "http://127.0.0.1:$rp" hot "$HOT_SHARE")"
  routed() { curl -s "http://127.0.0.1:$rp/metrics" | sed -n "s|^strata_router_replica_routed_total{replica=\"http://127.0.0.1:$1\"} ||p"; }
  a=$(routed $r1); b=$(routed $r2)
  echo "  routed: replica 1 $a, replica 2 $b (smaller/larger $(python3 -c "print(round(min($a,$b)/max($a,$b),3))"))"
  echo "all-hits $(drive_hot "http://127.0.0.1:$rp" hot2 1.0)"
  stop_pid $p3; eval "stop_pid \$hp_$r1; stop_pid \$hp_$r2"; stop_pid $redis_pid
fi

if [[ " $PARTS " == *" overhead "* ]]; then
  # The same single replica straight and behind the router, so the upstream
  # capacity is equal; a model small enough that it is not the bottleneck.
  echo "== router overhead: $OVERHEAD_REQUESTS tiny requests at $OVERHEAD_RPS/s (16 prompt tokens, 1 output token), model $OVERHEAD_MODEL, one replica"
  r1=$((PORT_BASE + 10)); rp=$((PORT_BASE + 12))
  saved_model=$MODEL; MODEL=$OVERHEAD_MODEL
  replica $r1 "$KV_MEMORY"; p1=$started_pid
  router $rp cache-aware $r1; p3=$started_pid
  MODEL=$saved_model
  for target in "direct http://127.0.0.1:$r1" "router http://127.0.0.1:$rp"; do
    set -- $target
    "$STRATA" bench serve --base-url "$2" --dataset-name random --input-len 16 --output-len 1 \
      --num-prompts "$OVERHEAD_REQUESTS" --request-rate "$OVERHEAD_RPS" --seed 1 \
      --metric-percentiles 50,99 --save-result "$tmp/overhead-$1.json" >"$tmp/overhead-$1.txt" 2>&1 ||
      { cat "$tmp/overhead-$1.txt"; exit 1; }
  done
  python3 - "$tmp/overhead-direct.json" "$tmp/overhead-router.json" <<'PY'
import json, sys
d, r = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("p50_e2el_ms", "p99_e2el_ms", "p50_ttft_ms", "p99_ttft_ms"):
    if k in d and k in r:
        print(f"  {k}: direct {d[k]:.2f}  router {r[k]:.2f}  added {r[k] - d[k]:+.2f}")
print(f"  completed: direct {d.get('completed')}  router {r.get('completed')}")
PY
  curl -s "http://127.0.0.1:$rp/metrics" | python3 -c '
import sys
b = []
for line in sys.stdin:
    if line.startswith("strata_router_added_latency_seconds_bucket"):
        le = line.split("le=\"")[1].split("\"")[0]
        b.append((float("inf") if le == "+Inf" else float(le), int(line.split()[-1])))
total = b[-1][1] if b else 0
for q in (0.5, 0.99):
    le = next((x for x, n in b if n >= q * total), float("nan"))
    print(f"  router added latency p{int(q*100)} <= {le*1000:.2f} ms (histogram, {total} requests)")
'
  stop_pid $p3; stop_pid $p1
fi
rm -rf "$tmp"

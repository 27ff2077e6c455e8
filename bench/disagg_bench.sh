#!/usr/bin/env bash
# Disaggregated prefill/decode against one colocated server (issue 15), on
# the same cores:
#   colocated  one `strata serve` with BOTH_THREADS (2) kernel threads;
#   disagg     `strata serve --role prefill -t 1` + `strata serve --role
#              decode -t 1 --prefill-peer ...` (--remote-prefill auto: the
#              decode worker decides from its measured rates).
# Load, per setup: STREAMS (8) streams decoding (each a loop of completions of
# STREAM_PROMPT prompt and STREAM_OUTPUT output tokens) while LONG_COUNT
# prompts of LONG_TOKENS unique tokens arrive LONG_INTERVAL seconds apart.
# Reports the streams' p50/p99 inter-token latency (ITL) while long prompts
# are in flight, the streams' idle ITL (the same streams, no long prompts),
# the long prompts' TTFT, and for disagg the KV transfer figures from the
# decode worker's /metrics (bytes, channel bandwidth = bytes / payload read
# seconds, local vs remote decisions).
#
#   bench/disagg_bench.sh [BUILD_DIR]
#   env: MODEL=path.gguf (default: the TinyLlama-1.1B shape, Q8_0, ctx 8192,
#        made with strata-mkmodel), STREAMS=8 STREAM_PROMPT=64 STREAM_OUTPUT=64
#        LONG_TOKENS=4000 LONG_COUNT=4 LONG_INTERVAL=30 IDLE_SECONDS=10
#        BOTH_THREADS=2 KV_MEMORY=1GiB CHUNK_TOKENS=256 PORT_BASE=19500
#        SETUPS="colocated disagg" VOCAB=32000 (token ids of the random prompts stay below it)
# A reduced run: LONG_TOKENS=1000 LONG_COUNT=3 LONG_INTERVAL=8 IDLE_SECONDS=5.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
STRATA=$BUILD/strata
export STREAMS=${STREAMS:-8} STREAM_PROMPT=${STREAM_PROMPT:-64} STREAM_OUTPUT=${STREAM_OUTPUT:-64}
export LONG_TOKENS=${LONG_TOKENS:-4000} LONG_COUNT=${LONG_COUNT:-4} LONG_INTERVAL=${LONG_INTERVAL:-30}
export IDLE_SECONDS=${IDLE_SECONDS:-10}
BOTH_THREADS=${BOTH_THREADS:-2}
KV_MEMORY=${KV_MEMORY:-1GiB}
CHUNK_TOKENS=${CHUNK_TOKENS:-256}
PORT_BASE=${PORT_BASE:-19500}
SETUPS=${SETUPS:-colocated disagg}
MODEL=${MODEL:-$BUILD/models/bench/1.1b-q8_0-ctx8k.gguf}
if [ ! -f "$MODEL" ]; then
  mkdir -p "$(dirname "$MODEL")"
  "$BUILD/strata-mkmodel" --arch llama --layers 22 --hidden 2048 --heads 32 --kv-heads 4 \
    --ffn 5632 --vocab 32000 --ctx 8192 --type q8_0 --seed 1 -o "$MODEL" >/dev/null
fi
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "disagg_bench: model $MODEL, CPU: $CPU ($(nproc) cores)"
echo "  $STREAMS streams x ($STREAM_PROMPT prompt, $STREAM_OUTPUT output tokens), $LONG_COUNT long prompts of $LONG_TOKENS tokens every ${LONG_INTERVAL}s"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
tmp=$(mktemp -d)

start_listening() {  # LOG CMD...: background CMD, wait for its "listening on http" line
  local log=$1; shift
  "$@" >"$log" 2>&1 &
  started_pid=$!
  pids+=("$started_pid")
  for _ in $(seq 1 1200); do
    grep -q "listening on http" "$log" 2>/dev/null && return 0
    kill -0 "$started_pid" 2>/dev/null || { cat "$log"; echo "disagg_bench: $1 died" >&2; exit 1; }
    sleep 0.1
  done
  echo "disagg_bench: $* did not start" >&2; exit 1
}
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
common=(-m "$MODEL" --log-interval 0 --served-model-name bench --kv-cache-memory "$KV_MEMORY"
  --kv-chunk-tokens "$CHUNK_TOKENS" --max-queue 100000)

# The load driver: prints one JSON line.
drive() {  # drive URL
  node --input-type=module - "$@" <<'JS'
const [url] = process.argv.slice(2);
const E = process.env;
const S = Number(E.STREAMS), SP = Number(E.STREAM_PROMPT), SO = Number(E.STREAM_OUTPUT);
const LT = Number(E.LONG_TOKENS), LC = Number(E.LONG_COUNT), LI = Number(E.LONG_INTERVAL);
let seed = 12345;
const rnd = () => { seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0; return seed; };
const V = Number(E.VOCAB ?? 32000);
const prompt = (n) => Array.from({ length: n }, () => 100 + (rnd() % (V - 200)));
async function complete(body, onToken) {
  const res = await fetch(`${url}/v1/completions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'bench', temperature: 0, ignore_eos: true, stream: true, ...body }) });
  const dec = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i); buf = buf.slice(i + 2);
      if (ev.startsWith('data: {')) onToken(performance.now());
    }
  }
}
const q = (a, p) => { if (!a.length) return NaN; const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
// Phase 1: idle streams. Phase 2: the same streams while long prompts arrive.
let phase = 'idle', stop = false;
const itl = { idle: [], load: [] };
const streams = Array.from({ length: S }, async () => {
  while (!stop) {
    let last = null;
    const p = phase;
    await complete({ prompt: prompt(SP), max_tokens: SO }, (t) => {
      if (last !== null && phase === p) itl[p].push(t - last);
      last = t;
    });
  }
});
await new Promise((r) => setTimeout(r, Number(E.IDLE_SECONDS) * 1000));
phase = 'load';
const ttft = [];
const longs = [];
for (let k = 0; k < LC; ++k) {
  const t0 = performance.now();
  let first = null;
  longs.push(complete({ prompt: prompt(LT), max_tokens: 1 }, (t) => { if (first === null) first = t; })
    .then(() => ttft.push(first - t0)));
  if (k + 1 < LC) await new Promise((r) => setTimeout(r, LI * 1000));
}
await Promise.all(longs);
stop = true;
await Promise.all(streams);
console.log(JSON.stringify({ idle_p50: q(itl.idle, 0.5), idle_p99: q(itl.idle, 0.99),
  load_p50: q(itl.load, 0.5), load_p99: q(itl.load, 0.99), n_itl: itl.load.length,
  ttft_mean: ttft.reduce((a, b) => a + b, 0) / ttft.length, ttft_max: Math.max(...ttft) }));
JS
}
metric() {  # metric URL NAME [LABEL]: the first sample's value
  curl -s "$1/metrics" | grep "^$2[{ ]" | grep -- "${3:-}" | head -1 | awk '{print $2}'
}

for setup in $SETUPS; do
  case $setup in
    colocated)
      start_listening "$tmp/both.log" "$STRATA" serve "${common[@]}" --port "$PORT_BASE" -t "$BOTH_THREADS"
      url=http://127.0.0.1:$PORT_BASE ;;
    disagg)
      start_listening "$tmp/prefill.log" "$STRATA" serve "${common[@]}" --port $((PORT_BASE + 1)) \
        -t 1 --role prefill --kv-transfer-port $((PORT_BASE + 2))
      start_listening "$tmp/decode.log" "$STRATA" serve "${common[@]}" --port $((PORT_BASE + 3)) \
        -t 1 --role decode --prefill-peer 127.0.0.1:$((PORT_BASE + 2)) --remote-prefill auto
      url=http://127.0.0.1:$((PORT_BASE + 3)) ;;
    *) echo "disagg_bench: unknown setup $setup" >&2; exit 1 ;;
  esac
  result=$(drive "$url")
  echo "$setup $result"
  if [ "$setup" = disagg ]; then
    bytes=$(metric "$url" 'strata:kv_transfer_bytes_total' 'received')
    read_s=$(metric "$url" 'strata:kv_transfer_read_seconds_total')
    remote=$(metric "$url" 'strata:prefill_decisions_total' 'remote')
    local_=$(metric "$url" 'strata:prefill_decisions_total' 'local')
    xfer_sum=$(metric "$url" 'strata:kv_transfer_seconds_sum')
    faults=$(curl -s "$url/metrics" | sed -n 's/^strata:kv_transfer_faults_total{.*kind="\([a-z]*\)"} \([0-9]*\)$/\1=\2/p' | tr '\n' ' ')
    awk -v b="$bytes" -v r="$read_s" -v x="$xfer_sum" -v rem="$remote" -v loc="$local_" -v f="$faults" 'BEGIN {
      printf "disagg kv: %.1f MB received, channel %.0f MB/s (bytes / payload read time), remote prefill wall %.2f s total, decisions remote %d local %d, faults %s\n",
        b / 1e6, (r > 0 ? b / r / 1e6 : 0), x, rem, loc, f }'
  fi
  stop_all
done

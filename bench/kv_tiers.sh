#!/usr/bin/env bash
# Tiered KV cache benchmark: 8 documents of 4,000 tokens, 20 questions each,
# interleaved (d0 d1 .. d7 d0 d1 ..), one request at a time, against `strata
# serve` whose KV pool holds only two documents, so every question's document
# was evicted from the pool since it was last asked about. Compares TTFT with
#   off      no tiers: every question recomputes its document
#   ram      --kv-cpu-bytes
#   ramdisk  --kv-cpu-bytes + --kv-disk-dir (fresh directory)
#   restart  a new server on the directory ramdisk filled, disk only
#   replica  server A fills Redis (one pass over the documents), then server B
#            (fresh pool, --kv-remote only) runs the benchmark
# and reports, per configuration: mean and p99 TTFT, the prompt tokens served
# by the pool and by each tier (from /metrics), and each tier's load bandwidth
# (payload bytes read / time in get). Prints the KV bytes per token.
#
#   bench/kv_tiers.sh [BUILD_DIR]
#   env: MODEL=path.gguf (default: the TinyLlama-1.1B shape, Q8_0, made with
#        strata-mkmodel as scripts/bench.sh does), DOCS=8 QUESTIONS=20
#        DOC_TOKENS=4000 QUESTION_TOKENS=16 OUTPUT_TOKENS=16 THREADS=2
#        CONFIGS="off ram ramdisk restart replica" CHUNK_TOKENS=256
#
# Needs `strata bench serve` (src/loadgen) and, for `replica`, redis-server.
# Expect a long run on 2 cores with the 1.1B model (each cold 4,000-token
# prefill takes tens of seconds; `off` recomputes all DOCS x QUESTIONS).
# Smoke check: MODEL=build/models/llama-f32-peaky.gguf DOCS=3 QUESTIONS=2
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DOCS=${DOCS:-8}
QUESTIONS=${QUESTIONS:-20}
DOC_TOKENS=${DOC_TOKENS:-4000}
QUESTION_TOKENS=${QUESTION_TOKENS:-16}
OUTPUT_TOKENS=${OUTPUT_TOKENS:-16}
THREADS=${THREADS:-2}
CHUNK_TOKENS=${CHUNK_TOKENS:-256}
CONFIGS=${CONFIGS:-off ram ramdisk restart replica}
BLOCK=16
STRATA=$BUILD/strata

if ! "$STRATA" bench serve --help >/dev/null 2>&1; then
  echo "kv_tiers: '$STRATA bench serve' is missing (src/loadgen); build it first" >&2
  exit 2
fi
if [ -z "${MODEL:-}" ]; then
  MODEL=$BUILD/models/bench/1.1b-q8_0.gguf
  if [ ! -f "$MODEL" ]; then
    mkdir -p "$(dirname "$MODEL")"
    "$BUILD/strata-mkmodel" --arch llama --layers 22 --hidden 2048 --heads 32 --kv-heads 4 \
      --ffn 5632 --vocab 32000 --ctx 2048 --type q8_0 --seed 1 -o "$MODEL" >/dev/null
  fi
fi

# KV bytes per token = layers x 2 (K, V) x kv_heads x head_dim x 2 (fp16).
read -r LAYERS KV_DIM VOCAB < <(python3 - "$MODEL" <<'PY'
import struct, sys
# Minimal GGUF metadata reader: block_count, head_count(_kv), embedding_length, key_length.
f = open(sys.argv[1], 'rb'); f.read(8)
nt, nkv = struct.unpack('<QQ', f.read(16))
def s(): n, = struct.unpack('<Q', f.read(8)); return f.read(n).decode()
sizes = {0:1,1:1,2:2,3:2,4:4,5:4,6:4,7:1,10:8,11:8,12:8}
def val(t):
    if t == 8: return s()
    if t == 9:
        et, n = struct.unpack('<IQ', f.read(12)); return [val(et) for _ in range(n)]
    b = f.read(sizes[t]); fmt = {0:'B',1:'b',2:'H',3:'h',4:'I',5:'i',6:'f',7:'?',10:'Q',11:'q',12:'d'}[t]
    return struct.unpack('<' + fmt, b)[0]
kv = {}
for _ in range(nkv):
    k = s(); t, = struct.unpack('<I', f.read(4)); kv[k] = val(t)
arch = kv['general.architecture']
layers = kv[f'{arch}.block_count']; heads = kv[f'{arch}.attention.head_count']
kvh = kv.get(f'{arch}.attention.head_count_kv', heads)
hd = kv.get(f'{arch}.attention.key_length', kv[f'{arch}.embedding_length'] // heads)
vocab = len(kv['tokenizer.ggml.tokens']) if 'tokenizer.ggml.tokens' in kv else kv.get(f'{arch}.vocab_size', 32000)
print(layers, kvh * hd, vocab)
PY
)
BYTES_PER_TOKEN=$((LAYERS * 2 * KV_DIM * 2))
# The pool: two documents (+ question + output), in whole blocks.
SEQ_TOKENS=$((DOC_TOKENS + QUESTION_TOKENS + OUTPUT_TOKENS))
POOL_BLOCKS=$((2 * ((SEQ_TOKENS + BLOCK - 1) / BLOCK) + 2))
POOL_BYTES=$((POOL_BLOCKS * BLOCK * BYTES_PER_TOKEN))
DOC_BYTES=$((DOCS * SEQ_TOKENS * BYTES_PER_TOKEN))
MAX_LEN=$((SEQ_TOKENS + 64))
WORK=$(mktemp -d)
DISK_DIR=$WORK/disk
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "model $MODEL: $LAYERS layers, kv_dim $KV_DIM -> $BYTES_PER_TOKEN bytes of KV per token"
echo "pool: $POOL_BLOCKS blocks ($POOL_BYTES bytes, two documents); $DOCS documents x $QUESTIONS questions"

# start_server NAME ARGS... : sets URL, PID
start_server() {
  local name=$1; shift
  local log=$WORK/$name.log
  "$STRATA" serve -m "$MODEL" --port 0 --log-interval 0 -t "$THREADS" \
    --kv-cache-memory "$POOL_BYTES" --max-model-len "$MAX_LEN" --allow-long-max-model-len \
    --served-model-name kv \
    --max-prefill-tokens 0 --kv-chunk-tokens "$CHUNK_TOKENS" "$@" >"$log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
  local port=""
  for _ in $(seq 1 600); do
    port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$port" ] && break
    kill -0 "$PID" 2>/dev/null || { cat "$log"; echo "kv_tiers: $name died" >&2; exit 1; }
    sleep 0.1
  done
  URL=http://127.0.0.1:$port
}
stop_server() { kill -TERM "$1"; wait "$1" 2>/dev/null || true; }

# run_bench NAME: the benchmark against $URL, result in $WORK/NAME.json + .metrics
run_bench() {
  local name=$1 prompts_per_group=${2:-$QUESTIONS}
  "$STRATA" bench serve --base-url "$URL" --model kv --dataset-name shared-prefix \
    --sp-num-groups "$DOCS" --sp-prefix-len "$DOC_TOKENS" --sp-suffix-len "$QUESTION_TOKENS" \
    --sp-num-prompts-per-group "$prompts_per_group" --output-len "$OUTPUT_TOKENS" \
    --vocab-size "$VOCAB" --num-warmups 0 --max-concurrency 1 --seed 7 --temperature 0 --metric-percentiles 50,99 \
    --save-result "$WORK/$name.json" >"$WORK/$name.out" 2>&1 || { cat "$WORK/$name.out"; exit 1; }
  curl -s "$URL/metrics" >"$WORK/$name.metrics"
}

REDIS_PID=""
for config in $CONFIGS; do
  case $config in
    off) start_server off; run_bench off; stop_server "$PID" ;;
    ram) start_server ram --kv-cpu-bytes "$DOC_BYTES"; run_bench ram; stop_server "$PID" ;;
    ramdisk)
      start_server ramdisk --kv-cpu-bytes "$DOC_BYTES" --kv-disk-dir "$DISK_DIR"
      run_bench ramdisk; stop_server "$PID" ;;
    restart)
      if [ ! -d "$DISK_DIR" ]; then  # fill the directory first
        start_server fill --kv-disk-dir "$DISK_DIR"; run_bench fill 1; stop_server "$PID"
      fi
      start_server restart --kv-disk-dir "$DISK_DIR"; run_bench restart; stop_server "$PID" ;;
    replica)
      command -v redis-server >/dev/null || { echo "replica: no redis-server, skipped"; continue; }
      rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
      redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
        --maxmemory 0 >"$WORK/redis.log" 2>&1 &
      REDIS_PID=$!; PIDS+=("$REDIS_PID"); sleep 0.5
      start_server replica_a --kv-remote "redis://127.0.0.1:$rport"
      run_bench replica_fill 1; a=$PID
      start_server replica --kv-remote "redis://127.0.0.1:$rport"
      run_bench replica; stop_server "$PID"; stop_server "$a"; kill "$REDIS_PID" ;;
    *) echo "unknown config $config" >&2; exit 2 ;;
  esac
done

python3 - "$WORK" "$BYTES_PER_TOKEN" $CONFIGS <<'PY'
import json, os, re, sys
work, bpt, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def metrics(path):
    out = {}
    for line in open(path):
        m = re.match(r'^strata:(\w+)\{([^}]*)\} (\S+)$', line.strip())
        if not m: continue
        tier = re.search(r'tier="(\w+)"', m.group(2))
        if tier: out[(m.group(1), tier.group(1))] = float(m.group(3))
    return out
def plain(path, name):
    for line in open(path):
        m = re.match(r'^strata:' + name + r'(\{[^}]*\})? (\S+)$', line.strip())
        if m: return float(m.group(2))
    return 0.0
print(f"\nKV bytes per token: {bpt}")
print(f"{'config':<9} {'mean TTFT ms':>13} {'p99 TTFT ms':>12} {'prompt tok':>11}  served from (fraction of prompt tokens)        load bandwidth MB/s")
for c in configs:
    p = os.path.join(work, c + '.json')
    if not os.path.exists(p): continue
    r = json.load(open(p)); m = metrics(os.path.join(work, c + '.metrics'))
    prompt = plain(os.path.join(work, c + '.metrics'), 'prompt_tokens_total') or 1
    served = ' '.join(f"{t}={m.get(('prompt_tokens_cached_total', t), 0) / prompt:.2f}"
                      for t in ('pool', 'ram', 'disk', 'redis') if ('prompt_tokens_cached_total', t) in m)
    bw = ' '.join(f"{t}={m[('kv_tier_read_bytes_total', t)] / m[('kv_tier_get_latency_seconds_sum', t)] / 1e6:.0f}"
                  for t in ('ram', 'disk', 'redis')
                  if m.get(('kv_tier_get_latency_seconds_sum', t), 0) > 0
                  and m.get(('kv_tier_read_bytes_total', t), 0) > 0)
    print(f"{c:<9} {r.get('mean_ttft_ms', 0):13.1f} {r.get('p99_ttft_ms', 0):12.1f} {int(prompt):11d}  {served or '-':<45} {bw or '-'}")
PY

#!/bin/sh
# `strata bench serve` against a real `strata serve`: starts the server on a
# free port with the small peaky model, runs the load generator on the
# random, shared-prefix and multi-turn datasets (a few requests each, with
# an API key), and checks the saved JSON (counts, token lengths, vLLM field
# names) and the SVG plot with node. Takes a few seconds.
# Usage: tests/e2e/run_bench_serve.sh BUILD_DIR
set -u
build=${1:?usage: run_bench_serve.sh BUILD_DIR}
model="$build/models/llama-f32-peaky.gguf"
if [ ! -f "$model" ]; then echo "run_bench_serve: no $model (run make models)"; exit 1; fi
tmp=$(mktemp -d)
key="bench-$$-key"
"$build/strata" serve -m "$model" --port 0 --api-key "$key" --kv-cache-memory 64MiB \
  --log-interval 0 -t 2 >"$tmp/server.log" 2>&1 &
pid=$!
cleanup() { kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
port=""
for _ in $(seq 1 200); do
  port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$tmp/server.log" | head -1)
  [ -n "$port" ] && break
  if ! kill -0 $pid 2>/dev/null; then cat "$tmp/server.log"; echo "run_bench_serve: server died"; exit 1; fi
  sleep 0.1
done
[ -n "$port" ] || { cat "$tmp/server.log"; echo "run_bench_serve: server did not start"; exit 1; }
url="http://127.0.0.1:$port"
bench() { "$build/strata" bench serve --base-url "$url" --api-key "$key" "$@"; }
rc=0
bench --dataset-name random --num-prompts 8 --input-len 24 --output-len 12 --max-concurrency 4 \
  --seed 3 --save-result "$tmp/random.json" --plot "$tmp/random.svg" >"$tmp/random.txt" || rc=1
grep -q "Serving Benchmark Result" "$tmp/random.txt" || { echo "no report table"; rc=1; }
bench --dataset-name shared-prefix --sp-num-groups 2 --sp-prefix-len 32 --sp-suffix-len 4 \
  --sp-num-prompts-per-group 3 --output-len 6 --request-rate 100 --vocab-size 512 \
  --sweep-concurrency 1,3 --save-result "$tmp/sp.json" --plot "$tmp/sp.svg" >/dev/null || rc=1
bench --dataset-name multi-turn --mt-num-sessions 2 --mt-turns 2 --mt-user-len 6 --output-len 5 \
  --slo-ttft-ms 60000 --save-result "$tmp/mt.json" >/dev/null || rc=1
# A wrong key fails the warm-up with the server's message and exit code 1.
if "$build/strata" bench serve --base-url "$url" --api-key wrong --model x --vocab-size 512 \
    --num-prompts 1 >/dev/null 2>"$tmp/err.txt"; then
  echo "run_bench_serve: a wrong api key did not fail"; rc=1
fi
grep -q "warm-up request failed: HTTP 401" "$tmp/err.txt" || { cat "$tmp/err.txt"; rc=1; }
[ $rc -eq 0 ] || { echo "run_bench_serve: a run failed"; tail -20 "$tmp/server.log"; exit 1; }
node - "$tmp" <<'JS' || exit 1
const fs = require('node:fs');
const dir = process.argv[2];
const read = (f) => JSON.parse(fs.readFileSync(`${dir}/${f}`, 'utf8'));
const fail = (m) => { console.error(`run_bench_serve: ${m}`); process.exit(1); };
const check = (c, m) => { if (!c) fail(m); };
const r = read('random.json');
check(r.completed === 8 && r.failed === 0, `random: completed ${r.completed} failed ${r.failed}`);
check(r.model_id === 'llama-f32-peaky', `model_id ${r.model_id}`);
check(r.vocab_size === 512, `vocab_size probed as ${r.vocab_size}`);
check(r.input_lens.every((n) => n === 24), `input_lens ${r.input_lens}`);
check(r.output_lens.every((n) => n === 12), `output_lens ${r.output_lens}`);
check(r.total_output_tokens === 96, `total_output_tokens ${r.total_output_tokens}`);
check(r.itls.every((l) => l.length === 11), 'one ITL per token after the first');
for (const k of ['duration', 'request_throughput', 'output_throughput', 'total_token_throughput',
  'mean_ttft_ms', 'median_ttft_ms', 'std_ttft_ms', 'p99_ttft_ms', 'mean_tpot_ms', 'p90_tpot_ms',
  'mean_itl_ms', 'p99_itl_ms', 'mean_e2el_ms', 'ttfts', 'errors']) check(k in r, `missing ${k}`);
check(r.mean_ttft_ms > 0 && r.mean_e2el_ms >= r.mean_ttft_ms, 'latencies');
check(r.max_concurrency === 4 && r.max_concurrent_requests <= 4, 'concurrency cap');
const sp = read('sp.json');
check(sp.runs.length === 2 && sp.runs.every((x) => x.completed === 6 && x.failed === 0),
  'shared-prefix sweep');
check(sp.runs[0].input_lens.every((n) => n === 36), `sp input_lens ${sp.runs[0].input_lens}`);
const mt = read('mt.json');
check(mt.completed === 4 && mt.failed === 0, `multi-turn completed ${mt.completed}`);
check(mt.input_lens[1] > mt.input_lens[0] + 5, 'turn 2 carries the history');
check(mt.request_goodput > 0, 'goodput');
for (const f of ['random.svg', 'sp.svg']) {
  const svg = fs.readFileSync(`${dir}/${f}`, 'utf8');
  check(svg.includes('<svg') && svg.trimEnd().endsWith('</svg>'), `${f} is not an SVG`);
  check(svg.includes('TTFT CDF') && svg.includes('class="series"'), `${f} has no series`);
}
check(fs.readFileSync(`${dir}/sp.svg`, 'utf8').includes('vs concurrency'), 'sweep chart');
console.log('run_bench_serve: ok');
JS

#!/bin/sh
# Batch-1 decode with and without a grammar (issue 18): `strata serve` on the
# TinyLlama-1.1B shape in Q8_0 (random weights), one request at a time,
# free text (ignore_eos) against a schema-heavy JSON Schema (fixed keys,
# enums, bounded integers: much of it forced, so jump-forward applies).
# Reports output tokens per second of decode (first streamed token to the
# last), the median of RUNS requests each.
# Usage: bench/structured_decode.sh [BUILD_DIR]   env: MODEL, RUNS (3), MAX_TOKENS (96), THREADS (2)
set -eu
build=${1:-build}
runs=${RUNS:-3}
max_tokens=${MAX_TOKENS:-96}
threads=${THREADS:-2}
model=${MODEL:-$build/models/bench/1.1b-q8_0.gguf}
if [ ! -f "$model" ]; then
  mkdir -p "$(dirname "$model")"
  "$build/strata-mkmodel" --arch llama --layers 22 --hidden 2048 --heads 32 --kv-heads 4 \
    --ffn 5632 --vocab 32000 --ctx 2048 --type q8_0 --seed 1 -o "$model" >/dev/null
fi
log=$(mktemp)
"$build/strata" serve -m "$model" --port 0 --served-model-name bench -t "$threads" \
  --log-interval 0 >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log"' EXIT
port=""
for _ in $(seq 1 600); do
  port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$log" | head -1)
  [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), threads $threads"
PORT=$port RUNS=$runs MAX_TOKENS=$max_tokens node --input-type=module -e '
const url = `http://127.0.0.1:${process.env.PORT}/v1/completions`;
const runs = Number(process.env.RUNS), maxTokens = Number(process.env.MAX_TOKENS);
const item = { type: "object", additionalProperties: false,
  properties: { status: { enum: ["active", "inactive", "pending"] },
    priority: { type: "integer", minimum: 1, maximum: 5 },
    category: { enum: ["hardware", "software", "network", "facilities"] },
    verified: { type: "boolean" } },
  required: ["status", "priority", "category", "verified"] };
const schema = { type: "object", additionalProperties: false,
  properties: { ticket_identifier: { type: "integer", minimum: 1000, maximum: 9999 },
    primary_assignment: item, secondary_assignment: item,
    escalation_level: { enum: ["none", "team_lead", "manager", "director"] } },
  required: ["ticket_identifier", "primary_assignment", "secondary_assignment", "escalation_level"] };
async function one(extra, seed) {
  const body = { model: "bench", prompt: "Ticket:", max_tokens: maxTokens, temperature: 1, seed,
    stream: true, stream_options: { include_usage: true }, ...extra };
  const res = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body) });
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let first = 0, last = 0, tokens = 0, buf = "", text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, i); buf = buf.slice(i + 2);
      if (!ev.startsWith("data: ") || ev === "data: [DONE]") continue;
      const j = JSON.parse(ev.slice(6));
      if (j.usage) tokens = j.usage.completion_tokens;
      if (j.choices?.[0]?.text) { const t = performance.now(); if (!first) first = t; last = t; text += j.choices[0].text; }
    }
  }
  return { tokens, seconds: (last - first) / 1000, text };
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
await one({ ignore_eos: true, max_tokens: 8 }, 99);  // warm-up
for (const [name, extra] of [["free text", { ignore_eos: true }], ["json schema", { guided_json: schema }]]) {
  const rates = [], counts = [];
  for (let r = 0; r < runs; ++r) {
    const o = await one(extra, r + 1);
    // The first token is not timed (it comes with the prefill).
    rates.push((o.tokens - 1) / o.seconds); counts.push(o.tokens);
    if (name === "json schema" && r === 0) console.log(`sample: ${o.text}`);
  }
  console.log(`${name}: ${median(rates).toFixed(2)} output tokens/s (median of ${runs}; tokens ${counts.join(",")})`);
}
'

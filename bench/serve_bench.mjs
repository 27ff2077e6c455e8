// Serving benchmark (issue 4): HTTP must not be the bottleneck.
// Starts `strata serve`, drives it with C concurrent streaming clients
// (token-id prompts of --input-len random ids, --output-len tokens each,
// greedy, EOS ignored), then runs `strata bench throughput` on the same
// workload in-process, and prints both output tokens/s, their ratio, and the
// server's TTFT and inter-token latency p50/p99 as the clients saw them.
//
// Usage: node bench/serve_bench.mjs --bin build/strata --model M.gguf
//          [--clients 16] [--num-prompts 16] [--input-len 256] [--output-len 128]
//          [--threads 2] [--json]
// The workload is the TinyLlama-1.1B shape in Q8_0 (bench/serving_core.sh
// writes one): 16 clients, 256 in, 128 out; the target is a ratio >= 0.90.
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(new URL('../oracle/package.json', import.meta.url));
const { gguf } = require('@huggingface/gguf');

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : true]);
  return acc;
}, []));
const bin = args.bin ?? 'build/strata';
const modelPath = args.model;
if (!modelPath) { console.error('usage: serve_bench.mjs --model M.gguf [--bin build/strata]'); process.exit(2); }
const clients = Number(args.clients ?? 16);
const numPrompts = Number(args['num-prompts'] ?? clients);
const inputLen = Number(args['input-len'] ?? 256);
const outputLen = Number(args['output-len'] ?? 128);
const threads = String(args.threads ?? 2);

const { metadata } = await gguf(modelPath, { allowLocalFile: true });
const vocab = metadata['tokenizer.ggml.tokens'].length;

// The LCG of `strata bench throughput`: ids in [3, vocab).
function promptIds(seed) {
  let state = 12345n + BigInt(seed) * 7919n;
  const next = () => {
    state = (state * 1103515245n + 12345n) % 2147483648n;
    return Math.floor(3 + (Number(state) / 2147483648) * (vocab - 3));
  };
  return Array.from({ length: inputLen }, next);
}

const pct = (xs, q) => {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round(q * (s.length - 1)))];
};

async function runServer() {
  const proc = spawn(bin, ['serve', '-m', modelPath, '--port', '0', '--log-interval', '0',
    '-t', threads, '--max-model-len', String(inputLen + outputLen + 16), '--allow-long-max-model-len'],
  { stdio: ['ignore', 'ignore', 'pipe'] });
  const url = await new Promise((resolve, reject) => {
    let err = '';
    proc.stderr.on('data', (d) => {
      err += d;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(err);
      if (m) resolve(`http://127.0.0.1:${m[1]}`);
    });
    proc.on('exit', (c) => reject(new Error(`server exited ${c}: ${err}`)));
  });
  return { proc, url };
}

async function oneRequest(url, prompt, ttfts, itls) {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: outputLen, temperature: 0, ignore_eos: true,
      stream: true, stream_options: { include_usage: true } }),
  });
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let last = -1;
  let tokens = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!frame.startsWith('data: ') || frame === 'data: [DONE]') continue;
      const j = JSON.parse(frame.slice(6));
      if (j.usage && j.choices.length === 0) { tokens = j.usage.completion_tokens; continue; }
      const t = performance.now();
      if (last < 0) ttfts.push((t - t0) / 1000); else itls.push((t - last) / 1000);
      last = t;
    }
  }
  return tokens;
}

const { proc, url } = await runServer();
const ttfts = [];
const itls = [];
let next = 0;
let outputTokens = 0;
const start = performance.now();
await Promise.all(Array.from({ length: clients }, async () => {
  while (next < numPrompts) {
    const i = next++;
    const n = await oneRequest(url, promptIds(i), ttfts, itls);
    outputTokens += n;
  }
}));
const wall = (performance.now() - start) / 1000;
proc.kill('SIGTERM');
await new Promise((r) => proc.on('exit', r));

const offline = JSON.parse(execFileSync(bin, ['bench', 'throughput', '-m', modelPath,
  '--num-prompts', String(numPrompts), '--input-len', String(inputLen), '--output-len', String(outputLen),
  '--max-concurrency', String(clients), '-t', threads, '--json']).toString().trim().split('\n').pop());

const result = {
  model: modelPath, clients, num_prompts: numPrompts, input_len: inputLen, output_len: outputLen,
  server_output_tok_s: outputTokens / wall, offline_output_tok_s: offline.output_tok_s,
  ratio: outputTokens / wall / offline.output_tok_s,
  ttft_p50_s: pct(ttfts, 0.5), ttft_p99_s: pct(ttfts, 0.99),
  itl_p50_s: pct(itls, 0.5), itl_p99_s: pct(itls, 0.99),
  offline_ttft_p50_s: offline.ttft_median_s, offline_itl_p50_s: offline.itl_median_s,
};
if (args.json) {
  console.log(JSON.stringify(result));
} else {
  console.log(`server : ${result.server_output_tok_s.toFixed(2)} output tok/s  ` +
              `(TTFT p50 ${result.ttft_p50_s.toFixed(3)} s p99 ${result.ttft_p99_s.toFixed(3)} s, ` +
              `ITL p50 ${(1000 * result.itl_p50_s).toFixed(1)} ms p99 ${(1000 * result.itl_p99_s).toFixed(1)} ms)`);
  console.log(`offline: ${result.offline_output_tok_s.toFixed(2)} output tok/s (strata bench throughput)`);
  console.log(`ratio  : ${result.ratio.toFixed(3)} (target >= 0.90)`);
}

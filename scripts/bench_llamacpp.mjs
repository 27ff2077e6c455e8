// Side-by-side reference timings from llama.cpp (the prebuilt CPU build that
// node-llama-cpp@3.21.1 ships) on a GGUF file: prefill of a P-token prompt and
// decode of G tokens, single sequence, T threads; medians of R runs.
//
//   node scripts/bench_llamacpp.mjs MODEL.gguf [--prompt 512] [--gen 128] [--threads 2] [--reps 3]
//
// Prints one JSON line: {"engine":"llama.cpp","prefill_tok_s":..,"decode_tok_s":..}.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'oracle', 'package.json'));
const { getLlama } = await import(require.resolve('node-llama-cpp'));

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf('--' + name);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const modelPath = path.resolve(args[0]);
const prompt = opt('prompt', 512), gen = opt('gen', 128), threads = opt('threads', 2);
const reps = opt('reps', 3);

const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({
  contextSize: prompt + gen + 16, batchSize: prompt, threads: { ideal: threads, min: threads },
  sequences: 1,
  // Dispatch each batch at once: the default waits for the next event-loop
  // cycle, which adds latency that is node's, not llama.cpp's.
  batching: { dispatchSchedule: (dispatch) => dispatch() },
});
const seq = context.getSequence();
const embd = model.fileInfo.fullTensorInfo?.find((t) => t.name === "token_embd.weight");
const nVocab = Number(embd?.dimensions?.[1] ?? model.fileInfo.metadata.tokenizer.ggml.tokens.length);

// A fixed pseudo-random prompt (no tokenizer involved): ids in [3, vocab).
let state = 12345;
const rand = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
const tokens = Array.from({ length: prompt }, () => 3 + Math.floor(rand() * (nVocab - 3)));

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const prefill = [], decode = [];
for (let r = 0; r < reps; r++) {
  await seq.clearHistory();
  let t0 = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(tokens);
  prefill.push(prompt / ((performance.now() - t0) / 1000));
  // Decode: llama.cpp's own generation loop (greedy), so each step is one
  // native decode + sampling with no JS scheduling in between.
  t0 = performance.now();
  let n = 0;
  for await (const _ of seq.evaluate([3 + Math.floor(rand() * (nVocab - 3))], { temperature: 0 })) {
    if (++n >= gen) break;
  }
  decode.push(gen / ((performance.now() - t0) / 1000));
}
console.log(JSON.stringify({
  engine: 'llama.cpp', model: path.basename(modelPath), threads, prompt, gen, reps,
  prefill_tok_s: median(prefill), decode_tok_s: median(decode), prefill_runs: prefill,
  decode_runs: decode,
}));
await context.dispose();
await model.dispose();

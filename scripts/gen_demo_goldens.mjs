// Third-party goldens for the bundled demo model (models/default.gguf and
// models/demo-tokenizer.json, written by tools/train_demo_model.py):
//
//   node scripts/gen_demo_goldens.mjs
//
// Reads tests/data/demo/heldout.txt and tests/data/demo/reference.json (the
// PyTorch references) and writes into tests/data/demo/:
//   goldens.json        - Hugging Face tokenizers@0.23.2 ids of the held-out
//                         text (encode without special tokens) and whether
//                         its decode gives the text back; llama.cpp's
//                         (node-llama-cpp@3.21.1) ids of the same text, stored
//                         only where they differ from HF's; the model file's
//                         size and FNV-1a hash; llama.cpp's greedy
//                         continuation of each reference prompt with its top-2
//                         probability margin at each step.
//   llamacpp.probs.f32  - llama.cpp's next-token probabilities, float32 LE
//                         [rows][vocab], for the same (case, position) rows as
//                         reference.logits.f32.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(root, 'oracle', 'package.json'));
const { Tokenizer } = require('tokenizers');
const { getLlama } = await import(require.resolve('node-llama-cpp'));

const dataDir = path.join(root, 'tests', 'data', 'demo');
const modelPath = path.join(root, 'models', 'default.gguf');
const tokenizerPath = path.join(root, 'models', 'demo-tokenizer.json');
const GREEDY_TOKENS = 24;

function fnv1a32(buf) {
  let h = 0x811c9dc5;
  for (let i = 0; i < buf.length; i++) h = Math.imul(h ^ buf[i], 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}
const sameIds = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

const heldout = fs.readFileSync(path.join(dataDir, 'heldout.txt'), 'utf8');
const reference = JSON.parse(fs.readFileSync(path.join(dataDir, 'reference.json'), 'utf8'));
const modelBytes = fs.readFileSync(modelPath);
const out = {
  generator: 'scripts/gen_demo_goldens.mjs: tokenizers@0.23.2, node-llama-cpp@3.21.1 (CPU)',
  model_file_bytes: modelBytes.length,
  model_fnv1a32: fnv1a32(modelBytes),
  heldout_file: 'heldout.txt',
};

// ---- Hugging Face tokenizers ----
const hf = Tokenizer.fromFile(tokenizerPath);
const hfIds = Array.from((await hf.encode(heldout, null, { addSpecialTokens: false })).getIds());
out.hf_ids = hfIds;
out.hf_decode_roundtrips = (await hf.decode(hfIds, false)) === heldout;
console.log(`HF: ${hfIds.length} ids, decode round-trips: ${out.hf_decode_roundtrips}`);

// ---- llama.cpp ----
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const model = await llama.loadModel({ modelPath });
const lcIds = Array.from(model.tokenize(heldout, false));
out.llamacpp_ids_equal_hf = sameIds(lcIds, hfIds);
if (!out.llamacpp_ids_equal_hf) out.llamacpp_ids = lcIds;
console.log(`llama.cpp: ${lcIds.length} ids, equal to HF: ${out.llamacpp_ids_equal_hf}`);

const vocab = reference.vocab;
const probs = new Float32Array(reference.num_rows * vocab);
// Twice the longest case: a full context would make llama.cpp shift it.
const ctx = await model.createContext({ contextSize: 512, batchSize: 256, threads: 2,
  flashAttention: false });
const margin = (next) => {
  const top = [...next.probabilities.values()].sort((a, b) => b - a);
  return Number((top[0] - top[1]).toPrecision(4));
};
out.greedy = [];
const seq = ctx.getSequence();
for (const c of reference.cases) {
  // Probabilities at the case's stored positions, in one prefill.
  await seq.clearHistory();
  const wanted = new Set(c.positions);
  const res = await seq.controlledEvaluate(c.ids.map((t, i) =>
    (wanted.has(i) ? [t, { generateNext: { probabilities: true } }] : t)));
  c.positions.forEach((pos, r) => {
    for (const [tok, p] of res[pos].next.probabilities) probs[(c.first_row + r) * vocab + tok] = p;
  });
  if (c.prompt == null) continue;

  // Greedy continuation of the prompt.
  await seq.clearHistory();
  const prompt = c.ids.slice(0, c.prompt_tokens);
  const want = { generateNext: { token: true, probabilities: true } };
  let step = await seq.controlledEvaluate(
    prompt.map((t, i) => (i === prompt.length - 1 ? [t, want] : t)));
  let next = step[prompt.length - 1].next;
  const tokens = [];
  const margins = [];
  for (let i = 0; i < GREEDY_TOKENS; i++) {
    tokens.push(next.token);
    margins.push(margin(next));
    step = await seq.controlledEvaluate([[next.token, want]]);
    next = step[0].next;
  }
  out.greedy.push({ prompt: c.prompt, prompt_ids: prompt, continuation: tokens, margins,
    text: model.detokenize(tokens) });
  console.log(`greedy ${JSON.stringify(c.prompt)} -> ${JSON.stringify(model.detokenize(tokens))}`);
}
seq.dispose();
await ctx.dispose();
await model.dispose();
await llama.dispose();

fs.writeFileSync(path.join(dataDir, 'llamacpp.probs.f32'), Buffer.from(probs.buffer));
fs.writeFileSync(path.join(dataDir, 'goldens.json'), JSON.stringify(out) + '\n');
console.log(`wrote ${dataDir}/goldens.json and llamacpp.probs.f32 (${reference.num_rows} rows)`);

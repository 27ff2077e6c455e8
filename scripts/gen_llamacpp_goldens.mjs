// Generates tests/data/goldens/ from llama.cpp (node-llama-cpp@3.21.1, CPU):
// for every model of BUILD_DIR/models/manifest.tsv (scripts/make-models.sh),
// the full next-token probability vector after each of NUM_POSITIONS seeded
// token ids (fed as ids: no tokenizer, no BOS), and for "-peaky" models a
// GREEDY_TOKENS-token greedy continuation of the first PROMPT_TOKENS ids.
//
// Output: index.json (per model: mkmodel arguments, file size and FNV-1a
// hash, token ids, greedy continuation with llama.cpp's top-2 probability
// margin at each step, probability file) and one <name>.probs.f32 per
// model: float32 little-endian [positions][vocab].
// Usage: node scripts/gen_llamacpp_goldens.mjs BUILD_DIR
import { createRequire } from 'module';
import fs from 'fs';
import path from 'path';
import { fileURLToPath } from 'url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(root, 'oracle', 'package.json'));
const { getLlama } = await import(require.resolve('node-llama-cpp'));

const NUM_POSITIONS = 40;
const PROMPT_TOKENS = 8;
const GREEDY_TOKENS = 32;
const FIRST_ID = 3; // skip <unk>, <s>, </s>

const buildDir = path.resolve(process.argv[2] ?? 'build');
const modelsDir = path.join(buildDir, 'models');
const outDir = path.join(root, 'tests', 'data', 'goldens');
fs.mkdirSync(outDir, { recursive: true });

// FNV-1a 32-bit over the file bytes; the C++ test computes the same.
function fnv1a32(buf) {
  let h = 0x811c9dc5;
  for (let i = 0; i < buf.length; i++) h = Math.imul(h ^ buf[i], 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

// A seeded 32-bit LCG so the token ids are stable and recorded anyway.
function seededIds(seed, count, vocab) {
  let s = seed >>> 0;
  const ids = [];
  for (let i = 0; i < count; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    ids.push(FIRST_ID + (s % (vocab - FIRST_ID)));
  }
  return ids;
}

const manifest = fs.readFileSync(path.join(modelsDir, 'manifest.tsv'), 'utf8')
  .trim().split('\n').map((l) => l.split('\t'))
  .filter(([name]) => name !== 'default');

const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const index = { generator: 'node-llama-cpp@3.21.1 (CPU)', num_positions: NUM_POSITIONS,
  prompt_tokens: PROMPT_TOKENS, greedy_tokens: GREEDY_TOKENS, models: [] };

for (const [name, file, args] of manifest) {
  const modelPath = path.join(modelsDir, file);
  const bytes = fs.readFileSync(modelPath);
  const model = await llama.loadModel({ modelPath });
  const ctx = await model.createContext({ contextSize: 256, batchSize: 64, threads: 2, sequences: 2,
    flashAttention: false });
  const entry = { name, file, mkmodel_args: args, file_bytes: bytes.length, fnv1a32: fnv1a32(bytes) };
  const vocab = Number(/--vocab (\d+)/.exec(args)[1]);
  entry.vocab = vocab;
  entry.tokens = seededIds(parseInt(fnv1a32(Buffer.from(name)), 16), NUM_POSITIONS, vocab);

  // One prefill with probabilities at every position.
  let seq = ctx.getSequence();
  const res = await seq.controlledEvaluate(
    entry.tokens.map((t) => [t, { generateNext: { probabilities: true } }]));
  const probs = new Float32Array(NUM_POSITIONS * vocab);
  for (let i = 0; i < NUM_POSITIONS; i++) {
    for (const [tok, p] of res[i].next.probabilities) probs[i * vocab + tok] = p;
  }
  entry.probs_file = `${name}.probs.f32`;
  fs.writeFileSync(path.join(outDir, entry.probs_file), Buffer.from(probs.buffer));
  seq.dispose();

  if (name.endsWith('-peaky')) {
    seq = ctx.getSequence();
    const prompt = entry.tokens.slice(0, PROMPT_TOKENS);
    const want = { generateNext: { token: true, probabilities: true } };
    // llama.cpp's top-2 probability margin at a step: how decisive it was.
    const margin = (next) => {
      const top = [...next.probabilities.values()].sort((a, b) => b - a);
      return Number((top[0] - top[1]).toPrecision(4));
    };
    let out = await seq.controlledEvaluate(
      prompt.map((t, i) => (i === prompt.length - 1 ? [t, want] : t)));
    const cont = [];
    const margins = [];
    let next = out[prompt.length - 1].next;
    for (let i = 0; i < GREEDY_TOKENS; i++) {
      cont.push(next.token);
      margins.push(margin(next));
      out = await seq.controlledEvaluate([[next.token, want]]);
      next = out[0].next;
    }
    entry.greedy_prompt = prompt;
    entry.greedy_continuation = cont;
    entry.greedy_margins = margins;
    console.log(`${name}: smallest greedy top-2 margin ${Math.min(...margins)}`);
    seq.dispose();
  }
  index.models.push(entry);
  await ctx.dispose();
  await model.dispose();
  console.log(`${name}: ok`);
}
// One line per model keeps the file short and its diffs readable.
const { models, ...header } = index;
fs.writeFileSync(path.join(outDir, 'index.json'),
  JSON.stringify(header).slice(0, -1) + ',\n"models": [\n' +
  models.map((m) => JSON.stringify(m)).join(',\n') + '\n]}\n');
console.log(`wrote ${index.models.length} models to ${outDir}`);

// llama.cpp's tokenizer (node-llama-cpp@3.21.1, vocab-only) over the corpus,
// for the GGUFs that test_tokenizer's LlamaCpp.WritesVocabOnlyGgufs writes:
//
//   build/test_tokenizer --gtest_filter=LlamaCpp.WritesVocabOnlyGgufs
//   node scripts/tokenizer_llamacpp_goldens.mjs build
//
// Writes tests/data/tokenizer/golden_llamacpp_<name>.jsonl: {"text", "ids",
// "decoded"} with ids = tokenize(text, specialTokens=true) plus BOS when the
// vocabulary adds one, decoded = detokenize(ids without BOS) (SentencePiece
// only). Qwen3 keeps only strings NFC leaves unchanged and without "</s>"
// (llama.cpp does not normalize and forces "</s>" to control; HF does not).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(root, 'oracle/package.json'));
const { getLlama } = await import(require.resolve('node-llama-cpp'));
const buildDir = path.resolve(process.argv[2] ?? path.join(root, 'build'));
const dataDir = path.join(root, 'tests/data/tokenizer');
const corpus = fs.readFileSync(path.join(dataDir, 'corpus.jsonl'), 'utf8').trim().split('\n')
  .map((l) => JSON.parse(l));

const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
for (const name of ['synthetic_512', 'synthetic_32000', 'mistral', 'qwen3', 'gpt2']) {
  const modelPath = path.join(buildDir, 'tokenizer_gguf', `${name}.gguf`);
  if (!fs.existsSync(modelPath)) {
    console.log(`skip ${name}: ${modelPath} missing`);
    continue;
  }
  const model = await llama.loadModel({ modelPath, vocabOnly: true });
  const bos = model.tokens.bos;
  const addBos = model.tokens.shouldPrependBosToken;
  const out = [];
  for (const text of corpus) {
    if (name === 'qwen3' && text.normalize('NFC') !== text) continue;
    // llama.cpp forces tokens that look like control tokens ("</s>" is a
    // normal token in Qwen3's vocabulary) to control; Hugging Face does not.
    if (name === 'qwen3' && text.includes('</s>')) continue;
    const body = Array.from(model.tokenize(text, true));
    const ids = addBos && bos != null ? [bos, ...body] : body;
    // Decoded text only for SentencePiece: for byte-level vocabularies
    // llama.cpp's detokenize cleans up spaces (" !" -> "!"), HF's does not.
    const row = { text, ids };
    if (name === 'mistral' || name.startsWith('synthetic')) {
      const decoded = model.detokenize(body, false);
      if (decoded !== text) row.decoded = decoded;  // absent: equal to text
    }
    out.push(JSON.stringify(row));
  }
  fs.writeFileSync(path.join(dataDir, `golden_llamacpp_${name}.jsonl`), out.join('\n') + '\n');
  console.log(`${name}: ${out.length} strings (add_bos=${addBos})`);
  await model.dispose();
}
await llama.dispose();

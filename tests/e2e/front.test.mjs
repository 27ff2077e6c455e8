// The HTTP front's promises, end to end against `strata serve`: a client
// that disconnects stops its generation (streaming or not); pipelined
// requests are answered in order; strict framing errors are answered at
// once; nothing a client sends is silently ignored; vLLM's cheap extras
// (stop_token_ids, include_stop_str_in_output, stop_reason, a list of
// prompts) are honoured; SIGTERM drains within --drain-timeout and aborts
// the rest; a port in use is a one-line error and exit code 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawn } from 'node:child_process';
import {
  apiKey, baseURL, canary, client, host, model, port, raw, sleep, startServer, stopServer,
} from './helpers.mjs';

// The disconnect and drain tests need generations long enough to watch: a
// server of their own with room for 4,000 tokens (the e2e model is tiny).
const LONG = ['--max-model-len', '4096', '--allow-long-max-model-len', '--drain-timeout', '1'];
const generated = async (url) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^strata:generation_tokens_total(?:\{[^}]*\})? (\S+)$/m.exec(text)[1]);
};

// Waits until the generation counter moves (the request is decoding).
async function untilGenerating(url, before) {
  for (let i = 0; i < 500; ++i) {
    if (await generated(url) > before + 5) return;
    await sleep(10);
  }
  throw new Error('generation never started');
}

// After the client has gone, the counter must stop within a step or two.
async function assertStops(url) {
  await sleep(300);
  const a = await generated(url);
  await sleep(700);
  const b = await generated(url);
  assert.equal(b, a, `generation went on for nobody (${a} -> ${b})`);
}

for (const stream of [false, true]) {
  test(`a ${stream ? 'streaming' : 'non-streaming'} client that disconnects stops its generation`,
    async () => {
      const s = await startServer(LONG);
      const u = new URL(s.url);
      const before = await generated(s.url);
      const body = JSON.stringify({ prompt: 'disconnect', max_tokens: 4000, ignore_eos: true,
        n: 4, stream });
      const sock = net.connect(Number(u.port), u.hostname);
      sock.on('error', () => {});
      sock.resume();
      sock.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
                 `Content-Length: ${body.length}\r\n\r\n${body}`);
      await untilGenerating(s.url, before);
      sock.destroy();
      await assertStops(s.url);
      assert.equal(await stopServer(s), 0);
    });
}

test('three pipelined requests in one write get three responses, in order', async () => {
  const req = (prompt, close) => {
    const body = JSON.stringify({ model, prompt, max_tokens: 2, temperature: 0 });
    return `POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${apiKey}\r\n` +
           `Content-Length: ${body.length}\r\n${close ? 'Connection: close\r\n' : ''}\r\n${body}`;
  };
  const text = await new Promise((resolve) => {
    const s = net.connect(port, host);
    let data = '';
    s.on('data', (d) => { data += d.toString('latin1'); });
    s.on('close', () => resolve(data));
    s.on('error', () => resolve(data));
    s.write(req('one', false) + req('two', false) + req('three', true));
  });
  const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
  assert.deepEqual(statuses, [200, 200, 200]);
  const bodies = [...text.matchAll(/"object":"text_completion"/g)];
  assert.equal(bodies.length, 3);
});

test('framing errors are answered at once, before any body is read', async () => {
  const cases = [
    ['Content-Length: 1000000000000\r\n', 413],
    ['Content-Length: -5\r\n', 400],
    ['Content-Length: 5\r\nContent-Length: 6\r\n', 400],
    ['Transfer-Encoding: chunked, identity\r\n', 400],
    ['Content-Length: 5\r\nTransfer-Encoding: chunked\r\n', 400],
    ['X-Bad: a\u0000b\r\nContent-Length: 2\r\n', 400],
  ];
  for (const [headers, status] of cases) {
    const t0 = Date.now();
    const r = await raw(`POST /v1/completions HTTP/1.1\r\nHost: x\r\n${headers}\r\n`,
      { timeoutMs: 5000 });
    assert.equal(r.status, status, headers);
    assert.ok(Date.now() - t0 < 1000, `${headers}: answered after ${Date.now() - t0} ms`);
    assert.ok(JSON.parse(r.body).error.message, headers);
  }
  const many = Array.from({ length: 10000 }, (_, i) => `X-H${i}: v\r\n`).join('');
  const r = await raw(`GET /health HTTP/1.1\r\nHost: x\r\n${many}\r\n`, { timeoutMs: 5000 });
  assert.ok(r.status === 431 || r.status === 400, `10,000 headers: ${r.status}`);
  await canary();
});

test('fields strata does not implement are a 400 naming the field', async () => {
  const c = client();
  for (const [field, value] of [['tools', [{ type: 'function', function: { name: 'f' } }]],
    ['suffix', 'x'], ['best_of', 2], ['no_such_field', 1]]) {
    await assert.rejects(
      c.completions.create({ model, prompt: 'a', max_tokens: 1, [field]: value }),
      (e) => e.status === 400 && e.error.param === field, field);
  }
  await assert.rejects(
    c.chat.completions.create({ model, messages: [{ role: 'user', content: 'a' }],
      tool_choice: 'auto' }),
    (e) => e.status === 400 && e.error.param === 'tool_choice');
  // priority under --policy fcfs (the e2e server's) is refused, as in vLLM.
  await assert.rejects(c.completions.create({ model, prompt: 'a', max_tokens: 1, priority: 3 }),
    (e) => e.status === 400 && e.error.param === 'priority');
});

test('stop strings and stop tokens report stop_reason; include_stop_str_in_output keeps them',
  async () => {
    const c = client();
    const base = { model, prompt: 'The stop', max_tokens: 24, temperature: 0, ignore_eos: true };
    const free = await c.completions.create(base);
    const text = free.choices[0].text;
    assert.ok(text.length >= 6, `free text too short: ${JSON.stringify(text)}`);
    const stop = text.slice(3, 5);
    const cut = await c.completions.create({ ...base, stop: [stop] });
    assert.equal(cut.choices[0].finish_reason, 'stop');
    assert.equal(cut.choices[0].stop_reason, stop);
    assert.equal(cut.choices[0].text, text.slice(0, text.indexOf(stop)));
    const kept = await c.completions.create({ ...base, stop: [stop],
      include_stop_str_in_output: true });
    assert.equal(kept.choices[0].text, text.slice(0, text.indexOf(stop) + stop.length));
    // Stop tokens: the ids of the free text; the first one generated ends
    // the choice, is reported as stop_reason and adds no text.
    const freeIds = await fetch(`${baseURL}/tokenize`, { method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ prompt: text, add_special_tokens: false }) }).then((r) => r.json());
    const stopIds = [...new Set(freeIds.tokens)].slice(0, 64);
    const byToken = await c.completions.create({ ...base, stop_token_ids: stopIds });
    assert.equal(byToken.choices[0].finish_reason, 'stop');
    assert.ok(stopIds.includes(byToken.choices[0].stop_reason), String(byToken.choices[0].stop_reason));
    const eos = await c.completions.create({ ...base, max_tokens: 2 });
    assert.equal(eos.choices[0].stop_reason ?? null, null);
  });

test('a list of prompts is served as prompt x n choices, each as if sent alone', async () => {
  const c = client();
  const base = { model, max_tokens: 6, temperature: 0 };
  const [a, b] = await Promise.all([c.completions.create({ ...base, prompt: 'first' }),
    c.completions.create({ ...base, prompt: 'second' })]);
  const both = await c.completions.create({ ...base, prompt: ['first', 'second'], n: 2 });
  assert.deepEqual(both.choices.map((ch) => ch.index), [0, 1, 2, 3]);
  assert.equal(both.choices[0].text, a.choices[0].text);
  assert.equal(both.choices[1].text, a.choices[0].text);
  assert.equal(both.choices[2].text, b.choices[0].text);
  assert.equal(both.usage.prompt_tokens, a.usage.prompt_tokens + b.usage.prompt_tokens);
  assert.equal(both.usage.completion_tokens, 2 * (a.usage.completion_tokens +
    b.usage.completion_tokens));
  // Streaming: the chunks carry the same indices and texts.
  const texts = ['', '', '', ''];
  const stream = await c.completions.create({ ...base, prompt: ['first', 'second'], n: 2,
    stream: true });
  for await (const chunk of stream) {
    for (const ch of chunk.choices) texts[ch.index] += ch.text;
  }
  assert.deepEqual(texts, both.choices.map((ch) => ch.text));
});

test('SIGTERM drains for --drain-timeout, then aborts the rest with a final error and exits 0',
  async () => {
    const s = await startServer(LONG);
    const res = await fetch(`${s.url}/v1/completions`, { method: 'POST',
      body: JSON.stringify({ prompt: 'drain', max_tokens: 4000, ignore_eos: true, n: 4,
        stream: true }) });
    const reader = res.body.getReader();
    await reader.read();  // streaming has begun
    const t0 = Date.now();
    const exited = stopServer(s);
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
    }
    const code = await exited;
    const took = Date.now() - t0;
    assert.equal(code, 0, s.log());
    assert.ok(took < 5000, `exit took ${took} ms`);
    assert.match(text, /"error"/);
    assert.match(text, /data: \[DONE\]/);
  });

test('a port in use is a one-line error and exit code 1', async () => {
  const first = await startServer([]);
  const busy = new URL(first.url).port;
  const second = spawn(process.env.STRATA_BIN, ['serve', '-m', process.env.STRATA_MODEL_PATH,
    '--port', busy, '--log-interval', '0', '-t', '1']);
  let err = '';
  second.stderr.on('data', (d) => { err += d; });
  const code = await new Promise((r) => second.on('exit', r));
  assert.equal(code, 1);
  assert.match(err, /error: .*cannot listen on .*:\d+/);
  assert.doesNotMatch(err, /listening on/);
  assert.equal(await stopServer(first), 0);
});

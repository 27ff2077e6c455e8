// Malformed and hostile input: each case gets its fitting error (never 500)
// and a canary request is served correctly right after it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { raw, rawPost, canary, apiKey, host, port, sleep } from './helpers.mjs';

function assertOpenAiError(r, status) {
  assert.equal(r.status, status, `status ${r.status}, body ${r.body}, error ${r.error}`);
  const body = JSON.parse(r.body);
  for (const k of ['message', 'type', 'param', 'code']) assert.ok(k in body.error, k);
}

const bad = [
  ['empty body', ''],
  ['truncated body', '{"model":"x","prompt":"abc'],
  ['array body', '[1,2,3]'],
  ['string body', '"hello"'],
  ['number body', '42'],
  ['null body', 'null'],
  ['wrong type: prompt', '{"prompt":{"a":1}}'],
  ['wrong type: max_tokens', '{"prompt":"a","max_tokens":"ten"}'],
  ['wrong type: messages', '{"messages":"hi"}', '/v1/chat/completions'],
  ['wrong type: stream', '{"prompt":"a","stream":"true"}'],
  ['huge integer', '{"prompt":"a","max_tokens":123456789012345678901234567890}'],
  ['huge float', '{"prompt":"a","temperature":1e308}'],
  ['overflowing float', '{"prompt":"a","temperature":1e400}'],
  ['NaN', '{"prompt":"a","temperature":NaN}'],
  ['Infinity', '{"prompt":"a","top_p":Infinity}'],
  ['negative token id', '{"prompt":[1,-5,3]}'],
  ['token id >= vocab', '{"prompt":[1,2,999999]}'],
  ['token id float', '{"prompt":[1,2.5]}'],
  ['bad logit_bias id', '{"prompt":"a","logit_bias":{"99999999":1}}'],
];

for (const [name, body, path = '/v1/completions'] of bad) {
  test(`400: ${name}`, async () => {
    assertOpenAiError(await rawPost(path, body), 400);
    await canary();
  });
}

test('400: invalid UTF-8', async () => {
  const body = Buffer.concat([Buffer.from('{"prompt":"'), Buffer.from([0xff, 0xc3, 0x28]), Buffer.from('"}')]);
  assertOpenAiError(await rawPost('/v1/completions', body), 400);
  await canary();
});

test('400: 100k-deep nesting, no crash', async () => {
  const body = '{"prompt":' + '['.repeat(100000) + ']'.repeat(100000) + '}';
  assertOpenAiError(await rawPost('/v1/completions', body), 400);
  const chat = '{"messages":' + '{"a":'.repeat(50000) + '1' + '}'.repeat(50000) + '}';
  assertOpenAiError(await rawPost('/v1/chat/completions', chat), 400);
  await canary();
});

test('413: 10 GB announced in Content-Length', async () => {
  const head = `POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${apiKey}\r\n` +
               'Content-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n{"prompt":';
  const r = await raw(head);
  assertOpenAiError(r, 413);
  await canary();
});

test('413: a real body over --max-body-bytes', async () => {
  const r = await rawPost('/v1/completions', JSON.stringify({ prompt: 'x'.repeat(2 << 20) }));
  assert.ok(r.status === 413 || r.error, `status ${r.status}`);
  if (r.status) assertOpenAiError(r, 413);
  await canary();
});

test('431 (or a closed connection): 1 MB header', async () => {
  const head = `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(1 << 20)}\r\n\r\n`;
  const r = await raw(head);
  assert.ok(r.status === 431 || r.status === 0, `status ${r.status}`);
  if (r.status) assertOpenAiError(r, 431);
  await canary();
});

test('slowloris connections time out and do not starve others', async () => {
  const socks = [];
  const closed = [];
  for (let i = 0; i < 20; ++i) {
    const s = net.connect(port, host);
    s.on('error', () => {});
    s.resume();
    closed.push(new Promise((r) => s.on('close', r)));
    s.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\n');
    socks.push(s);
  }
  const drip = setInterval(() => { for (const s of socks) if (!s.destroyed) s.write('X'); }, 300);
  try {
    // Served alongside the stalled connections.
    await canary();
    // The server's header timeout (3 s in run_e2e.sh) closes them all.
    const all = Promise.all(closed).then(() => true);
    assert.equal(await Promise.race([all, sleep(10000).then(() => false)]), true);
  } finally {
    clearInterval(drip);
    for (const s of socks) s.destroy();
  }
  await canary();
});

test('a stalled body times out too', async () => {
  const s = net.connect(port, host);
  s.on('error', () => {});
  s.resume();  // read (and drop) the 400 so that 'close' fires
  const closed = new Promise((r) => s.on('close', r));
  s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${apiKey}\r\n` +
          'Content-Length: 100\r\n\r\n{"pro');
  await canary();
  // The body timeout (--request-timeout, 3 s in run_e2e.sh) ends it.
  assert.equal(await Promise.race([closed.then(() => true), sleep(15000).then(() => false)]), true);
  s.destroy();
});

// The engine's reasons reach the client: a request that can never fit the
// KV pool gets 400 with the engine's message naming --kv-cache-memory, at
// once, streaming or not; one beyond --max-model-len gets 400
// context_length_exceeded. Through the official client, on a server of its
// own with a 4-block pool (the e2e model: 1 KiB of KV per token, 16-token
// blocks).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { OpenAI, startServer, stopServer } from './helpers.mjs';

const server = await startServer(['--kv-cache-memory', '64KiB', '--served-model-name', 'tiny']);
after(() => stopServer(server));
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0 });
const prompt = Array.from({ length: 40 }, (_, i) => 3 + i);  // 40 + 40 - 1 slots > 64

async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('the request was served');
}

test('a request larger than the whole KV pool: 400 naming --kv-cache-memory', async () => {
  const e = await rejection(client.completions.create({ model: 'tiny', prompt, max_tokens: 40 }));
  assert.equal(e.status, 400);
  assert.match(e.message, /--kv-cache-memory/);
  assert.match(e.message, /KV blocks/);
});

test('the same, streaming: 400 before any event', async () => {
  const e = await rejection((async () => {
    const s = await client.completions.create({ model: 'tiny', prompt, max_tokens: 40, stream: true });
    for await (const _ of s) { /* nothing may arrive */ }
  })());
  assert.equal(e.status, 400);
  assert.match(e.message, /--kv-cache-memory/);
});

test('beyond --max-model-len: 400 context_length_exceeded', async () => {
  const e = await rejection(client.completions.create({ model: 'tiny', prompt: [1, 2, 3], max_tokens: 300 }));
  assert.equal(e.status, 400);
  assert.equal(e.code, 'context_length_exceeded');
  assert.match(e.message, /--max-model-len/);
});

test('a request that fits is served', async () => {
  const r = await client.completions.create({ model: 'tiny', prompt: [5, 6, 7], max_tokens: 8 });
  assert.equal(r.choices.length, 1);
  assert.ok(r.usage.completion_tokens >= 1);
});

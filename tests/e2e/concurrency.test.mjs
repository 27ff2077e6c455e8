// Disconnects and concurrency: dropped clients free their KV blocks; 64
// parallel greedy streams equal their solo outputs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { client, model, apiKey, host, port, metrics, canary, sleep } from './helpers.mjs';

const c = client();

async function waitForIdle(baselineKv) {
  let m;
  for (let i = 0; i < 100; ++i) {
    m = await metrics();
    if (m['strata:num_requests_running'] === 0 && m['strata:num_requests_waiting'] === 0 &&
        m['strata:kv_cache_usage_perc'] <= baselineKv + 1e-9) return m;
    await sleep(100);
  }
  assert.fail(`not idle: ${JSON.stringify(m)}`);
}

// Opens a raw streaming request; resolves when `until` says to drop.
function streamAndDrop(body, dropAfterFirstChunk) {
  return new Promise((resolve) => {
    const s = net.connect(port, host);
    s.on('error', () => resolve());
    const json = JSON.stringify(body);
    s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${apiKey}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`);
    if (!dropAfterFirstChunk) {
      // During prefill: gone as soon as the request is sent.
      setTimeout(() => { s.destroy(); resolve(); }, 5);
      return;
    }
    s.on('data', (d) => {
      if (d.toString().includes('data: {')) { s.destroy(); resolve(); }
    });
  });
}

test('100 clients drop after their first chunk: blocks and running return to baseline', async () => {
  const base = await waitForIdle(1);
  const before = base['strata:kv_cache_usage_perc'];
  const reqs = [];
  for (let i = 0; i < 100; ++i) {
    reqs.push(streamAndDrop({ model, prompt: `drop ${i} after the first chunk`, max_tokens: 200,
                              temperature: 0, ignore_eos: true, stream: true }, true));
  }
  await Promise.all(reqs);
  const after = await waitForIdle(before);
  assert.ok(after['strata:request_success_total{model_name="' + model + '",finished_reason="abort"}'] >
            (base['strata:request_success_total{model_name="' + model + '",finished_reason="abort"}'] ?? 0));
  await canary();
});

test('100 clients drop during prefill', async () => {
  const base = await waitForIdle(1);
  const reqs = [];
  const long = Array.from({ length: 200 }, (_, i) => 3 + ((i * 37) % 400));
  for (let i = 0; i < 100; ++i) {
    reqs.push(streamAndDrop({ model, prompt: [i + 3, ...long], max_tokens: 50, stream: i % 2 === 0,
                              ignore_eos: true }, false));
  }
  await Promise.all(reqs);
  await waitForIdle(base['strata:kv_cache_usage_perc']);
  await canary();
});

test('64 parallel greedy streams equal their solo outputs', async () => {
  const prompts = Array.from({ length: 64 }, (_, i) => `Parallel prompt number ${i} says`);
  const args = (p) => ({ model, prompt: p, max_tokens: 16, temperature: 0, ignore_eos: true });
  const solo = [];
  for (const p of prompts) solo.push((await c.completions.create(args(p))).choices[0].text);
  const collect = async (p) => {
    const s = await c.completions.create({ ...args(p), stream: true });
    let text = '';
    for await (const chunk of s) for (const ch of chunk.choices) text += ch.text;
    return text;
  };
  const parallel = await Promise.all(prompts.map(collect));
  assert.deepEqual(parallel, solo);
});

test('256 concurrent streams all finish, /health answers meanwhile', async () => {
  const collect = async (i) => {
    const s = await c.chat.completions.create({
      model, messages: [{ role: 'user', content: `stream ${i}` }], max_tokens: 12,
      temperature: 0.7, seed: i, ignore_eos: true, stream: true, stream_options: { include_usage: true },
    });
    let usage = null;
    for await (const chunk of s) if (chunk.usage) usage = chunk.usage;
    return usage.completion_tokens;
  };
  const all = Promise.all(Array.from({ length: 256 }, (_, i) => collect(i)));
  const h = await fetch(`${process.env.STRATA_BASE_URL}/health`);
  assert.equal(h.status, 200);
  const counts = await all;
  assert.deepEqual(counts, new Array(256).fill(12));
  await canary();
});

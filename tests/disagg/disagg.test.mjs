// Disaggregated prefill/decode with real processes on loopback (the small
// test model, one thread each, 32-token chunks): greedy outputs through a
// router in front of 1 prefill + 1 decode worker equal one `--role both`
// server's, for prompts of 0, 1 and many chunks and with prefix hits on
// either side; a prefill worker that sends a corrupt chunk, is SIGKILLed
// mid-transfer, is SIGSTOPped past the deadline or restarts costs a
// recompute, never an error or a wrong token (a canary stream on the decode
// worker is unaffected); a client that goes away cancels the transfer on
// both sides, and both pools return to their baseline. Migration: a decode
// worker drained mid-generation (POST /strata/v1/drain {"migrate": true})
// hands its seeded, sampled request (a chat stream, then a non-streaming
// completion) to another decode worker through the router, and the client's
// text equals an unmoved run's. Every process is
// started here and killed by its PID.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { BIN, MODEL, freePort, post, sleep, spawnListening, stop, stream, waitFor }
  from '../router/fleet.mjs';

const started = [];
after(async () => {
  for (const p of started) {
    try { process.kill(p.proc.pid, 'SIGCONT'); } catch { /* gone */ }
    await stop(p, 'SIGKILL');
  }
});

const common = ['--log-interval', '0', '-t', '1', '--kv-cache-memory', '16MiB',
  '--served-model-name', 'm', '--kv-chunk-tokens', '32', '--block-size', '16'];

async function serve(extra, env = {}) {
  const saved = {};
  for (const [k, v] of Object.entries(env)) { saved[k] = process.env[k]; process.env[k] = v; }
  try {
    const r = await spawnListening(['serve', '-m', MODEL, '--port', '0', ...common, ...extra]);
    started.push(r);
    r.url = `http://127.0.0.1:${r.port}`;
    const m = /kv transfer listening on ([\d.]+):(\d+)/.exec(r.log());
    if (m) r.kv = `${m[1]}:${m[2]}`;
    return r;
  } finally {
    for (const k of Object.keys(env)) {
      if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k];
    }
  }
}
const both = () => serve([]);
const prefill = (extra = [], env = {}) => serve(['--role', 'prefill', ...extra], env);
// The deadline floor is generous (an instrumented build is slow) except where
// the deadline is the subject.
const decode = (p, extra = [], minDeadline = '30') => serve(['--role', 'decode',
  '--prefill-peer', p.kv, '--remote-prefill', 'always', '--kv-transfer-min-deadline', minDeadline,
  ...extra]);

// A metric's value (the sum over series whose labels contain `labels`).
async function metric(url, name, labels = '') {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = NaN;
  for (const line of text.split('\n')) {
    const m = /^([^{\s]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name || !(m[2] ?? '').includes(labels)) continue;
    sum = (Number.isNaN(sum) ? 0 : sum) + Number(m[3]);
  }
  return sum;
}

// Deterministic prompts of exact token counts (ids in [5, 500)).
function tokens(n, seed) {
  const out = [];
  let x = seed * 7919 + 1;
  for (let i = 0; i < n; ++i) { x = (x * 1103515245 + 12345) % 2147483648; out.push(5 + (x % 495)); }
  return out;
}
const greedy = { model: 'm', temperature: 0, max_tokens: 12, ignore_eos: true };
async function complete(url, prompt, extra = {}) {
  const r = await post(url, '/v1/completions', { ...greedy, prompt, ...extra });
  assert.equal(r.status, 200, r.text);
  return r.json;
}
const text = (j) => j.choices[0].text;

async function idle(url) {
  return await metric(url, 'strata:kv_cache_usage_perc') === 0 &&
    await metric(url, 'strata:num_requests_running') === 0 &&
    await metric(url, 'strata:kv_transfers_active') === 0;
}

test('greedy outputs through router + 1P + 1D equal one colocated server', async () => {
  const ref = await both();
  const p = await prefill();
  const d = await decode(p);
  const r = await spawnListening(['router', '-m', MODEL, '--port', '0', '--health-interval-ms',
    '100', '--prefill', p.url, '--decode', d.url]);
  started.push(r);
  r.url = `http://127.0.0.1:${r.port}`;
  // 0 chunks (shorter than one), exactly one, many; then the same prompt
  // again (a prefix hit on the decode worker: no transfer).
  const cases = [tokens(10, 1), tokens(45, 2), tokens(190, 3), tokens(190, 3)];
  for (const prompt of cases) {
    assert.equal(text(await complete(r.url, prompt)), text(await complete(ref.url, prompt)),
      `prompt of ${prompt.length} tokens`);
  }
  assert.ok(await metric(d.url, 'strata:prefill_decisions_total', 'where="remote"') >= 2);
  assert.ok(await metric(d.url, 'strata:kv_transfer_chunks_total', 'result="verified"') >= 6);
  assert.equal(await metric(d.url, 'strata:kv_transfer_chunks_total', 'result="rejected"'), 0);
  assert.ok(await metric(p.url, 'strata:kv_transfer_bytes_total', 'direction="sent"') > 0);
  assert.equal(await metric(p.url, 'strata:kv_transfer_bytes_total', 'direction="sent"'),
    await metric(d.url, 'strata:kv_transfer_bytes_total', 'direction="received"'));

  // A prefix hit on the prefill side only: the prefill worker served this
  // prompt itself first; the decode worker has never seen it.
  const shared = tokens(150, 4);
  const first = await complete(p.url, shared);
  const before = await metric(d.url, 'strata:kv_transfer_chunks_total', 'result="verified"');
  const viaD = await complete(d.url, shared);
  assert.equal(text(viaD), text(first));
  assert.equal(text(viaD), text(await complete(ref.url, shared)));
  assert.equal(await metric(d.url, 'strata:kv_transfer_chunks_total', 'result="verified"'),
    before + 4);
  // Partly cached on the decode worker (its first chunks), the rest remote.
  const longer = [...shared, ...tokens(60, 5)];
  assert.equal(text(await complete(d.url, longer)), text(await complete(ref.url, longer)));
  // Cache salts travel with the ask (the keys depend on them).
  const salted = tokens(100, 6);
  assert.equal(text(await complete(d.url, salted, { cache_salt: 'tenant-a' })),
    text(await complete(ref.url, salted, { cache_salt: 'tenant-a' })));
  assert.equal(await metric(d.url, 'strata:kv_transfer_chunks_total', 'result="rejected"'), 0);
  assert.ok(await waitFor(async () => await idle(d.url) && await idle(p.url), 10000));
});

test('a corrupt chunk is rejected and recomputed', async () => {
  const ref = await both();
  const p = await prefill([], { STRATA_TEST_KV_CORRUPT_CHUNK: '1' });
  const d = await decode(p);
  const prompt = tokens(190, 7);
  assert.equal(text(await complete(d.url, prompt)), text(await complete(ref.url, prompt)));
  assert.equal(await metric(d.url, 'strata:kv_transfer_chunks_total', 'result="rejected"'), 1);
  assert.equal(await metric(d.url, 'strata:kv_transfer_chunks_total', 'result="verified"'), 1);
  assert.equal(await metric(d.url, 'strata:kv_transfer_faults_total', 'kind="corrupt"'), 1);
  assert.equal(await metric(d.url, 'strata:kv_transfer_recomputed_tokens_total'), 4 * 32);
  // The next transfer is whole again.
  const next = tokens(120, 8);
  assert.equal(text(await complete(d.url, next)), text(await complete(ref.url, next)));
  assert.equal(await metric(d.url, 'strata:kv_transfer_chunks_total', 'result="verified"'), 4);
});

test('a prefill worker SIGKILLed mid-transfer, then restarted', async () => {
  const ref = await both();
  const port = await freePort();
  // Chunks trickle out 300 ms apart, so the kill lands mid-transfer.
  const p = await prefill(['--kv-transfer-port', String(port)],
    { STRATA_TEST_KV_CHUNK_DELAY_MS: '300' });
  const d = await decode(p, [], '60');
  const canaryPrompt = tokens(20, 9);
  const canaryRef = await post(ref.url, '/v1/completions',
    { ...greedy, prompt: canaryPrompt, max_tokens: 60 });
  const canary = stream(d.url, '/v1/completions', { ...greedy, prompt: canaryPrompt, max_tokens: 60 });
  const prompt = tokens(190, 10);
  const pending = complete(d.url, prompt);
  assert.ok(await waitFor(async () =>
    await metric(d.url, 'strata:kv_transfer_chunks_total', 'result="verified"') >= 1, 20000));
  process.kill(p.proc.pid, 'SIGKILL');
  assert.equal(text(await pending), text(await complete(ref.url, prompt)));
  assert.equal(await metric(d.url, 'strata:kv_transfer_faults_total', 'kind="closed"'), 1);
  assert.ok(await metric(d.url, 'strata:kv_transfer_recomputed_tokens_total') > 0);
  // While it is down: unreachable, computed locally.
  const down = tokens(100, 11);
  assert.equal(text(await complete(d.url, down)), text(await complete(ref.url, down)));
  // Restarted on the same port: used again once its back-off passed.
  const p2 = await prefill(['--kv-transfer-port', String(port)]);
  assert.equal(p2.kv, p.kv);
  let ok = false;
  for (let i = 0; i < 40 && !ok; ++i) {
    const again = tokens(100, 12 + i);
    assert.equal(text(await complete(d.url, again)), text(await complete(ref.url, again)));
    ok = await metric(p2.url, 'strata:kv_transfer_chunks_total', 'result="sent"') > 0;
    if (!ok) await sleep(100);
  }
  assert.ok(ok, 'the restarted prefill worker is used again');
  const c = await canary;
  assert.equal(c.error, null);
  assert.equal(c.text, canaryRef.json.choices[0].text);
  assert.ok(await waitFor(async () => await idle(d.url) && await idle(p2.url), 10000));
});

test('a prefill worker SIGSTOPped past the deadline', async () => {
  const ref = await both();
  const p = await prefill();
  const d = await decode(p, [], '1');
  // One remote prefill first, so the rates are measured.
  const warm = tokens(100, 60);
  assert.equal(text(await complete(d.url, warm)), text(await complete(ref.url, warm)));
  const deadlines = await metric(d.url, 'strata:kv_transfer_faults_total', 'kind="deadline"');
  const recomputed = await metric(d.url, 'strata:kv_transfer_recomputed_tokens_total');
  process.kill(p.proc.pid, 'SIGSTOP');
  try {
    const prompt = tokens(190, 61);
    assert.equal(text(await complete(d.url, prompt)), text(await complete(ref.url, prompt)));
    assert.equal(await metric(d.url, 'strata:kv_transfer_faults_total', 'kind="deadline"'),
      deadlines + 1);
    assert.equal(await metric(d.url, 'strata:kv_transfer_recomputed_tokens_total'),
      recomputed + 5 * 32);
  } finally {
    process.kill(p.proc.pid, 'SIGCONT');
  }
  // Resumed, it sees the closed connection and keeps nothing.
  assert.ok(await waitFor(async () => await idle(d.url) && await idle(p.url), 10000));
});

test('a client that goes away cancels the transfer on both sides', async () => {
  const p = await prefill([], { STRATA_TEST_KV_CHUNK_DELAY_MS: '2000' });
  const d = await decode(p, [], '120');
  const baseline = await metric(p.url, 'strata:kv_cache_usage_perc');
  const ac = new AbortController();
  const req = fetch(`${d.url}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: ac.signal,
    body: JSON.stringify({ ...greedy, prompt: tokens(190, 70), stream: true }) });
  assert.ok(await waitFor(async () =>
    await metric(p.url, 'strata:kv_transfers_active') === 1 &&
    await metric(d.url, 'strata:kv_transfers_active') === 1, 20000));
  ac.abort();
  await req.catch(() => {});
  // Both ends closed well before the 5 x 2 s trickle could have finished.
  assert.ok(await waitFor(async () => await idle(d.url) && await idle(p.url), 4000));
  assert.equal(await metric(p.url, 'strata:kv_cache_usage_perc'), baseline);
  assert.ok(await metric(p.url, 'strata:kv_transfer_chunks_total', 'result="sent"') < 5);
});

// ---- migration (docs/disagg.md "Migration") ----------------------------
// The 4-layer test model (ctx 2048), so a long generation takes long enough
// for the drain to land mid-way.
const BIG = MODEL.replace(/[^/]*$/, 'default.gguf');
async function migratable() {
  const r = await spawnListening(['serve', '-m', BIG, '--port', '0', '--log-interval', '0',
    '-t', '1', '--kv-cache-memory', '64MiB', '--served-model-name', 'm', '--kv-chunk-tokens',
    '32', '--block-size', '16', '--role', 'decode', '--kv-transfer-port', '0']);
  started.push(r);
  r.url = `http://127.0.0.1:${r.port}`;
  return r;
}
const sampled = { model: 'm', temperature: 0.9, top_p: 0.95, seed: 4242, presence_penalty: 0.2,
  frequency_penalty: 0.1, max_tokens: 400, ignore_eos: true };
const exited = (p) => new Promise((resolve) => {
  if (p.proc.exitCode !== null || p.proc.signalCode !== null) resolve(p.proc.exitCode);
  else p.proc.on('exit', (code) => resolve(code));
});
// Which of `workers` runs a request now (polls; null on timeout).
async function runner(workers) {
  for (let i = 0; i < 400; ++i) {
    for (const w of workers) {
      if (await metric(w.url, 'strata:num_requests_running') > 0) return w;
    }
    await sleep(5);
  }
  return null;
}
const drain = (w) => post(w.url, '/strata/v1/drain', { migrate: true, timeout_s: 20 });

test('a decode worker drained mid-generation hands its requests over unchanged', async () => {
  const ws = [await migratable(), await migratable(), await migratable()];
  const r = await spawnListening(['router', '-m', BIG, '--port', '0', '--health-interval-ms',
    '100', ...ws.flatMap((w) => ['--decode', w.url])]);
  started.push(r);
  r.url = `http://127.0.0.1:${r.port}`;
  const prompt = tokens(70, 80);
  const messages = [{ role: 'user', content: 'Tell me a long story about a lighthouse keeper.' }];
  // Unmoved runs, straight to a worker (no router: nothing can migrate).
  const ref = await post(ws[0].url, '/v1/completions', { ...sampled, prompt });
  assert.equal(ref.status, 200, ref.text);
  const refText = ref.json.choices[0].text;
  const refChat = await post(ws[0].url, '/v1/chat/completions', { ...sampled, messages });
  assert.equal(refChat.status, 200, refChat.text);
  assert.ok(await waitFor(async () => (await Promise.all(ws.map((w) => idle(w.url))))
    .every(Boolean), 10000));

  // Streaming chat: the drain lands once the first text is out.
  const res = await fetch(`${r.url}/v1/chat/completions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...sampled, messages, stream: true,
      stream_options: { include_usage: true } }) });
  assert.equal(res.status, 200);
  let buf = '', got = '', done = false, usage = null, drained = null, drainAnswer = null;
  let roles = 0;
  const ids = new Set();
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      assert.ok(ev.startsWith('data: '), `an event the client should not see: ${ev.slice(0, 60)}`);
      const data = ev.slice(6);
      if (data === '[DONE]') { done = true; continue; }
      const j = JSON.parse(data);
      assert.equal(j.error, undefined, data);
      ids.add(j.id);
      for (const c of j.choices) {
        if (c.delta.role) ++roles;
        got += c.delta.content ?? '';
      }
      if (j.usage) usage = j.usage;
    }
    if (!drained && got.length > 0) {
      drained = await runner(ws);
      assert.ok(drained, 'a worker runs the request');
      drainAnswer = await drain(drained);
    }
  }
  assert.equal(drainAnswer.status, 200, drainAnswer.text);
  assert.equal(drainAnswer.json.migrating, 1);
  assert.ok(done);
  assert.equal(got, refChat.json.choices[0].message.content);
  assert.equal(roles, 1, 'one role chunk across the move');
  assert.equal(ids.size, 1, 'one response id across the move');
  assert.equal(usage.completion_tokens, sampled.max_tokens);
  assert.equal(usage.prompt_tokens, refChat.json.usage.prompt_tokens);
  assert.equal(await exited(drained), 0, 'the drained worker exits');
  const rest = ws.filter((w) => w !== drained);
  let moved = 0;
  for (const w of rest) moved += await metric(w.url, 'strata:requests_migrated_total', 'direction="in"');
  assert.equal(moved, 1);
  let pulled = 0;
  for (const w of rest) pulled += await metric(w.url, 'strata:kv_transfer_chunks_total', 'result="verified"');
  assert.ok(pulled >= 2, `KV pulled by content (${pulled} chunks)`);

  // Non-streaming: the receiver answers the whole response.
  const pending = post(r.url, '/v1/completions', { ...sampled, prompt });
  const second = await runner(rest);
  assert.ok(second, 'a worker runs the second request');
  const a2 = await drain(second);
  assert.equal(a2.status, 200, a2.text);
  assert.equal(a2.json.migrating, 1);
  const body = await pending;
  assert.equal(body.status, 200, body.text);
  assert.equal(body.json.choices[0].text, refText);
  assert.equal(body.json.usage.completion_tokens, sampled.max_tokens);
  assert.equal(await exited(second), 0);
  const last = rest.filter((w) => w !== second)[0];
  // Bad records and drain bodies are 400s naming the field; the worker serves on.
  const record = { v: 1, prompt_token_ids: prompt, output_token_ids: [7, 8], seed: '1',
    rng_draws: '2', kv_peer: '', response_id: 'cmpl-x', created: 1 };
  for (const bad of [{}, { ...record, seed: 1 }, { ...record, rng_draws: '9' },
    { ...record, kv_peer: 'nohost' }, { ...record, output_token_ids: [-1] },
    { ...record, prompt_token_ids: [1, 2, 3] }, { ...record, extra: 1 }]) {
    const b = await post(last.url, '/v1/completions', { ...sampled, prompt, strata_resume: bad });
    assert.equal(b.status, 400, b.text);
    assert.equal(b.json.error.param, 'strata_resume', b.text);
  }
  // Only the router writes a record: a client's is refused at the router.
  const forged = await post(r.url, '/v1/completions', { ...sampled, prompt, strata_resume: record });
  assert.equal(forged.status, 400, forged.text);
  assert.equal(forged.json.error.param, 'strata_resume', forged.text);
  for (const bad of [{ migrate: 'yes' }, { timeout_s: 0 }, { later: true }]) {
    assert.equal((await post(last.url, '/strata/v1/drain', bad)).status, 400);
  }
  // A good record continues (here with no KV to pull: recomputed).
  const cont = await post(last.url, '/v1/completions',
    { ...sampled, prompt, max_tokens: 4, strata_resume: record });
  assert.equal(cont.status, 200, cont.text);
  assert.equal(cont.json.id, 'cmpl-x');
  assert.equal(cont.json.usage.completion_tokens, 4);
  assert.ok(await waitFor(async () => await idle(last.url), 10000));
  assert.ok(await metric(r.url, 'strata_router_migrations_total') >= 1);
});

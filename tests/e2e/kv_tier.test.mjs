// The tiered KV cache through real `strata serve` processes and the official
// client: a 4,000-token document served again after a restart comes from the
// disk tier; a SIGKILL while chunks are being written leaves a directory the
// next server starts from; two replicas sharing one Redis reuse each other's
// chunks. Outputs must equal the cold run's, token for token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { OpenAI, startServer as startAnyServer, stopServer } from './helpers.mjs';

// The tiny model's 256-token context is stretched (outputs are compared with
// each other, not with a reference).
const startServer = (args) => startAnyServer(['--kv-cache-memory', '32MiB', '--max-model-len', '4200',
  '--allow-long-max-model-len', '--served-model-name', 'kv', ...args]);

const DOC_TOKENS = 4000;
const CHUNK = 256;
const LOADABLE = Math.floor((DOC_TOKENS + 8 - 1) / CHUNK) * CHUNK;  // 3840

// A seeded document of token ids (the tiny test vocabulary has 512 ids).
function document(seed, n = DOC_TOKENS) {
  let x = seed >>> 0;
  const ids = [];
  for (let i = 0; i < n; ++i) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    ids.push(3 + (x % 500));
  }
  return ids;
}
const question = [17, 42, 99, 7, 301, 11, 5, 77];

async function ask(url, ids) {
  const c = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120000 });
  const r = await c.completions.create({ model: 'kv', prompt: ids, max_tokens: 12, temperature: 0,
    ignore_eos: true });
  return { text: r.choices[0].text, cached: r.usage.prompt_tokens_details?.cached_tokens ?? 0,
    prompt: r.usage.prompt_tokens, completion: r.usage.completion_tokens };
}

async function metricValue(url, name, tier) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const re = new RegExp(`^strata:${name}\\{[^}]*tier="${tier}"[^}]*\\} (\\S+)$`, 'm');
  const m = re.exec(text);
  return m ? Number(m[1]) : NaN;
}

function tempDir() { return fs.mkdtempSync(path.join(os.tmpdir(), 'strata-kv-e2e-')); }

function listFiles(dir) {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...listFiles(p)); else out.push(p);
  }
  return out;
}

function freePort() {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
  });
}

async function waitFor(cond, ms = 20000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

const doc = [...document(1), ...question];
let coldText = null;
async function cold() {
  if (coldText !== null) return coldText;
  const s = await startServer([]);
  try { coldText = (await ask(s.url, doc)).text; } finally { await stopServer(s); }
  return coldText;
}

test('restart: a 4,000-token document comes back from --kv-disk-dir', async () => {
  const dir = tempDir();
  try {
    const a = await startServer(['--kv-disk-dir', dir]);
    let first;
    try {
      first = await ask(a.url, doc);
      assert.equal(first.cached, 0);
    } finally {
      assert.equal(await stopServer(a), 0);
    }
    assert.equal(first.text, await cold());
    const b = await startServer(['--kv-disk-dir', dir]);
    try {
      const again = await ask(b.url, doc);
      assert.equal(again.text, first.text);
      assert.ok(again.cached >= LOADABLE, `cached_tokens ${again.cached}`);
      assert.ok(again.cached / again.prompt > 0.9);
      assert.equal(await metricValue(b.url, 'prompt_tokens_cached_total', 'disk'), LOADABLE);
      assert.equal(await metricValue(b.url, 'kv_tier_hits_total', 'disk'), LOADABLE / CHUNK);
    } finally {
      await stopServer(b);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('SIGKILL while chunks are written: the next server starts clean and answers the same', async () => {
  const dir = tempDir();
  try {
    const a = await startServer(['--kv-disk-dir', dir]);
    // Several documents in flight; kill as soon as the first answer (and its
    // chunk stores) is out, while the writer is still busy with the rest.
    const pending = [2, 3, 4].map((s) => ask(a.url, [...document(s), ...question]).catch(() => null));
    await ask(a.url, doc);
    await stopServer(a, 'SIGKILL');
    await Promise.all(pending);
    const b = await startServer(['--kv-disk-dir', dir]);
    try {
      assert.deepEqual(listFiles(dir).filter((f) => path.basename(f).startsWith('.tmp')), []);
      const again = await ask(b.url, doc);
      assert.equal(again.text, await cold());
      const canary = await ask(b.url, question);
      assert.equal(canary.completion, 12);
    } finally {
      await stopServer(b);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

function hasRedis() {
  try { execFileSync('sh', ['-c', 'command -v redis-server'], { stdio: 'ignore' }); return true; } catch { return false; }
}

test('replicas: B reuses the chunks A computed through one Redis', { skip: !hasRedis() && 'no redis-server' }, async () => {
  const port = await freePort();
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '',
    '--appendonly', 'no'], { stdio: 'ignore' });
  try {
    assert.ok(await waitFor(() => new Promise((r) => {
      const s = net.connect(port, '127.0.0.1', () => { s.destroy(); r(true); });
      s.on('error', () => r(false));
    })), 'redis did not start');
    const remote = ['--kv-remote', `redis://127.0.0.1:${port}`];
    const a = await startServer(remote);
    const b = await startServer(remote);
    try {
      const first = await ask(a.url, doc);
      assert.equal(first.cached, 0);
      // The stores are asynchronous: wait until A wrote every whole chunk.
      const chunks = Math.floor((DOC_TOKENS + question.length + 11) / CHUNK);
      assert.ok(await waitFor(async () =>
        (await metricValue(a.url, 'kv_tier_stored_chunks', 'redis')) >= chunks ||
        (await metricValue(a.url, 'kv_tier_written_bytes_total', 'redis')) > 0 &&
        (await metricValue(a.url, 'kv_tier_put_latency_seconds_count', 'redis')) >= chunks));
      const second = await ask(b.url, doc);
      assert.equal(second.text, first.text);
      assert.equal(second.text, await cold());
      assert.ok(second.cached >= LOADABLE, `cached_tokens ${second.cached}`);
      assert.equal(await metricValue(b.url, 'prompt_tokens_cached_total', 'redis'), LOADABLE);
    } finally {
      await stopServer(a);
      await stopServer(b);
    }
  } finally {
    redis.kill('SIGKILL');
  }
});

test('Redis down at start-up: the server starts and serves cold outputs', async () => {
  const port = await freePort();  // nothing listens there
  const s = await startServer(['--kv-remote', `redis://127.0.0.1:${port}`]);
  try {
    const r = await ask(s.url, doc);
    assert.equal(r.text, await cold());
    assert.equal(r.cached, 0);
    assert.equal((await ask(s.url, question)).completion, 12);  // canary
    assert.ok(await metricValue(s.url, 'kv_tier_errors_total', 'redis') +
              await metricValue(s.url, 'kv_tier_dropped_stores_total', 'redis') >= 1);
  } finally {
    assert.equal(await stopServer(s), 0);
  }
});

// Admission: a second, tiny server (--max-num-seqs 1 --max-queue 0) answers
// 429 with the OpenAI body while its one slot is busy, then serves again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { OpenAI } from './helpers.mjs';

function startServer(args) {
  const env = { ...process.env };
  delete env.STRATA_API_KEY;  // this server runs without auth
  return new Promise((resolve, reject) => {
    const proc = spawn(process.env.STRATA_BIN, ['serve', '-m', process.env.STRATA_MODEL_PATH,
      '--port', '0', '--log-interval', '0', '--kv-cache-memory', '16MiB', '-t', '1', ...args],
    { env });
    let err = '';
    proc.stderr.on('data', (d) => {
      err += d;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(err);
      if (m) resolve({ proc, url: `http://127.0.0.1:${m[1]}` });
    });
    proc.on('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
}

test('429 when the queue is full, served again afterwards', async () => {
  // The busy request must outlive the second request's round trip even on a
  // loaded host: a long generation (the tiny model's 256-token context is
  // stretched; its outputs are not checked).
  const { proc, url } = await startServer(['--max-num-seqs', '1', '--max-queue', '0',
    '--served-model-name', 'q', '--max-model-len', '4096',
    '--allow-long-max-model-len']);
  try {
    const c = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
    const ac = new AbortController();
    const busy = await c.completions.create({ model: 'q', prompt: 'busy', max_tokens: 3000,
      ignore_eos: true, stream: true }, { signal: ac.signal });
    const it = busy[Symbol.asyncIterator]();
    await it.next();  // the slot is taken
    const err = await c.completions.create({ model: 'q', prompt: 'x', max_tokens: 1 }).catch((e) => e);
    assert.ok(err instanceof OpenAI.RateLimitError, String(err));
    assert.equal(err.status, 429);
    assert.equal(err.error.type, 'rate_limit_error');
    // The busy client goes away (rather than read 3,000 tokens, a minute
    // under TSan): its disconnect frees the slot, and the server admits again
    // within a few steps.
    ac.abort();
    await it.next().catch(() => {});
    const deadline = Date.now() + 30000;
    let ok;
    while (ok === undefined) {
      ok = await c.completions.create({ model: 'q', prompt: 'x', max_tokens: 2 }).catch((e) => {
        if (!(e instanceof OpenAI.RateLimitError) || Date.now() > deadline) throw e;
        return new Promise((r) => setTimeout(r, 50)).then(() => undefined);
      });
    }
    assert.equal(ok.choices.length, 1);
  } finally {
    proc.kill('SIGTERM');
  }
});

// strata router in front of real `strata serve` processes on loopback (the
// small test model, one thread each): outputs through the router equal the
// replicas' own; multi-turn prefix reuse through a cache-aware router equals
// a single replica's; a SIGKILLed replica costs no request that had not
// started streaming, and rejoins once restarted; SIGHUP reloads the list.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, metric, post, sleep, startReplica, startRouter, stop, stream, waitFor }
  from './fleet.mjs';

const started = [];
async function replica(opts) { const r = await startReplica(opts); started.push(r); return r; }
async function router(urls, extra) { const r = await startRouter(urls, extra); started.push(r); return r; }
after(async () => { for (const p of started) await stop(p, 'SIGKILL'); });

const greedy = { temperature: 0, max_tokens: 8, ignore_eos: true };

test('greedy outputs through the router equal the replicas\' own', async () => {
  const reps = await Promise.all([replica(), replica(), replica()]);
  const r = await router(reps.map((x) => x.url));
  const cases = [
    ['/v1/completions', { prompt: 'Once upon a time there was', ...greedy }],
    ['/v1/completions', { prompt: [5, 17, 99, 230, 41, 8, 300], ...greedy }],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'Tell me a story.' }], ...greedy }],
    ['/v1/chat/completions', { messages: [{ role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is two plus two?' }], ...greedy }],
  ];
  for (const [p, body] of cases) {
    const direct = await post(reps[2].url, p, body);
    const routed = await post(r.url, p, body);
    assert.equal(routed.status, 200, routed.text);
    const text = (j) => j.choices[0].text ?? j.choices[0].message.content;
    assert.equal(text(routed.json), text(direct.json), `${p} ${JSON.stringify(body)}`);
    assert.equal(routed.json.usage.prompt_tokens, direct.json.usage.prompt_tokens);
    const s = await stream(r.url, p, body);
    assert.equal(s.error, null);
    assert.ok(s.done);
    assert.equal(s.text, text(direct.json));
    assert.equal(s.usage.completion_tokens, 8);
  }
  // The router's own routes, and the union of models.
  assert.equal((await fetch(`${r.url}/health`)).status, 200);
  const models = await (await fetch(`${r.url}/v1/models`)).json();
  assert.deepEqual(models.data.map((m) => m.id), ['fleet']);
  const tok = await post(r.url, '/tokenize', { prompt: 'hello there' });
  assert.deepEqual(tok.json, (await post(reps[0].url, '/tokenize', { prompt: 'hello there' })).json);
  const metrics = await (await fetch(`${r.url}/metrics`)).text();
  assert.match(metrics, /^strata_router_added_latency_seconds_count \d+$/m);
});

// Three interleaved conversations of three turns; the summed cached_tokens.
async function multiTurn(url, tag) {
  const convs = [0, 1, 2].map((c) => [{ role: 'system',
    content: `You are assistant ${tag}${c} of the river valley.` }]);
  let cached = 0;
  for (let turn = 0; turn < 3; ++turn) {
    for (const msgs of convs) {
      msgs.push({ role: 'user', content: `And then ${turn}?` });
      const res = await post(url, '/v1/chat/completions', { messages: msgs, ...greedy,
        max_tokens: 4 });
      assert.equal(res.status, 200, res.text);
      cached += res.json.usage.prompt_tokens_details.cached_tokens;
      msgs.push({ role: 'assistant', content: res.json.choices[0].message.content });
    }
  }
  return cached;
}

test('multi-turn cached_tokens through a cache-aware router equal a single replica\'s', async () => {
  const single = await replica();
  const alone = await multiTurn(single.url, 'x');
  const reps = await Promise.all([replica(), replica(), replica()]);
  const r = await router(reps.map((x) => x.url), ['--policy', 'cache-aware']);
  const routed = await multiTurn(r.url, 'x');
  assert.ok(alone > 0, 'the workload must reuse prefixes');
  assert.equal(routed, alone);
});

test('a SIGKILLed replica costs no request that had not started streaming; restarted, it rejoins',
  async () => {
    const reps = await Promise.all([replica(), replica(), replica()]);
    const r = await router(reps.map((x) => x.url), ['--policy', 'round-robin']);
    const victim = reps[1];
    const port = victim.port;
    const results = [];
    let killed = false;
    let startedAfterKill = 0;
    const worker = async (w) => {
      for (let i = 0; i < 6; ++i) {
        if (killed) ++startedAfterKill;
        results.push(await stream(r.url, '/v1/completions',
          { prompt: `worker ${w} request ${i} tells a tale`, temperature: 0, max_tokens: 100,
            ignore_eos: true }));
        if (results.length === 3 && !killed) {
          killed = true;
          victim.proc.kill('SIGKILL');
        }
      }
    };
    await Promise.all([0, 1, 2, 3].map(worker));
    assert.ok(startedAfterKill >= 8, 'requests must keep coming after the kill');
    assert.equal(results.length, 24);
    for (const s of results) {
      if (s.error !== null) {
        assert.ok(s.started, `a request failed before its first byte: ${s.error}`);
        assert.ok(s.done, 'a broken stream still ends with [DONE]');
      } else {
        assert.ok(s.done);
      }
    }
    assert.ok(results.filter((s) => s.error === null).length >= 20);
    // The router ejected it; restarted on the same port it comes back.
    assert.equal(await metric(r.url, 'strata_router_replica_available', victim.url), 0);
    const back = await replica({ port });
    assert.ok(await waitFor(async () =>
      (await metric(r.url, 'strata_router_replica_available', back.url)) === 1));
    const before = await metric(r.url, 'strata_router_replica_routed_total', back.url);
    for (let i = 0; i < 6; ++i) {
      assert.equal((await post(r.url, '/v1/completions', { prompt: `after ${i}`, ...greedy })).status,
        200);
    }
    assert.ok(await metric(r.url, 'strata_router_replica_routed_total', back.url) >= before + 2);
  });

test('SIGHUP reloads --replicas-file: replicas are added and removed without a restart', async () => {
  const [a, b] = await Promise.all([replica(), replica()]);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-router-'));
  const file = path.join(dir, 'replicas');
  fs.writeFileSync(file, `# the fleet\n${a.url}\n`);
  const r = await router([], ['--replicas-file', file]);
  for (let i = 0; i < 3; ++i) await post(r.url, '/v1/completions', { prompt: `a${i}`, ...greedy });
  assert.equal(await metric(r.url, 'strata_router_replica_routed_total', a.url), 3);
  fs.writeFileSync(file, `${b.url}\n`);
  r.proc.kill('SIGHUP');
  assert.ok(await waitFor(() => /reloaded/.test(r.log())));
  for (let i = 0; i < 3; ++i) {
    assert.equal((await post(r.url, '/v1/completions', { prompt: `b${i}`, ...greedy })).status, 200);
  }
  assert.equal(await metric(r.url, 'strata_router_replica_routed_total', b.url), 3);
  assert.ok(Number.isNaN(await metric(r.url, 'strata_router_replica_routed_total', a.url)));
  // A broken file keeps the list.
  fs.writeFileSync(file, 'ftp://nope\n');
  r.proc.kill('SIGHUP');
  assert.ok(await waitFor(() => /keeping the replica list/.test(r.log())));
  assert.equal((await post(r.url, '/v1/completions', { prompt: 'c', ...greedy })).status, 200);
  fs.rmSync(dir, { recursive: true });
});

test('bad command lines are one clear error line and exit 1', async () => {
  const { spawnSync } = await import('node:child_process');
  const { BIN, MODEL } = await import('./fleet.mjs');
  const cases = [
    [['router', '-m', MODEL, '--port', '0'], /no replicas/],
    [['router', '-m', MODEL, '--port', '0', '--replica', 'ftp://x:1'], /only http:\/\/ replicas/],
    [['router', '-m', MODEL, '--port', '0', '--replica', 'http://h:1', '--policy', 'random'],
      /unknown --policy 'random'/],
    [['router', '-m', '/nonexistent.gguf', '--port', '0', '--replica', 'http://h:1'], /error: /],
    [['router', '-m', MODEL, '--port', '0', '--replicas-file', '/nonexistent'],
      /cannot read --replicas-file/],
  ];
  for (const [args, re] of cases) {
    const r = spawnSync(BIN, args, { encoding: 'utf8', timeout: 20000 });
    assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
  }
});

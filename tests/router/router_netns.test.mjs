// strata router across real links: each replica runs in its own network
// namespace behind a veth pair (with 1 ms of netem delay when tc has it),
// so routing, probes, health checks and failover cross a link rather than
// loopback. Needs root and iproute2 (CI runs as root); skips otherwise.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { metric, post, startReplica, startRouter, stop, stream, waitFor } from './fleet.mjs';

const N = 3;
const tag = process.pid % 10000;
const net = 200 + (process.pid % 50);  // 10.<net>.<i>.0/24
const names = [...Array(N).keys()].map((i) => ({
  ns: `strata-rt-${tag}-${i}`, host: `srt${tag}h${i}`, peer: `srt${tag}p${i}`,
  hostIp: `10.${net}.${i}.1`, peerIp: `10.${net}.${i}.2` }));

function ip(...args) { execFileSync('ip', args, { stdio: 'pipe' }); }

function whyNot() {
  if (process.getuid?.() !== 0) return 'not root';
  try { execFileSync('ip', ['-V'], { stdio: 'pipe' }); } catch { return 'no `ip` (iproute2)'; }
  const probe = `strata-rt-probe-${tag}`;
  try { ip('netns', 'add', probe); ip('netns', 'del', probe); } catch (e) {
    return `cannot create network namespaces: ${String(e.stderr ?? e).trim()}`;
  }
  return null;
}

const skip = whyNot();
const started = [];
after(async () => {
  for (const p of started) await stop(p, 'SIGKILL');
  for (const n of names) { try { ip('netns', 'del', n.ns); } catch { /* not made */ } }
});

function makeLink(n) {
  ip('netns', 'add', n.ns);
  ip('link', 'add', n.host, 'type', 'veth', 'peer', 'name', n.peer);
  ip('link', 'set', n.peer, 'netns', n.ns);
  ip('addr', 'add', `${n.hostIp}/24`, 'dev', n.host);
  ip('link', 'set', n.host, 'up');
  ip('-n', n.ns, 'addr', 'add', `${n.peerIp}/24`, 'dev', n.peer);
  ip('-n', n.ns, 'link', 'set', n.peer, 'up');
  ip('-n', n.ns, 'link', 'set', 'lo', 'up');
  try {
    execFileSync('tc', ['qdisc', 'add', 'dev', n.host, 'root', 'netem', 'delay', '1ms'],
      { stdio: 'pipe' });
  } catch { /* no tc or no netem: a plain veth link */ }
}

test('each replica in its own network namespace behind a veth link', { skip: skip ?? false },
  async () => {
    for (const n of names) makeLink(n);
    const reps = [];
    for (const n of names) {
      const r = await startReplica({ host: n.peerIp, prefix: ['ip', 'netns', 'exec', n.ns] });
      r.url = `http://${n.peerIp}:${r.port}`;
      started.push(r);
      reps.push(r);
    }
    const router = await startRouter(reps.map((r) => r.url));
    started.push(router);
    const body = { prompt: 'Across the wire we go', temperature: 0, max_tokens: 8, ignore_eos: true };
    const direct = await post(reps[1].url, '/v1/completions', body);
    assert.equal(direct.status, 200, direct.text);
    const routed = await post(router.url, '/v1/completions', body);
    assert.equal(routed.status, 200, routed.text);
    assert.equal(routed.json.choices[0].text, direct.json.choices[0].text);
    const s = await stream(router.url, '/v1/completions', body);
    assert.equal(s.error, null);
    assert.equal(s.text, direct.json.choices[0].text);

    // Cut replica 0's link: requests keep succeeding on the others, and
    // the router ejects it; restored, it is re-admitted.
    ip('link', 'set', names[0].host, 'down');
    for (let i = 0; i < 6; ++i) {
      const r = await post(router.url, '/v1/completions', { ...body, prompt: `cut ${i}` });
      assert.equal(r.status, 200, r.text);
    }
    assert.ok(await waitFor(async () =>
      (await metric(router.url, 'strata_router_replica_available', reps[0].url)) === 0));
    ip('link', 'set', names[0].host, 'up');
    assert.ok(await waitFor(async () =>
      (await metric(router.url, 'strata_router_replica_available', reps[0].url)) === 1));
  });

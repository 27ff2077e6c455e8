// Helpers of the router's multi-process tests: `strata serve` replicas and
// `strata router` processes on loopback (or inside network namespaces), and
// plain-fetch OpenAI calls (no client library needed). Every process is
// started here and killed by its PID.
import { spawn } from 'node:child_process';
import net from 'node:net';

export const BIN = process.env.STRATA_BIN;
export const MODEL = process.env.STRATA_MODEL_PATH;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function freePort() {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
  });
}

// Spawns `cmd args`; resolves once stderr says "listening on http://H:P".
// `prefix` runs it through another command (ip netns exec NAME).
export function spawnListening(args, { prefix = [], timeoutMs = 60000 } = {}) {
  return new Promise((resolve, reject) => {
    const argv = [...prefix, BIN, ...args];
    const env = { ...process.env };
    delete env.STRATA_API_KEY;  // replicas without auth
    const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], env });
    let err = '';
    let done = false;
    const timer = setTimeout(() => {
      if (!done) { done = true; proc.kill('SIGKILL'); reject(new Error(`no listen line: ${err}`)); }
    }, timeoutMs);
    proc.stderr.on('data', (d) => {
      err += d;
      const m = /listening on http:\/\/[^:\s]+:(\d+)/.exec(err);
      if (m && !done) {
        done = true;
        clearTimeout(timer);
        resolve({ proc, port: Number(m[1]), log: () => err });
      }
    });
    proc.on('exit', (code) => {
      if (!done) { done = true; clearTimeout(timer); reject(new Error(`exited ${code}: ${err}`)); }
    });
  });
}

export async function startReplica({ port = 0, host = '127.0.0.1', prefix = [], extra = [] } = {}) {
  const r = await spawnListening(['serve', '-m', MODEL, '--host', host, '--port', String(port),
    '--log-interval', '0', '-t', '1', '--kv-cache-memory', '16MiB', '--served-model-name', 'fleet',
    ...extra], { prefix });
  r.url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${r.port}`;
  return r;
}

export async function startRouter(replicaUrls, extra = [], { prefix = [] } = {}) {
  const args = ['router', '-m', MODEL, '--port', '0', '--health-interval-ms', '100',
    '--failure-threshold', '1'];
  for (const u of replicaUrls) args.push('--replica', u);
  const r = await spawnListening([...args, ...extra], { prefix });
  r.url = `http://127.0.0.1:${r.port}`;
  return r;
}

export function stop(p, signal = 'SIGTERM') {
  return new Promise((resolve) => {
    if (p.proc.exitCode !== null || p.proc.signalCode !== null) { resolve(); return; }
    p.proc.on('exit', () => resolve());
    p.proc.kill(signal);
  });
}

export async function post(url, path, body, headers = {}) {
  const res = await fetch(`${url}${path}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* a stream or an error page */ }
  return { status: res.status, text, json };
}

// A streaming request read to the end: the text, the usage, whether any
// content arrived before a failure, and the error if one came.
export async function stream(url, path, body) {
  const out = { text: '', usage: null, started: false, error: null, done: false, status: 0 };
  try {
    const res = await fetch(`${url}${path}`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }) });
    out.status = res.status;
    if (res.status !== 200) { out.error = `status ${res.status}: ${await res.text()}`; return out; }
    const decoder = new TextDecoder();
    let buf = '';
    for await (const chunk of res.body) {
      buf += decoder.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = ev.replace(/^data: /, '');
        if (data === '[DONE]') { out.done = true; continue; }
        const j = JSON.parse(data);
        if (j.error) { out.error = j.error.message; continue; }
        out.started = true;
        for (const c of j.choices ?? []) out.text += c.delta?.content ?? c.text ?? '';
        if (j.usage) out.usage = j.usage;
      }
    }
  } catch (e) {
    out.error = String(e);
  }
  return out;
}

export async function metric(url, name, replica) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const esc = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const re = new RegExp(`^${esc(name)}\\{replica="${esc(replica)}"\\} (\\S+)$`, 'm');
  const m = re.exec(text);
  return m ? Number(m[1]) : NaN;
}

export async function waitFor(cond, ms = 20000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return true;
    await sleep(50);
  }
  return false;
}

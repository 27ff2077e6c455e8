// Shared helpers of the e2e tests: the official client, raw HTTP over a
// socket (for malformed input) and /metrics parsing.
import { createRequire } from 'node:module';
import { spawn } from 'node:child_process';
import net from 'node:net';

const require = createRequire(new URL('../../oracle/package.json', import.meta.url));
export const OpenAI = require('openai');

export const baseURL = process.env.STRATA_BASE_URL;
export const apiKey = process.env.STRATA_API_KEY;
export const model = process.env.STRATA_MODEL;
const url = new URL(baseURL);
export const host = url.hostname;
export const port = Number(url.port);

export function client(opts = {}) {
  return new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, maxRetries: 0, timeout: 60000, ...opts });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Sends `payload` (string or Buffer) on a fresh connection; resolves with
// {status, body, closed, error} once the server answers or closes.
export function raw(payload, { timeoutMs = 10000, end = false } = {}) {
  return new Promise((resolve) => {
    const sock = net.connect(port, host);
    let data = Buffer.alloc(0);
    let done = false;
    const finish = (error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      const text = data.toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      const sep = text.indexOf('\r\n\r\n');
      resolve({ status: m ? Number(m[1]) : 0, body: sep >= 0 ? text.slice(sep + 4) : '', error });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    sock.on('data', (d) => {
      data = Buffer.concat([data, d]);
      const text = data.toString('latin1');
      const sep = text.indexOf('\r\n\r\n');
      if (sep < 0) return;
      const cl = /content-length: *(\d+)/i.exec(text.slice(0, sep));
      if (cl && data.length >= sep + 4 + Number(cl[1])) finish();
    });
    sock.on('error', (e) => finish(e.code || String(e)));
    sock.on('close', () => finish());
    sock.write(payload, () => { if (end) sock.end(); });
  });
}

// A POST with a raw body and correct Content-Length.
export function rawPost(path, body, headers = {}) {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body);
  let head = `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${apiKey}\r\n` +
             `Content-Type: application/json\r\nContent-Length: ${buf.length}\r\nConnection: close\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  return raw(Buffer.concat([Buffer.from(head + '\r\n'), buf]));
}

export async function metrics() {
  const res = await fetch(`${baseURL}/metrics`, { headers: { Authorization: `Bearer ${apiKey}` } });
  const text = await res.text();
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z0-9_:]+)(\{[^}]*\})? (.+)$/.exec(line);
    if (m) out[m[1] + (m[2] && m[1].includes('request_success') ? m[2] : '')] = Number(m[3]);
  }
  return out;
}

// A served request proving the server is healthy.
export async function canary() {
  const c = client();
  const r = await c.completions.create({ model, prompt: 'canary', max_tokens: 3, temperature: 0 });
  if (r.choices.length !== 1 || r.usage.completion_tokens < 1) throw new Error('canary failed');
  const h = await fetch(`${baseURL}/health`);
  if (h.status !== 200) throw new Error(`health ${h.status}`);
}

// A `strata serve` of its own on a free port (the e2e model, one thread, no
// auth); resolves with {proc, url, log} once it listens.
export function startServer(args) {
  const env = { ...process.env };
  delete env.STRATA_API_KEY;
  return new Promise((resolve, reject) => {
    const proc = spawn(process.env.STRATA_BIN, ['serve', '-m', process.env.STRATA_MODEL_PATH,
      '--port', '0', '--log-interval', '0', '-t', '1', ...args], { env });
    let err = '';
    let done = false;
    proc.stderr.on('data', (d) => {
      err += d;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(err);
      if (m && !done) {
        done = true;
        resolve({ proc, url: `http://127.0.0.1:${m[1]}`, log: () => err });
      }
    });
    proc.on('exit', (code) => { if (!done) reject(new Error(`server exited ${code}: ${err}`)); });
  });
}

// SIGTERM (or `signal`) to a server startServer started; resolves with its exit code.
export function stopServer(s, signal = 'SIGTERM') {
  return new Promise((resolve) => {
    if (s.proc.exitCode !== null || s.proc.signalCode !== null) { resolve(s.proc.exitCode); return; }
    s.proc.on('exit', (code) => resolve(code));
    s.proc.kill(signal);
  });
}

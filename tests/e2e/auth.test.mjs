// Auth on every route: missing or wrong keys get 401 with the OpenAI body;
// /health stays open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenAI, client, model, baseURL, apiKey } from './helpers.mjs';

const routes = [
  ['GET', '/v1/models'], ['GET', `/v1/models/${model}`], ['GET', '/metrics'],
  ['POST', '/v1/completions'], ['POST', '/v1/chat/completions'], ['POST', '/tokenize'],
  ['POST', '/detokenize'], ['GET', '/no/such/route'],
];

for (const [method, path] of routes) {
  for (const [label, header] of [['missing', undefined], ['wrong', 'Bearer nope'],
    ['prefix of the key', `Bearer ${apiKey.slice(0, -1)}`], ['not bearer', apiKey]]) {
    test(`401 ${method} ${path} with a ${label} key`, async () => {
      const headers = { 'Content-Type': 'application/json' };
      if (header) headers.Authorization = header;
      const res = await fetch(`${baseURL}${path}`, {
        method, headers, body: method === 'POST' ? '{"prompt":"x","tokens":[1]}' : undefined,
      });
      assert.equal(res.status, 401);
      const body = await res.json();
      assert.equal(body.error.type, 'authentication_error');
    });
  }
}

test('/health needs no key', async () => {
  assert.equal((await fetch(`${baseURL}/health`)).status, 200);
});

test('the client with a wrong key gets AuthenticationError', async () => {
  const c = client({ apiKey: 'wrong' });
  await assert.rejects(c.completions.create({ model, prompt: 'x', max_tokens: 1 }),
                       OpenAI.AuthenticationError);
  await assert.rejects(c.models.list(), OpenAI.AuthenticationError);
});

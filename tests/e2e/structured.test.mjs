// Structured outputs and tool calls with the official client (issue 18,
// items 3-4). The e2e model has random weights: sampling at temperature 1,
// the grammar alone guarantees the structure. Outputs are validated with
// Python's jsonschema (Debian python3-jsonschema) as the oracle. Schemas are
// small: the model's context is 256 tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { OpenAI, client, model, metrics, startServer, stopServer } from './helpers.mjs';

// Every instance against its schema; returns the error messages ('' = valid).
function validate(pairs) {
  const code = `
import json, sys, jsonschema
out = []
for schema, instance in json.load(sys.stdin):
    try:
        jsonschema.validate(instance, schema, format_checker=jsonschema.FormatChecker())
        out.append('')
    except jsonschema.ValidationError as e:
        out.append(e.message)
print(json.dumps(out))`;
  const r = spawnSync('python3', ['-c', code], { input: JSON.stringify(pairs), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

function assertValid(schema, texts) {
  const instances = texts.map((t) => {
    try {
      return JSON.parse(t);
    } catch (e) {
      assert.fail(`not JSON: ${JSON.stringify(t)}`);
    }
    return null;
  });
  const errors = validate(instances.map((i) => [schema, i]));
  errors.forEach((e, k) => assert.equal(e, '', `${texts[k]} does not validate: ${e}`));
}

const schema = {
  type: 'object',
  properties: {
    n: { type: 'integer', minimum: 0, maximum: 99 },
    c: { enum: ['red', 'blue'] },
    ok: { type: 'boolean' },
  },
  required: ['n', 'c'],
  additionalProperties: false,
};
const messages = [{ role: 'user', content: 'json' }];
const responseFormat = { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } };

test('response_format json_schema: every finished output parses and validates', async () => {
  const c = client();
  const r = await c.chat.completions.create({
    model, messages, max_tokens: 200, temperature: 1, n: 4, response_format: responseFormat,
  });
  const done = r.choices.filter((ch) => ch.finish_reason === 'stop');
  assert.ok(done.length >= 1, JSON.stringify(r.choices));
  assertValid(schema, done.map((ch) => ch.message.content));
});

test('response_format json_schema streamed: assembled content validates', async () => {
  const c = client();
  for (let i = 0; i < 3; ++i) {
    const stream = await c.chat.completions.create({
      model, messages, max_tokens: 200, temperature: 1, stream: true, response_format: responseFormat,
    });
    let text = '';
    let reason = null;
    for await (const chunk of stream) {
      for (const ch of chunk.choices) {
        text += ch.delta?.content ?? '';
        if (ch.finish_reason) reason = ch.finish_reason;
      }
    }
    if (reason === 'stop') assertValid(schema, [text]);
    else assert.equal(reason, 'length');
  }
});

test('json_object, guided_* and structured_outputs on completions', async () => {
  const c = client();
  const obj = await c.chat.completions.create({
    model, messages, max_tokens: 120, temperature: 1, response_format: { type: 'json_object' },
  });
  if (obj.choices[0].finish_reason === 'stop') {
    const v = JSON.parse(obj.choices[0].message.content);
    assert.equal(typeof v, 'object');
    assert.ok(v !== null && !Array.isArray(v));
  }
  const choice = await c.completions.create({
    model, prompt: 'pick', max_tokens: 20, temperature: 1, n: 4, guided_choice: ['alpha', 'beta'],
  });
  for (const ch of choice.choices) {
    assert.ok(['alpha', 'beta'].includes(ch.text), ch.text);
    assert.equal(ch.finish_reason, 'stop');
  }
  const regex = await c.completions.create({
    model, prompt: 'n', max_tokens: 20, temperature: 1,
    structured_outputs: { regex: '[0-9]{3}-[a-c]{2}' },
  });
  assert.match(regex.choices[0].text, /^[0-9]{3}-[a-c]{2}$/);
  const gj = await c.completions.create({
    model, prompt: 'j', max_tokens: 200, temperature: 1, guided_json: schema,
  });
  if (gj.choices[0].finish_reason === 'stop') assertValid(schema, [gj.choices[0].text]);
  const gbnf = await c.completions.create({
    model, prompt: 'g', max_tokens: 20, temperature: 1,
    guided_grammar: 'root ::= "(" [a-z] [a-z]? ")"',
  });
  assert.match(gbnf.choices[0].text, /^\([a-z]{1,2}\)$/);
});

test('max_tokens cutting a structure finishes with length', async () => {
  const c = client();
  const r = await c.chat.completions.create({
    model, messages, max_tokens: 2, temperature: 1, response_format: responseFormat,
  });
  assert.equal(r.choices[0].finish_reason, 'length');
});

test('constraint errors are 400s naming the field, keyword and path', async () => {
  const c = client();
  await assert.rejects(c.chat.completions.create({
    model, messages, max_tokens: 5,
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {
      type: 'object', properties: { a: { type: 'string', patternProperties: {} } } } } },
  }), (e) => e.status === 400 && e.error.param === 'response_format' &&
    e.error.message.includes("'patternProperties'") && e.error.message.includes('$.properties.a'));
  await assert.rejects(c.completions.create({
    model, prompt: 'a', max_tokens: 5, guided_regex: 'a', guided_choice: ['a'],
  }), (e) => e.status === 400 && e.error.param === 'guided_choice');
  await assert.rejects(c.completions.create({
    model, prompt: 'a', max_tokens: 5, guided_regex: '(a',
  }), (e) => e.status === 400 && e.error.param === 'guided_regex');
  await assert.rejects(c.chat.completions.create({
    model, messages, max_tokens: 5, tools, tool_choice: 'required', response_format: responseFormat,
  }), (e) => e.status === 400 && e.error.param === 'tool_choice');
});

const weatherParams = {
  type: 'object',
  properties: { city: { enum: ['Paris', 'Oslo'] }, days: { type: 'integer', minimum: 1, maximum: 7 } },
  required: ['city', 'days'],
};
const addParams = {
  type: 'object',
  properties: { a: { type: 'integer', minimum: 0, maximum: 9 } },
  required: ['a'],
};
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'w', parameters: weatherParams } },
  { type: 'function', function: { name: 'add', parameters: addParams } },
];
const paramsOf = { get_weather: weatherParams, add: addParams };

function checkCalls(calls, { named, single }) {
  assert.ok(calls.length >= 1);
  if (single) assert.equal(calls.length, 1);
  for (const call of calls) {
    assert.equal(call.type, 'function');
    assert.ok(call.id.startsWith('call_'), call.id);
    assert.ok(call.function.name in paramsOf, call.function.name);
    if (named) assert.equal(call.function.name, named);
    assertValid(paramsOf[call.function.name], [call.function.arguments]);
  }
}

async function streamCalls(c, body) {
  const stream = await c.chat.completions.create({ ...body, stream: true });
  const calls = [];
  let content = '';
  let reason = null;
  for await (const chunk of stream) {
    for (const ch of chunk.choices) {
      content += ch.delta?.content ?? '';
      for (const t of ch.delta?.tool_calls ?? []) {
        if (!calls[t.index]) {
          assert.ok(t.id && t.function?.name, 'the first delta of a call has its id and name');
          calls[t.index] = { id: t.id, type: t.type, function: { name: t.function.name, arguments: '' } };
        } else {
          assert.equal(t.id, undefined);
        }
        calls[t.index].function.arguments += t.function?.arguments ?? '';
      }
      if (ch.finish_reason) reason = ch.finish_reason;
    }
  }
  return { calls, content, reason };
}

test('tool_choice required: always a call with valid arguments; stream == non-stream', async () => {
  const c = client();
  for (let seed = 1; seed <= 4; ++seed) {
    for (const parallel of [true, false]) {
      const body = {
        model, messages: [{ role: 'user', content: 'weather?' }], max_tokens: 200, temperature: 1,
        seed, tools, tool_choice: 'required', parallel_tool_calls: parallel,
      };
      const r = await c.chat.completions.create(body);
      const ch = r.choices[0];
      if (ch.finish_reason === 'length') continue;  // cut mid-call by the 256-token context
      assert.equal(ch.finish_reason, 'tool_calls', JSON.stringify(ch));
      checkCalls(ch.message.tool_calls, { single: !parallel });
      const s = await streamCalls(c, body);
      assert.equal(s.reason, 'tool_calls');
      assert.deepEqual(s.calls.map((t) => t.function), ch.message.tool_calls.map((t) => t.function));
      assert.equal(s.content, ch.message.content ?? '');
    }
  }
});

test('tool_choice naming a function calls that function', async () => {
  const c = client();
  const r = await c.chat.completions.create({
    model, messages: [{ role: 'user', content: 'add' }], max_tokens: 150, temperature: 1, n: 3,
    tools, tool_choice: { type: 'function', function: { name: 'add' } },
  });
  let called = 0;
  for (const ch of r.choices) {
    if (ch.finish_reason === 'length') continue;
    assert.equal(ch.finish_reason, 'tool_calls');
    checkCalls(ch.message.tool_calls, { named: 'add' });
    ++called;
  }
  assert.ok(called >= 1, JSON.stringify(r.choices));
});

test('tools with auto or none: free text, a 400 for a bad tool', async () => {
  const c = client();
  const r = await c.chat.completions.create({
    model, messages, max_tokens: 8, temperature: 1, tools, tool_choice: 'none',
  });
  assert.equal(typeof r.choices[0].message.content, 'string');
  const a = await c.chat.completions.create({ model, messages, max_tokens: 8, temperature: 1, tools });
  assert.ok(['stop', 'length', 'tool_calls'].includes(a.choices[0].finish_reason));
  await assert.rejects(c.chat.completions.create({
    model, messages, max_tokens: 5, tools: [{ type: 'function', function: { name: 'bad name' } }],
  }), (e) => e.status === 400 && e.error.param === 'tools[0].function.name');
  await assert.rejects(c.chat.completions.create({
    model, messages, max_tokens: 5, tools, tool_choice: { type: 'function', function: { name: 'nope' } },
  }), (e) => e.status === 400 && e.error.param === 'tool_choice.function.name');
});

test('--tool-call-parser llama3_json and mistral: required calls parse in that syntax', async () => {
  for (const parser of ['llama3_json', 'mistral']) {
    const server = await startServer(['--tool-call-parser', parser, '--served-model-name', 'tp']);
    try {
      const c = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0 });
      let called = 0;
      for (let seed = 1; seed <= 3; ++seed) {
        const body = {
          model: 'tp', messages: [{ role: 'user', content: 'go' }], max_tokens: 150,
          temperature: 1, seed, tools, tool_choice: { type: 'function', function: { name: 'add' } },
          parallel_tool_calls: false,
        };
        const r = await c.chat.completions.create(body);
        const ch = r.choices[0];
        if (ch.finish_reason === 'length') continue;
        assert.equal(ch.finish_reason, 'tool_calls', `${parser}: ${JSON.stringify(ch)}`);
        checkCalls(ch.message.tool_calls, { named: 'add', single: true });
        const s = await streamCalls(c, body);
        assert.deepEqual(s.calls.map((t) => t.function), ch.message.tool_calls.map((t) => t.function));
        ++called;
      }
      assert.ok(called >= 1, parser);
      const m = await (await fetch(`${server.url}/metrics`)).text();
      assert.match(m, /strata_structured_output_violations_total\{model_name="tp"\} 0/);
    } finally {
      await stopServer(server);
    }
  }
});

test('/metrics counts structured output violations (none)', async () => {
  const m = await metrics();
  assert.equal(m.strata_structured_output_violations_total, 0);
});

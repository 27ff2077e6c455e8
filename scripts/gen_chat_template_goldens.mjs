// Renders chat templates with @huggingface/jinja (the Jinja of
// transformers.js) into tests/server/data/chat_template_goldens.json, which
// tests/server/chat_template_golden_test.cpp compares strata's native
// renderer against, byte for byte.
//
// The templates are written here in the style of each family's published
// template (ChatML / Qwen2.5 default system, Llama 3, Llama 3.1 dated
// header, Llama 2, Mistral, Gemma, Phi-3), without tool calling. A leading
// BOS is stripped from the expected text: strata's tokenizer adds it.
// Usage: node scripts/gen_chat_template_goldens.mjs
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';

const require = createRequire(new URL('../oracle/package.json', import.meta.url));
const { Template } = require('@huggingface/jinja');

const templates = {
  chatml: "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
  qwen25: "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}{%- endif %}{%- for message in messages %}{%- if not (message.role == 'system' and loop.first) %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
  llama3: "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}",
  llama31: "{{- bos_token }}{%- if not date_string is defined %}{%- set date_string = '26 Jul 2024' %}{%- endif %}{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}{%- else %}{%- set system_message = '' %}{%- endif %}{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}{{- 'Cutting Knowledge Date: December 2023\\n' }}{{- 'Today Date: ' + date_string + '\\n\\n' }}{{- system_message }}{{- '<|eot_id|>' }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}",
  llama2: "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
  mistral: "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% endif %}{% endfor %}",
  gemma: "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}",
  phi3: "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\\n' + message['content'] + '<|end|>\\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\\n' + message['content'] + '<|end|>\\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}",
};
const special = {
  chatml: ['', '<|im_end|>'], qwen25: ['', '<|im_end|>'], llama3: ['<|begin_of_text|>', '<|eot_id|>'],
  llama31: ['<|begin_of_text|>', '<|eot_id|>'], llama2: ['<s>', '</s>'], mistral: ['<s>', '</s>'],
  gemma: ['<bos>', '<eos>'], phi3: ['<s>', '<|endoftext|>'],
};
const chats = {
  user: [{ role: 'user', content: 'Hello there!' }],
  system_user: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: ' What is 2+2? ' }],
  multi_turn: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello! How can I help?' },
    { role: 'user', content: 'Tell me a joke.\nA short one.' }],
  unicode: [{ role: 'user', content: 'Grüße, 世界 🌍' }],
};
// Families whose published templates reject a system turn.
const noSystem = new Set(['mistral', 'gemma']);

const cases = [];
for (const [name, src] of Object.entries(templates)) {
  const [bos, eos] = special[name];
  for (const [chatName, messages] of Object.entries(chats)) {
    if (noSystem.has(name) && messages[0].role === 'system') continue;
    for (const add of [true, false]) {
      let text = new Template(src).render({ messages, add_generation_prompt: add, bos_token: bos, eos_token: eos });
      if (bos && text.startsWith(bos)) text = text.slice(bos.length);
      cases.push({ template: name, chat: chatName, add_generation_prompt: add, source: src, messages, expected: text });
    }
  }
}
const out = new URL('../tests/server/data/chat_template_goldens.json', import.meta.url);
writeFileSync(out, JSON.stringify({ generator: 'scripts/gen_chat_template_goldens.mjs', jinja: '@huggingface/jinja@0.5.11', cases }, null, 1) + '\n');
console.log(`${cases.length} cases -> ${out.pathname}`);

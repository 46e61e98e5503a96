// Talks to a running ruvllmd over loopback TCP with the official openai and
// ollama npm clients and checks the answers' shapes. Environment:
// RUVLLM_URL (http://127.0.0.1:PORT), RUVLLM_TOKEN (bearer token),
// RUVLLM_MODEL (a model name the daemon serves). Exits non-zero on the
// first failed check. Run by clients_test.go.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { Ollama } from 'ollama';

const base = process.env.RUVLLM_URL;
const token = process.env.RUVLLM_TOKEN;
const model = process.env.RUVLLM_MODEL;
assert.ok(base && token && model, 'RUVLLM_URL, RUVLLM_TOKEN and RUVLLM_MODEL must be set');

const checks = [];
async function check(name, fn) {
  await fn();
  checks.push(name);
}

const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: token, maxRetries: 0 });

await check('openai chat', async () => {
  const r = await openai.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Say hi' }], max_tokens: 4, temperature: 0, seed: 1,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
});

await check('openai chat stream', async () => {
  const stream = await openai.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Say hi' }], max_tokens: 4, temperature: 0,
    stream: true, stream_options: { include_usage: true },
  });
  let chunks = 0, finish = null, usage = null;
  for await (const c of stream) {
    chunks++;
    assert.equal(c.object, 'chat.completion.chunk');
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) if (ch.finish_reason) finish = ch.finish_reason;
  }
  assert.ok(chunks >= 2, `only ${chunks} chunks`);
  assert.ok(['stop', 'length'].includes(finish));
  assert.ok(usage && usage.completion_tokens <= 4);
});

await check('openai completion', async () => {
  const r = await openai.completions.create({ model, prompt: 'Once upon', max_tokens: 3, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(typeof r.choices[0].text, 'string');
});

await check('openai models', async () => {
  const ids = [];
  for await (const m of openai.models.list()) ids.push(m.id);
  assert.ok(ids.includes(model), `models ${ids}`);
});

await check('openai embeddings', async () => {
  const r = await openai.embeddings.create({ model, input: ['one', 'two'], encoding_format: 'float' });
  assert.equal(r.data.length, 2);
  assert.ok(r.data[0].embedding.length > 0);
});

await check('openai errors', async () => {
  await assert.rejects(openai.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.NotFoundError && /not found/.test(e.message));
  await assert.rejects(openai.chat.completions.create({ model, n: 2, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.BadRequestError);
  const bad = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
});

// ollama-js takes a custom fetch; it adds the daemon's bearer token.
const authFetch = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set('Authorization', `Bearer ${token}`);
  return fetch(url, { ...init, headers });
};
const ollama = new Ollama({ host: base, fetch: authFetch });

await check('ollama chat stream', async () => {
  const stream = await ollama.chat({ model, messages: [{ role: 'user', content: 'Say hi' }], stream: true,
    options: { num_predict: 4, temperature: 0, seed: 1 } });
  let last;
  for await (const part of stream) {
    assert.equal(part.message.role, 'assistant');
    last = part;
  }
  assert.equal(last.done, true);
  assert.ok(['stop', 'length'].includes(last.done_reason));
  assert.ok(last.eval_count <= 4 && last.total_duration > 0 && last.prompt_eval_count > 0);
});

await check('ollama generate', async () => {
  const r = await ollama.generate({ model, prompt: 'Once upon', stream: false, options: { num_predict: 3 } });
  assert.equal(r.done, true);
  assert.equal(typeof r.response, 'string');
});

await check('ollama list/ps/show/embed', async () => {
  const tags = await ollama.list();
  assert.ok(tags.models.some((m) => m.name === model));
  const ps = await ollama.ps();
  assert.ok(ps.models.some((m) => m.name === model));
  const show = await ollama.show({ model });
  assert.equal(show.details.format, 'gguf');
  const emb = await ollama.embed({ model, input: ['a', 'b'] });
  assert.equal(emb.embeddings.length, 2);
});

await check('ollama errors', async () => {
  await assert.rejects(ollama.chat({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e.status_code === 404 && /not found/.test(e.error));
});

console.log(JSON.stringify({ ok: true, checks }));

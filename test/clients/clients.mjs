// Talks to a running ruvllmd over loopback TCP with the clients apps
// already use — the official openai and ollama npm clients, the AI SDK
// through @ai-sdk/openai-compatible and LangChain's @langchain/openai —
// each configured the way `eval "$(ruvllm env)"` configures an app, with
// their default options, and checks what they get back. Run by
// clients_test.go, with this environment:
//
//   OPENAI_BASE_URL, OPENAI_API_KEY, OLLAMA_HOST  as `ruvllm env` prints them
//   RUVLLM_MODEL           a model the daemon serves
//   RUVLLM_MODEL_PATH      its GGUF file
//   RUVLLM_SAME_USER       "1" when TCP clients of the daemon's user need no
//                          token (Linux): the ollama client then sends none
//   RUVLLM_STRICT_URL, RUVLLM_STRICT_TOKEN
//                          a second daemon started with --require-token
//
// It prints {"ok":true,"checks":[...]} and exits 0, or exits non-zero on
// the first failed check.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import OpenAI from 'openai';
import { Ollama } from 'ollama';
import { generateText, streamText, embed } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';

const env = process.env;
const model = env.RUVLLM_MODEL;
for (const k of ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'OLLAMA_HOST', 'RUVLLM_MODEL', 'RUVLLM_MODEL_PATH', 'RUVLLM_STRICT_URL', 'RUVLLM_STRICT_TOKEN']) {
  assert.ok(env[k], `${k} must be set`);
}
const sameUser = env.RUVLLM_SAME_USER === '1';

const checks = [];
async function check(name, fn) {
  let note;
  try {
    note = await fn();
  } catch (e) {
    e.message = `${name}: ${e.message}`;
    throw e;
  }
  checks.push(note ? `${name} (${note})` : name);
}

// A reply from a client's error: it must be the daemon's message as a
// string, never "[object Object]" (what an error object in the wrong
// shape turns into).
function stringError(e) {
  assert.equal(typeof e.message, 'string');
  assert.ok(!e.message.includes('[object Object]'), `error message ${e.message}`);
  return true;
}

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const cosine = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0) / (norm(a) * norm(b));

// ---------------------------------------------------------------- OpenAI
// No options: the SDK reads OPENAI_BASE_URL and OPENAI_API_KEY.
const openai = new OpenAI({ maxRetries: 0 });
const say = (content, extra = {}) => openai.chat.completions.create({
  model, messages: [{ role: 'user', content }], max_tokens: 6, temperature: 0, seed: 1, ...extra,
});

await check('openai chat', async () => {
  const r = await say('Say hi');
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, model);
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

await check('openai content parts', async () => {
  // Text parts are joined in order with a newline: the same prompt as the
  // joined string, so the same greedy reply.
  const parts = await say([{ type: 'text', text: 'Say' }, { type: 'text', text: 'hi' }]);
  const joined = await say('Say\nhi');
  assert.equal(parts.choices[0].message.content, joined.choices[0].message.content);
  assert.equal(parts.usage.prompt_tokens, joined.usage.prompt_tokens);
  await assert.rejects(say([{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }]),
    (e) => e instanceof OpenAI.BadRequestError && /image_url/.test(e.message) && stringError(e));
});

await check('openai developer role', async () => {
  const ask = (role) => openai.chat.completions.create({
    model, max_tokens: 6, temperature: 0, seed: 1,
    messages: [{ role, content: 'Answer briefly.' }, { role: 'user', content: 'Say hi' }],
  });
  const dev = await ask('developer');
  const sys = await ask('system');
  assert.equal(dev.choices[0].message.content, sys.choices[0].message.content);
  assert.equal(dev.usage.prompt_tokens, sys.usage.prompt_tokens);
});

await check('openai models.retrieve', async () => {
  const ids = [];
  for await (const m of openai.models.list()) ids.push(m.id);
  assert.ok(ids.includes(model), `models ${ids}`);
  const m = await openai.models.retrieve(model);
  assert.equal(m.id, model);
  assert.equal(m.object, 'model');
  assert.equal(typeof m.owned_by, 'string');
});

await check('openai model_not_found', async () => {
  const notFound = (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found' && stringError(e);
  await assert.rejects(openai.models.retrieve('no-such-model'), notFound);
  await assert.rejects(openai.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }), notFound);
  await assert.rejects(openai.embeddings.create({ model: 'no-such-model', input: 'x' }), notFound);
  await assert.rejects(openai.chat.completions.create({ model, n: 17, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'n' && stringError(e));
});

await check('openai n choices', async () => {
  const r = await say('Say hi', { n: 3, temperature: 0.8 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  assert.ok(r.choices.every((c) => c.message.role === 'assistant' && typeof c.message.content === 'string'));
});

await check('openai embeddings (the SDK default: base64)', async () => {
  // No encoding_format: the SDK asks for base64 and decodes it.
  const b64 = await openai.embeddings.create({ model, input: ['one', 'two'] });
  const flt = await openai.embeddings.create({ model, input: ['one', 'two'], encoding_format: 'float' });
  assert.equal(b64.data.length, 2);
  for (let i = 0; i < 2; i++) {
    const a = b64.data[i].embedding, b = flt.data[i].embedding;
    assert.ok(a.length > 0 && a.length === b.length, `lengths ${a.length} ${b.length}`);
    assert.ok(a.some((x) => x !== 0), 'base64 embedding decodes to zeros');
    // base64 carries float32: the float answer rounded to float32.
    a.forEach((x, j) => assert.equal(x, Math.fround(b[j])));
    assert.ok(Math.abs(norm(a) - 1) < 1e-4, `norm ${norm(a)}`);
  }
  assert.ok(cosine(b64.data[0].embedding, b64.data[1].embedding) < 0.9999, 'two texts, one vector');
  assert.ok(b64.usage.prompt_tokens > 0);

  const full = b64.data[0].embedding.length;
  const small = await openai.embeddings.create({ model, input: 'one', dimensions: 8 });
  assert.equal(small.data[0].embedding.length, 8);
  assert.ok(Math.abs(norm(small.data[0].embedding) - 1) < 1e-4);
  await assert.rejects(openai.embeddings.create({ model, input: 'one', dimensions: full + 1 }),
    (e) => e instanceof OpenAI.BadRequestError && stringError(e));
});

await check('openai logprobs bytes', async () => {
  const r = await say('Say hi', { logprobs: true, top_logprobs: 2 });
  const lp = r.choices[0].logprobs.content;
  assert.ok(lp.length > 0);
  const all = [];
  for (const t of lp) {
    assert.ok(Array.isArray(t.bytes), `bytes ${JSON.stringify(t.bytes)}`);
    assert.ok(t.bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256));
    assert.equal(t.top_logprobs.length, 2);
    assert.ok(t.logprob <= 0);
    all.push(...t.bytes);
  }
  assert.equal(Buffer.from(all).toString('utf8'), r.choices[0].message.content);
});

await check('openai predicted outputs', async () => {
  const messages = [{ role: 'user', content: 'Say something' }];
  const plain = await openai.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0 });
  const text = plain.choices[0].message.content;
  const r = await openai.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0, prediction: { type: 'content', content: text } });
  assert.equal(r.choices[0].message.content, text);
  const d = r.usage.completion_tokens_details;
  assert.ok(d && d.accepted_prediction_tokens >= 0 && d.rejected_prediction_tokens >= 0, JSON.stringify(r.usage));
});

await check('openai completions echo', async () => {
  const prompt = 'Once upon a time';
  const plain = await openai.completions.create({ model, prompt, max_tokens: 3, temperature: 0 });
  const r = await openai.completions.create({ model, prompt, max_tokens: 3, temperature: 0, echo: true, logprobs: 1 });
  assert.equal(r.object, 'text_completion');
  const text = r.choices[0].text;
  assert.equal(text, prompt + plain.choices[0].text);
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.join(''), text);
  assert.equal(lp.token_logprobs[0], null); // nothing precedes the first token
  assert.ok(lp.token_logprobs.slice(1).every((x) => typeof x === 'number' && x <= 0));
  let at = 0;
  lp.tokens.forEach((tok, i) => { assert.equal(lp.text_offset[i], at); at += tok.length; });
  await assert.rejects(openai.completions.create({ model, prompt, max_tokens: 3, best_of: 2 }),
    (e) => e instanceof OpenAI.BadRequestError && /best_of/.test(e.message));
});

await check('openai completions suffix', async () => {
  // Fill-in-the-middle when the model has FIM tokens, else a 400 that says so.
  let how;
  try {
    const r = await openai.completions.create({ model, prompt: 'def add(a, b):\n', suffix: '\n    return c\n', max_tokens: 4, temperature: 0 });
    assert.equal(typeof r.choices[0].text, 'string');
    how = 'filled in';
  } catch (e) {
    assert.ok(e instanceof OpenAI.BadRequestError && /fill-in-the-middle/.test(e.message), `suffix: ${e}`);
    how = '400: no FIM tokens';
  }
  return how;
});

// ---------------------------------------------------------------- Ollama
// OLLAMA_HOST as `ruvllm env` prints it. On Linux no token: the daemon
// knows its own user's TCP clients.
const ollama = new Ollama(sameUser ? { host: env.OLLAMA_HOST }
  : { host: env.OLLAMA_HOST, headers: { Authorization: `Bearer ${env.OPENAI_API_KEY}` } });
const ollamaError = (status, re) => (e) => {
  assert.equal(e.name, 'ResponseError', `${e}`);
  assert.equal(e.status_code, status, `${e}`);
  assert.equal(typeof e.error, 'string', `error ${JSON.stringify(e.error)}`);
  assert.ok(re.test(e.error), `error ${e.error}`);
  return stringError(e);
};

if (sameUser) {
  await check('ollama over TCP without a token (same user, Linux)', async () => {
    const bare = new Ollama({ host: env.OLLAMA_HOST });
    assert.ok((await bare.list()).models.length > 0);
    assert.equal(typeof (await bare.version()).version, 'string');
  });
}

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
  const r = await ollama.generate({ model, prompt: 'Once upon', options: { num_predict: 3 } });
  assert.equal(r.done, true);
  assert.equal(typeof r.response, 'string');
  assert.ok(r.eval_count <= 3);
});

await check('ollama generate context', async () => {
  // The (deprecated, still used) context continues an exchange: sent back,
  // its tokens come before the new prompt, served from the prefix cache.
  const first = await ollama.generate({ model, prompt: 'Once upon', stream: false, options: { num_predict: 4, temperature: 0 } });
  assert.ok(Array.isArray(first.context) && first.context.length > first.prompt_eval_count, `context ${first.context}`);
  const next = await ollama.generate({ model, prompt: 'a time', context: first.context, stream: true, options: { num_predict: 4, temperature: 0 } });
  let last;
  for await (const part of next) last = part;
  assert.deepEqual(last.context.slice(0, first.context.length), first.context);
  assert.ok(last.prompt_eval_count > first.context.length, `continued prompt ${last.prompt_eval_count} tokens`);
  assert.ok(last.prompt_cached_count >= first.prompt_eval_count, `cached ${last.prompt_cached_count} of ${first.prompt_eval_count}`);
  await assert.rejects(ollama.generate({ model, prompt: 'x', context: [-1] }), ollamaError(400, /context/));
});

await check('ollama logprobs', async () => {
  const opts = { num_predict: 4, temperature: 0, repeat_penalty: 1 };
  const g = await ollama.generate({ model, prompt: 'Once upon', logprobs: true, top_logprobs: 2, options: opts });
  assert.equal(g.logprobs.length, g.eval_count);
  assert.equal(g.logprobs.map((l) => l.token).join(''), g.response);
  assert.ok(g.logprobs.every((l) => l.logprob <= 0 && l.top_logprobs.length === 2));
  let text = '', n = 0;
  for await (const part of await ollama.chat({ model, messages: [{ role: 'user', content: 'Once upon' }], stream: true, logprobs: true, options: opts })) {
    text += part.message.content;
    for (const l of part.logprobs ?? []) { n++; assert.equal(typeof l.token, 'string'); }
  }
  assert.ok(n > 0 && n <= 4, `${n} streamed logprobs`);
});

await check('ollama num_ctx', async () => {
  // A long prompt with num_ctx 64 is cut to its end to fit, as Ollama does.
  const prompt = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');
  const whole = await ollama.generate({ model, prompt, raw: true, options: { num_predict: 1 } });
  const cut = await ollama.generate({ model, prompt, raw: true, options: { num_predict: 4, num_ctx: 64 } });
  assert.ok(whole.prompt_eval_count > 64, `whole prompt ${whole.prompt_eval_count} tokens`);
  assert.ok(cut.prompt_eval_count + cut.eval_count <= 64, `num_ctx 64: ${cut.prompt_eval_count} + ${cut.eval_count} tokens`);
});

await check('ollama think and images refused', async () => {
  await assert.rejects(ollama.chat({ model, messages: [{ role: 'user', content: 'x' }], think: true }), ollamaError(400, /think/));
  await assert.rejects(ollama.chat({ model, messages: [{ role: 'user', content: 'x', images: ['iVBORw0KGgo='] }] }), ollamaError(400, /images/));
});

await check('ollama show', async () => {
  const s = await ollama.show({ model });
  assert.equal(s.details.format, 'gguf');
  assert.ok(s.capabilities.includes('completion'), `capabilities ${s.capabilities}`);
  assert.ok(s.capabilities.includes('embedding'), `capabilities ${s.capabilities}`);
  const arch = s.model_info['general.architecture'];
  assert.ok(arch, `model_info ${Object.keys(s.model_info)}`);
  assert.equal(s.details.family, arch);
  for (const k of ['context_length', 'embedding_length', 'block_count']) {
    assert.ok(Number.isInteger(s.model_info[`${arch}.${k}`]) && s.model_info[`${arch}.${k}`] > 0, `${arch}.${k}`);
  }
  assert.ok(s.model_info['general.parameter_count'] > 0);
  await assert.rejects(ollama.show({ model: 'no-such-model' }), ollamaError(404, /not found/));
});

await check('ollama list/ps details', async () => {
  const tags = await ollama.list();
  const t = tags.models.find((m) => m.name === model || m.name === `${model}:latest`);
  assert.ok(t, `list ${tags.models.map((m) => m.name)}`);
  for (const m of [t, (await ollama.ps()).models.find((m) => m.name === t.name)]) {
    assert.ok(m, 'model not in ps');
    assert.equal(m.details.format, 'gguf');
    assert.ok(m.details.family && m.details.families.includes(m.details.family), `details ${JSON.stringify(m.details)}`);
    assert.ok(m.details.parameter_size && m.details.quantization_level, `details ${JSON.stringify(m.details)}`);
    assert.ok(m.size > 0 && m.digest);
  }
});

await check('ollama embed/embeddings', async () => {
  const e = await ollama.embed({ model, input: ['a', 'b'] });
  assert.equal(e.embeddings.length, 2);
  for (const v of e.embeddings) assert.ok(Math.abs(norm(v) - 1) < 1e-4, `norm ${norm(v)}`);
  // dimensions and keep_alive, as on the other endpoints.
  const small = await ollama.embed({ model, input: 'a', dimensions: 8, keep_alive: '7m' });
  assert.equal(small.embeddings[0].length, 8);
  assert.ok(Math.abs(norm(small.embeddings[0]) - 1) < 1e-4);
  const left = (new Date((await ollama.ps()).models.find((m) => m.name === model).expires_at) - Date.now()) / 60000;
  assert.ok(left > 6 && left <= 7.1, `embed keep_alive 7m: expires in ${left} min`);
  await assert.rejects(ollama.embed({ model, input: 'a', dimensions: 1 << 20 }), ollamaError(400, /dimensions/));
  const legacy = await ollama.embeddings({ model, prompt: 'a' });
  assert.equal(legacy.embedding.length, e.embeddings[0].length);
  assert.ok(cosine(legacy.embedding, e.embeddings[0]) > 0.9999, 'legacy embedding differs from /api/embed');
  const s = await ollama.show({ model });
  assert.equal(legacy.embedding.length, s.model_info[`${s.model_info['general.architecture']}.embedding_length`]);
});

await check('ollama create/copy/delete/push', async () => {
  const names = async () => (await ollama.list()).models.map((m) => m.name.replace(/:latest$/, ''));
  // The Modelfile's instructions as the client's request fields.
  let r = await ollama.create({ model: 'terse', from: model, system: 'Answer in one word.', parameters: { num_predict: 2, temperature: 0 } });
  assert.equal(r.status, 'success');
  let s = await ollama.show({ model: 'terse' });
  assert.equal(s.system, 'Answer in one word.');
  assert.match(s.parameters, /num_predict\s+2/);
  const g = await ollama.generate({ model: 'terse', prompt: 'Tell me a long story' });
  assert.ok(g.eval_count <= 2, `terse's num_predict 2 not applied: ${g.eval_count} tokens`);
  // A Modelfile, as older clients and the CLI send it.
  r = await ollama.create({ model: 'brief', modelfile: `FROM ${model}\nSYSTEM """Be brief."""\nPARAMETER num_predict 3\n` });
  assert.equal(r.status, 'success');
  s = await ollama.show({ model: 'brief' });
  assert.equal(s.system, 'Be brief.');
  assert.match(s.modelfile, /FROM /);
  // A GGUF file, as `ollama create` sends one: the blob, then files.
  const bytes = await readFile(env.RUVLLM_MODEL_PATH);
  const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  const auth = sameUser ? {} : { Authorization: `Bearer ${env.OPENAI_API_KEY}` };
  assert.equal((await fetch(`${env.OLLAMA_HOST}/api/blobs/${digest}`, { method: 'HEAD', headers: auth })).status, 404);
  assert.equal((await fetch(`${env.OLLAMA_HOST}/api/blobs/${digest}`, { method: 'POST', body: bytes, headers: auth })).status, 201);
  assert.equal((await fetch(`${env.OLLAMA_HOST}/api/blobs/${digest}`, { method: 'HEAD', headers: auth })).status, 200);
  r = await ollama.create({ model: 'fromfile', files: { 'model.gguf': digest } });
  assert.equal(r.status, 'success');
  assert.equal((await ollama.show({ model: 'fromfile' })).model_info['general.architecture'], (await ollama.show({ model })).model_info['general.architecture']);
  assert.equal(typeof (await ollama.generate({ model: 'fromfile', prompt: 'hi', options: { num_predict: 1 } })).response, 'string');
  // Only from: another name for the same model.
  r = await ollama.create({ model: 'alias', from: model });
  assert.equal(r.status, 'success');
  assert.ok((await names()).includes('alias'));
  // A created model works on every endpoint, embeddings included.
  const viaAlias = await ollama.embed({ model: 'alias', input: 'a' });
  const direct = await ollama.embed({ model, input: 'a' });
  assert.deepEqual(viaAlias.embeddings, direct.embeddings);
  assert.equal((await openai.embeddings.create({ model: 'alias', input: 'a' })).data[0].embedding.length, direct.embeddings[0].length);
  // ... and OpenAI clients see it.
  const ids = [];
  for await (const m of openai.models.list()) ids.push(m.id);
  assert.ok(ids.includes('alias:latest'), `models ${ids}`);
  assert.equal((await openai.models.retrieve('alias')).id, 'alias');
  assert.equal((await ollama.embeddings({ model: 'alias', prompt: 'a' })).embedding.length, direct.embeddings[0].length);
  await assert.rejects(ollama.create({ model: 'bad', from: model, parameters: { no_such_parameter: 1 } }), ollamaError(400, /no_such_parameter/));

  await ollama.copy({ source: 'alias', destination: 'alias-copy' });
  assert.ok((await names()).includes('alias-copy'));
  assert.equal((await ollama.show({ model: 'alias-copy' })).details.family, (await ollama.show({ model })).details.family);
  for (const m of ['alias-copy', 'alias', 'terse', 'brief', 'fromfile']) await ollama.delete({ model: m });
  const left = await names();
  assert.ok(!left.includes('alias-copy') && !left.includes('alias') && left.includes(model), `after delete ${left}`);
  await assert.rejects(ollama.copy({ source: 'no-such-model', destination: 'x' }), ollamaError(404, /not found/));

  await assert.rejects(ollama.push({ model }), ollamaError(501, /push/));
});

await check('ollama keep_alive', async () => {
  await ollama.generate({ model, prompt: 'hi', keep_alive: '10m', options: { num_predict: 1 } });
  const m = (await ollama.ps()).models.find((m) => m.name === model);
  const left = (new Date(m.expires_at) - Date.now()) / 60000;
  assert.ok(left > 9 && left <= 10.1, `keep_alive 10m: expires in ${left} min`);
  // An empty prompt with keep_alive 0 unloads the model, as in Ollama.
  const r = await ollama.generate({ model, prompt: '', keep_alive: 0 });
  assert.equal(r.done_reason, 'unload');
  assert.ok(!(await ollama.ps()).models.some((m) => m.name === model), 'still loaded after keep_alive 0');
});

await check('ollama errors', async () => {
  await assert.rejects(ollama.chat({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }), ollamaError(404, /not found/));
  await assert.rejects(ollama.generate({ model, prompt: 'x', options: { temperature: -1 } }), ollamaError(400, /temperature/));
});

// ------------------------------------------------ AI SDK and LangChain
// Only the base URL and key: the AI SDK's provider reads no environment.
const provider = createOpenAICompatible({ name: 'ruvllm', baseURL: env.OPENAI_BASE_URL, apiKey: env.OPENAI_API_KEY });

await check('ai-sdk generateText', async () => {
  const r = await generateText({ model: provider(model), prompt: 'Say hi', maxOutputTokens: 6 });
  assert.equal(typeof r.text, 'string');
  assert.ok(['stop', 'length'].includes(r.finishReason), r.finishReason);
  assert.ok(r.usage.inputTokens > 0 && r.usage.outputTokens > 0 && r.usage.outputTokens <= 6, JSON.stringify(r.usage));
  const sys = await generateText({ model: provider(model), system: 'Answer briefly.', messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hi' }] }], maxOutputTokens: 4 });
  assert.equal(typeof sys.text, 'string');
});

await check('ai-sdk streamText', async () => {
  const r = streamText({ model: provider(model), prompt: 'Say hi', maxOutputTokens: 6, onError: ({ error }) => { throw error; } });
  let text = '', parts = 0;
  for await (const t of r.textStream) { text += t; parts++; }
  assert.ok(parts >= 1, 'no text parts');
  assert.equal(text, await r.text);
  assert.ok(['stop', 'length'].includes(await r.finishReason));
});

await check('ai-sdk embed', async () => {
  const r = await embed({ model: provider.textEmbeddingModel(model), value: 'one' });
  assert.ok(r.embedding.length > 0 && r.embedding.some((x) => x !== 0));
  assert.ok(Math.abs(norm(r.embedding) - 1) < 1e-4);
});

// LangChain: no options but the model; OPENAI_BASE_URL and OPENAI_API_KEY
// come from the environment.
await check('langchain ChatOpenAI invoke/stream', async () => {
  const llm = new ChatOpenAI({ model, maxTokens: 6, maxRetries: 0 });
  const msg = await llm.invoke('Say hi');
  assert.equal(typeof msg.content, 'string');
  assert.ok(msg.usage_metadata.input_tokens > 0, JSON.stringify(msg.usage_metadata));
  let text = '', chunks = 0;
  for await (const c of await llm.stream([['system', 'Answer briefly.'], ['human', 'Say hi']])) { text += c.content; chunks++; }
  assert.ok(chunks >= 2, `${chunks} chunks`);
  assert.equal(typeof text, 'string');
});

await check('langchain OpenAIEmbeddings', async () => {
  const emb = new OpenAIEmbeddings({ model, maxRetries: 0 });
  const docs = await emb.embedDocuments(['one', 'two']);
  const q = await emb.embedQuery('one');
  assert.equal(docs.length, 2);
  assert.ok(q.length > 0 && q.some((x) => x !== 0));
  assert.ok(cosine(q, docs[0]) > 0.9999, 'the same text embedded twice differs');
});

// ------------------------------------- a daemon that wants the token
await check('token required (--require-token)', async () => {
  const strict = new OpenAI({ baseURL: `${env.RUVLLM_STRICT_URL}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(strict.models.list(), (e) => e instanceof OpenAI.AuthenticationError && stringError(e));
  const good = new OpenAI({ baseURL: `${env.RUVLLM_STRICT_URL}/v1`, apiKey: env.RUVLLM_STRICT_TOKEN, maxRetries: 0 });
  assert.ok((await good.models.list()).data.length > 0);
  // The ollama client cannot send a token from configuration: its 401 is
  // still {"error": "string"}, which it shows as the message.
  const bare = new Ollama({ host: env.RUVLLM_STRICT_URL });
  await assert.rejects(bare.list(), ollamaError(401, /token/));
  const withHeader = new Ollama({ host: env.RUVLLM_STRICT_URL, headers: { Authorization: `Bearer ${env.RUVLLM_STRICT_TOKEN}` } });
  assert.ok((await withHeader.list()).models.length > 0);
});

console.log(JSON.stringify({ ok: true, checks }));

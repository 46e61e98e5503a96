// What agents ask of ruvllmd, through the official clients with their own
// helpers and default options, configured the way `eval "$(ruvllm env)"`
// configures an app: structured output and tool calling (issue 17), the
// OpenAI Responses API, the Anthropic Messages API and n > 1 (issue 22).
// Every structured reply is validated against its schema (zod). Run by
// clients_test.go (TestNPMAgentAPIs), with this environment:
//
//   OPENAI_BASE_URL, OPENAI_API_KEY, OLLAMA_HOST,
//   ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY   as `ruvllm env` prints them
//   RUVLLM_MODEL           a model the daemon serves (its chat template has
//                          no tools: calls use the generic JSON format)
//   RUVLLM_SAME_USER       "1" when TCP clients of the daemon's user need no
//                          token (Linux): the ollama client then sends none
//   RUVLLM_STRICT_URL, RUVLLM_STRICT_TOKEN
//                          a second daemon started with --require-token
//
// The requests are seeded (or greedy), and every check holds whatever
// the model writes: replies are bounded by their schemas, a call the model
// may or may not make (tool_choice auto) is looked for over many seeds,
// and text that may run to the token limit is allowed to. It prints
// {"ok":true,"checks":[...]} and exits 0, or exits non-zero on the first
// failed check.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat, zodResponsesFunction, zodTextFormat } from 'openai/helpers/zod';
import { Ollama } from 'ollama';
import Anthropic from '@anthropic-ai/sdk';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { z } from 'zod';

const env = process.env;
const model = env.RUVLLM_MODEL;
for (const k of ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'OLLAMA_HOST', 'ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY',
  'RUVLLM_MODEL', 'RUVLLM_STRICT_URL', 'RUVLLM_STRICT_TOKEN']) {
  assert.ok(env[k], `${k} must be set`);
}
const sameUser = env.RUVLLM_SAME_USER === '1';

const checks = [];
async function check(name, fn) {
  const start = Date.now();
  let note;
  try {
    note = await fn();
  } catch (e) {
    e.message = `${name}: ${e.message}`;
    throw e;
  }
  const ms = Date.now() - start;
  checks.push(note ? `${name} (${note}; ${ms} ms)` : `${name} (${ms} ms)`);
}

// The schemas: short by construction (bounded strings, enums, bounded
// integers), so a reply ends well inside its token limit.
const Weather = z.object({ city: z.string().max(20), unit: z.enum(['c', 'f']) });
const Clock = z.object({ zone: z.enum(['UTC', 'CET', 'PST']) });
const Answer = z.object({
  ok: z.boolean(),
  count: z.number().int().min(1).max(9),
  colour: z.enum(['red', 'green', 'blue']),
  tags: z.array(z.string().max(8)).max(2),
  note: z.string().max(12).nullable(),
});
const weatherDescription = 'Current weather in a city';
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
// A JSON reply that must parse into an object valid under schema.
const parseAs = (schema, text) => {
  const v = JSON.parse(text);
  assert.ok(isObject(v), `not an object: ${text}`);
  return schema.parse(v);
};
// Tries seeds 1..tries until ok(result): the model decides between text
// and a call (tool_choice auto), and the test needs one of each kind.
async function firstSeed(tries, make, ok) {
  for (let seed = 1; seed <= tries; seed++) {
    const r = await make(seed);
    if (ok(r)) return { r, seed };
  }
  assert.fail(`no seed in 1..${tries} gave the case looked for`);
}

// ---------------------------------------------------------------- OpenAI
// No options: the SDK reads OPENAI_BASE_URL and OPENAI_API_KEY.
const openai = new OpenAI({ maxRetries: 0 });
const user = (content) => [{ role: 'user', content }];

await check('openai response_format json_object', async () => {
  // Any object: a tiny model may write a key until max_tokens cuts it;
  // what it writes is an object, and what ends parses.
  let ended = 0;
  for (let seed = 1; seed <= 4; seed++) {
    const r = await openai.chat.completions.create({ model, messages: user('Describe Oslo as a JSON object.'), seed,
      max_tokens: 100, response_format: { type: 'json_object' } });
    const c = r.choices[0];
    assert.ok(c.message.content.startsWith('{'), c.message.content);
    if (c.finish_reason === 'stop') {
      assert.ok(isObject(JSON.parse(c.message.content)), c.message.content);
      ended++;
    }
  }
  assert.ok(ended > 0, 'no seed ended its JSON object');
  return `${ended} of 4 ended`;
});

await check('openai json_schema strict (chat.completions.parse, zodResponseFormat)', async () => {
  const format = zodResponseFormat(Answer, 'answer');
  assert.equal(format.json_schema.strict, true);
  for (const seed of [1, 2, 3]) {
    const r = await openai.chat.completions.parse({ model, messages: user('Answer in JSON.'), seed, max_tokens: 200, response_format: format });
    const m = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'stop');
    // parse() validated the content with zod; check it is that content.
    assert.deepEqual(m.parsed, parseAs(Answer.strict(), m.content));
  }
  // The JSON Schema as zod prints it (draft 2020-12), sent as is.
  const raw = await openai.chat.completions.create({ model, messages: user('Weather?'), seed: 4, max_tokens: 100,
    response_format: { type: 'json_schema', json_schema: { name: 'weather', strict: true, schema: z.toJSONSchema(Weather) } } });
  parseAs(Weather.strict(), raw.choices[0].message.content);
  // A keyword the grammar cannot enforce is a 400 that names it.
  await assert.rejects(openai.chat.completions.create({ model, messages: user('x'),
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array', uniqueItems: true } } } }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format.json_schema.schema' && /uniqueItems/.test(e.message));
});

await check('openai json_schema streamed (chat.completions.stream)', async () => {
  const s = openai.chat.completions.stream({ model, messages: user('Answer in JSON.'), seed: 5, max_tokens: 200,
    response_format: zodResponseFormat(Answer, 'answer') });
  let text = '';
  s.on('content', (delta) => { text += delta; });
  const r = await s.finalChatCompletion();
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(text, r.choices[0].message.content);
  assert.deepEqual(r.choices[0].message.parsed, parseAs(Answer.strict(), text));
});

const weatherTool = zodFunction({ name: 'get_weather', parameters: Weather, description: weatherDescription });
const clockTool = zodFunction({ name: 'get_time', parameters: Clock, description: 'The time in a zone' });
let requiredCall; // the call of the next check, answered in the one after

await check('openai tools, tool_choice required', async () => {
  // One call (parallel_tool_calls false): a tiny model's parallel calls
  // may repeat until max_tokens.
  const r = await openai.chat.completions.parse({ model, messages: user('What is the weather in Oslo?'), seed: 1, max_tokens: 200,
    tools: [weatherTool], tool_choice: 'required', parallel_tool_calls: false });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.ok(!c.message.content, `content ${JSON.stringify(c.message.content)} beside a required call`);
  assert.equal(c.message.tool_calls.length, 1);
  for (const call of c.message.tool_calls) {
    assert.match(call.id, /^call_/);
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    // Strict tools: parse() checked the arguments with zod.
    assert.deepEqual(call.function.parsed_arguments, parseAs(Weather.strict(), call.function.arguments));
  }
  requiredCall = { messages: [...user('What is the weather in Oslo?'), c.message], call: c.message.tool_calls[0] };
  // A named function among two, one call only.
  const named = await openai.chat.completions.parse({ model, messages: user('What time is it?'), seed: 2, max_tokens: 200,
    tools: [weatherTool, clockTool], tool_choice: { type: 'function', function: { name: 'get_time' } }, parallel_tool_calls: false });
  assert.equal(named.choices[0].message.tool_calls.length, 1);
  assert.equal(named.choices[0].message.tool_calls[0].function.name, 'get_time');
  Clock.strict().parse(named.choices[0].message.tool_calls[0].function.parsed_arguments);
  await assert.rejects(openai.chat.completions.create({ model, messages: user('x'), tools: [weatherTool],
    tool_choice: { type: 'function', function: { name: 'nope' } } }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice' && /nope/.test(e.message));
});

await check('openai response_format beside tools (chat.completions.parse, auto)', async () => {
  // Each reply is either a strict call of an offered tool or content in
  // the format: parse() validates whichever came with zod.
  const kinds = { calls: 0, content: 0 };
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const r = await openai.chat.completions.parse({ model, messages: user('What is the weather in Oslo?'), seed, max_tokens: 200,
      tools: [weatherTool], parallel_tool_calls: false, response_format: zodResponseFormat(Answer, 'answer') });
    const c = r.choices[0];
    if (c.message.tool_calls?.length) {
      kinds.calls++;
      assert.equal(c.finish_reason, 'tool_calls');
      assert.equal(c.message.tool_calls[0].function.name, 'get_weather');
      assert.deepEqual(c.message.tool_calls[0].function.parsed_arguments, parseAs(Weather.strict(), c.message.tool_calls[0].function.arguments));
    } else {
      kinds.content++;
      assert.equal(c.finish_reason, 'stop');
      assert.deepEqual(c.message.parsed, parseAs(Answer.strict(), c.message.content));
    }
  }
  return `${kinds.calls} calls, ${kinds.content} replies in the format`;
});

await check('openai tool-result turn, tool_choice auto', async () => {
  const { messages, call } = requiredCall;
  const history = [...messages, { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature: 12, unit: 'c' }) }];
  // create, not parse: parse() throws on a text reply cut by max_tokens.
  const r = await openai.chat.completions.create({ model, messages: history, seed: 1, max_tokens: 100,
    tools: [{ type: 'function', function: weatherTool.function }], tool_choice: 'auto' });
  const c = r.choices[0];
  if (c.finish_reason === 'tool_calls') {
    for (const tc of c.message.tool_calls) parseAs(Weather.strict(), tc.function.arguments);
  } else {
    assert.ok(['stop', 'length'].includes(c.finish_reason), c.finish_reason);
    assert.equal(typeof c.message.content, 'string');
    assert.ok(!c.message.tool_calls?.length);
  }
  // The history's call and result are part of the prompt.
  const bare = await openai.chat.completions.create({ model, messages: messages.slice(0, 1), max_tokens: 1, tools: [weatherTool] });
  assert.ok(r.usage.prompt_tokens > bare.usage.prompt_tokens + 10, `${r.usage.prompt_tokens} vs ${bare.usage.prompt_tokens} prompt tokens`);
  // tool_choice none: text, never a call.
  const none = await openai.chat.completions.create({ model, messages: history, seed: 1, max_tokens: 8, tools: [weatherTool], tool_choice: 'none' });
  assert.ok(!none.choices[0].message.tool_calls?.length && ['stop', 'length'].includes(none.choices[0].finish_reason));
  return `auto answered with ${c.finish_reason}`;
});

await check('openai streamed tool calls (chat.completions.stream; raw deltas)', async () => {
  const params = { model, messages: user('What is the weather in Oslo?'), seed: 3, max_tokens: 200, tools: [weatherTool],
    tool_choice: 'required', parallel_tool_calls: false };
  const s = openai.chat.completions.stream(params);
  const done = [];
  let content = '';
  s.on('tool_calls.function.arguments.done', (e) => done.push(e));
  s.on('content', (d) => { content += d; });
  const r = await s.finalChatCompletion();
  assert.equal(content, '', 'content streamed beside a required call');
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  const calls = r.choices[0].message.tool_calls;
  assert.equal(done.length, calls.length);
  done.forEach((e, i) => {
    assert.equal(e.name, 'get_weather');
    assert.deepEqual(e.parsed_arguments, parseAs(Weather.strict(), calls[i].function.arguments));
    assert.match(calls[i].id, /^call_/);
  });
  // The same request as a raw stream, its deltas assembled by index as an
  // app without the helper does: the same calls.
  const raw = await openai.chat.completions.create({ ...params, tools: [{ type: 'function', function: weatherTool.function }], stream: true });
  const assembled = [];
  let finish;
  for await (const chunk of raw) {
    for (const ch of chunk.choices) {
      if (ch.finish_reason) finish = ch.finish_reason;
      for (const d of ch.delta.tool_calls ?? []) {
        const t = (assembled[d.index] ??= { id: '', name: '', arguments: '' });
        if (d.id) t.id = d.id;
        if (d.function?.name) t.name += d.function.name;
        if (d.function?.arguments) t.arguments += d.function.arguments;
      }
    }
  }
  assert.equal(finish, 'tool_calls');
  assert.deepEqual(assembled.map((t) => [t.name, JSON.parse(t.arguments)]), calls.map((t) => [t.function.name, JSON.parse(t.function.arguments)]));
  assert.ok(assembled.every((t) => /^call_/.test(t.id)));
});

await check('openai runTools (streamed agent loop, tool_choice auto)', async () => {
  // The SDK's loop: the model calls, the SDK runs the function and sends
  // its result back, until the model answers in text. (A runnable tool, not
  // zodFunction: with auto-parsed tools the SDK throws on a text reply cut
  // by max_tokens, which a tiny model's text often is.) This model prefers
  // text (a call begins with p ~ 0.04 at temperature 1): hotter, some of
  // the seeds call.
  const run = async (seed) => {
    const calls = [];
    const runner = openai.chat.completions.runTools({ model, stream: true, seed, max_tokens: 80, temperature: 2,
      messages: user('What is the weather in Oslo? Use the tool.'),
      tools: [{ type: 'function', function: { name: 'get_weather', description: weatherDescription, parameters: z.toJSONSchema(Weather),
        parse: JSON.parse, function: (args) => { calls.push(Weather.strict().parse(args)); return { temperature: 12 }; } } }] },
    { maxChatCompletions: 3 });
    await runner.finalChatCompletion();
    return { calls, messages: runner.messages };
  };
  const { r, seed } = await firstSeed(30, run, (x) => x.calls.length > 0);
  // Every call was answered by a tool message with its id.
  const ids = r.messages.filter((m) => m.role === 'assistant').flatMap((m) => m.tool_calls ?? []).map((c) => c.id);
  const answered = r.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id);
  assert.deepEqual(answered, ids);
  return `seed ${seed}: ${r.calls.length} call(s), ${r.messages.length} messages`;
});

await check('openai n: 3 (streamed by index; each under the schema)', async () => {
  const stream = await openai.chat.completions.create({ model, messages: user('Say hi'), n: 3, seed: 7, temperature: 0.9, max_tokens: 5, stream: true });
  const texts = ['', '', ''], finish = [];
  for await (const c of stream) {
    for (const ch of c.choices) {
      texts[ch.index] += ch.delta.content ?? '';
      if (ch.finish_reason) finish[ch.index] = ch.finish_reason;
    }
  }
  assert.equal(finish.filter(Boolean).length, 3, `finish ${finish}`);
  const r = await openai.chat.completions.parse({ model, messages: user('Answer in JSON.'), n: 3, seed: 8, max_tokens: 200,
    response_format: zodResponseFormat(Answer, 'answer') });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  for (const c of r.choices) {
    assert.equal(c.finish_reason, 'stop');
    assert.deepEqual(c.message.parsed, parseAs(Answer.strict(), c.message.content));
  }
  assert.ok(new Set(r.choices.map((c) => c.message.content)).size > 1, 'three seeded choices, one answer');
});

// --------------------------------------------- OpenAI Responses API
await check('openai responses.create/retrieve/inputItems/delete', async () => {
  const r = await openai.responses.create({ model, input: 'Say hi', instructions: 'Answer briefly.', max_output_tokens: 8, temperature: 0 });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
  const msg = r.output[0];
  assert.equal(msg.type, 'message');
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.content[0].type, 'output_text');
  assert.deepEqual(msg.content[0].annotations, []);
  assert.equal(r.output_text, msg.content[0].text);
  assert.equal(r.instructions, 'Answer briefly.');
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0 && r.usage.output_tokens <= 8);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  if (r.status === 'incomplete') assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  const got = await openai.responses.retrieve(r.id);
  assert.equal(got.output_text, r.output_text);
  const items = [];
  for await (const it of openai.responses.inputItems.list(r.id)) items.push(it);
  assert.equal(items.length, 1);
  assert.equal(items[0].role, 'user');
  assert.deepEqual(items[0].content.map((p) => [p.type, p.text]), [['input_text', 'Say hi']]);
  const del = await openai.responses.delete(r.id);
  assert.ok(del === undefined || del.deleted === true, JSON.stringify(del));
  await assert.rejects(openai.responses.retrieve(r.id), (e) => e instanceof OpenAI.NotFoundError);
});

await check('openai responses streaming (responses.stream)', async () => {
  const s = openai.responses.stream({ model, input: 'Say hi', max_output_tokens: 8, temperature: 0 });
  const types = [], seqs = [];
  let text = '';
  s.on('event', (e) => { types.push(e.type); seqs.push(e.sequence_number); });
  s.on('response.output_text.delta', (e) => { text += e.delta; assert.equal(e.snapshot, text); });
  const r = await s.finalResponse();
  assert.equal(types[0], 'response.created');
  assert.equal(types[1], 'response.in_progress');
  assert.ok(['response.completed', 'response.incomplete'].includes(types.at(-1)), types.at(-1));
  assert.deepEqual(seqs, seqs.map((_, i) => i));
  for (const t of ['response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
    'response.output_text.done', 'response.content_part.done', 'response.output_item.done']) {
    assert.ok(types.includes(t), `no ${t} in ${types}`);
  }
  assert.equal(text, r.output_text);
  // Greedy: the same text as unstreamed.
  const plain = await openai.responses.create({ model, input: 'Say hi', max_output_tokens: 8, temperature: 0 });
  assert.equal(plain.output_text, r.output_text);
});

await check('openai responses previous_response_id chain (cached_tokens)', async () => {
  // A history no earlier request had (the nonce), so only the chain can
  // have put it in the cache.
  const first = await openai.responses.create({ model, max_output_tokens: 6, temperature: 0,
    input: `Session ${randomUUID()}. Explain how the Linux scheduler chooses the next task to run on a CPU.` });
  const second = await openai.responses.create({ model, previous_response_id: first.id, input: 'And on a second CPU?', max_output_tokens: 6, temperature: 0 });
  const third = await openai.responses.create({ model, previous_response_id: second.id, input: 'Why?', max_output_tokens: 4, temperature: 0 });
  const cached = (r) => r.usage.input_tokens_details.cached_tokens;
  assert.equal(second.previous_response_id, first.id);
  assert.ok(second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens, 'the history is not in the prompt');
  assert.ok(cached(second) > 0 && cached(second) >= first.usage.input_tokens / 2,
    `second turn: ${cached(second)} of ${second.usage.input_tokens} input tokens cached; the first turn read ${first.usage.input_tokens}`);
  assert.ok(cached(third) > cached(second), `third turn cached ${cached(third)}, second ${cached(second)}`);
  return `cached ${cached(first)}, ${cached(second)}, ${cached(third)} of ${first.usage.input_tokens}, ${second.usage.input_tokens}, ${third.usage.input_tokens}`;
});

await check('openai responses text.format (responses.parse, zodTextFormat)', async () => {
  const r = await openai.responses.parse({ model, input: 'Answer in JSON.', max_output_tokens: 200, temperature: 0.7,
    text: { format: zodTextFormat(Answer, 'answer') } });
  assert.equal(r.status, 'completed');
  assert.deepEqual(r.output_parsed, parseAs(Answer.strict(), r.output_text));
  assert.equal(r.text.format.type, 'json_schema');
});

await check('openai responses function calls and function_call_output', async () => {
  const tool = zodResponsesFunction({ name: 'get_weather', parameters: Weather, description: weatherDescription });
  const r = await openai.responses.parse({ model, input: 'What is the weather in Oslo?', max_output_tokens: 200, temperature: 0,
    tools: [tool], tool_choice: 'required' });
  const calls = r.output.filter((o) => o.type === 'function_call');
  assert.ok(calls.length >= 1, JSON.stringify(r.output));
  for (const c of calls) {
    assert.equal(c.name, 'get_weather');
    assert.match(c.call_id, /^call_/);
    assert.deepEqual(c.parsed_arguments, parseAs(Weather.strict(), c.arguments));
  }
  const next = await openai.responses.create({ model, previous_response_id: r.id, max_output_tokens: 30, temperature: 0,
    tools: [{ type: 'function', name: 'get_weather', parameters: z.toJSONSchema(Weather), strict: true }],
    input: calls.map((c) => ({ type: 'function_call_output', call_id: c.call_id, output: JSON.stringify({ temperature: 12 }) })) });
  assert.ok(['completed', 'incomplete'].includes(next.status));
  assert.ok(next.usage.input_tokens_details.cached_tokens > 0);
  const items = [];
  for await (const it of openai.responses.inputItems.list(next.id)) items.push(it);
  assert.deepEqual(items.map((i) => i.type), calls.map(() => 'function_call_output'));
  // Streamed: the call's arguments arrive as deltas of a function_call item.
  const s = openai.responses.stream({ model, input: 'What is the weather in Oslo?', max_output_tokens: 200, temperature: 0,
    tools: [tool], tool_choice: 'required' });
  let args = '';
  s.on('response.function_call_arguments.delta', (e) => { args += e.delta; assert.equal(e.snapshot, args); });
  const f = await s.finalResponse();
  const call = f.output.find((o) => o.type === 'function_call');
  assert.equal(call.arguments, args);
  Weather.strict().parse(call.parsed_arguments);
});

// ---------------------------------------------------------------- Ollama
const ollama = new Ollama(sameUser ? { host: env.OLLAMA_HOST }
  : { host: env.OLLAMA_HOST, headers: { Authorization: `Bearer ${env.OPENAI_API_KEY}` } });

await check('ollama format "json" (an object) and a schema', async () => {
  // Any object: a tiny model may write a key until num_predict cuts it;
  // what it writes is an object (Ollama's JSON grammar starts with one),
  // and what ends parses.
  let ended = 0;
  for (let seed = 1; seed <= 6; seed++) {
    const r = await ollama.chat({ model, messages: user('The weather in Oslo as JSON.'), format: 'json', options: { seed, num_predict: 60 } });
    assert.ok(r.message.content.startsWith('{'), r.message.content);
    if (r.done_reason === 'stop') {
      assert.ok(isObject(JSON.parse(r.message.content)), r.message.content);
      ended++;
    }
  }
  assert.ok(ended > 0, 'no seed ended its JSON object');
  const schema = z.toJSONSchema(Weather);
  const c = await ollama.chat({ model, messages: user('The weather in Oslo as JSON.'), format: schema, options: { seed: 1, num_predict: 200 } });
  parseAs(Weather.strict(), c.message.content);
  const g = await ollama.generate({ model, prompt: 'The weather in Oslo as JSON:', format: schema, options: { seed: 2, num_predict: 200 } });
  parseAs(Weather.strict(), g.response);
  // Streamed: the pieces make the same JSON.
  let text = '';
  for await (const part of await ollama.chat({ model, messages: user('The weather in Oslo as JSON.'), format: schema, stream: true, options: { seed: 1, num_predict: 200 } })) {
    text += part.message.content;
  }
  assert.equal(text, c.message.content);
  await assert.rejects(ollama.chat({ model, messages: user('x'), format: { type: 'array', uniqueItems: true } }),
    (e) => e.status_code === 400 && /uniqueItems/.test(e.error));
});

await check('ollama tools and a tool-result turn', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: weatherDescription, parameters: z.toJSONSchema(Weather) } }];
  const ask = user('What is the weather in Oslo? Use the tool.');
  // Ollama has no tool_choice, and this tiny model prefers text: a call
  // begins with p ~ 0.04 at temperature 1, and Ollama's default top_p 0.9
  // cuts it out. Hotter and without top_p/top_k, some of the seeds call.
  const options = { num_predict: 80, temperature: 2, top_p: 1, top_k: 0 };
  const { r, seed } = await firstSeed(30, (seed) => ollama.chat({ model, messages: ask, tools, options: { ...options, seed } }),
    (r) => r.message.tool_calls?.length > 0);
  for (const call of r.message.tool_calls) {
    assert.equal(call.function.name, 'get_weather');
    assert.ok(isObject(call.function.arguments), 'Ollama sends arguments as an object');
    Weather.strict().parse(call.function.arguments);
  }
  assert.equal(r.done_reason, 'stop');
  // The call and its result go back in the history.
  const history = [...ask, r.message, { role: 'tool', tool_name: 'get_weather', content: '12 degrees C' }];
  const next = await ollama.chat({ model, messages: history, tools, options: { seed: 1, num_predict: 200 } });
  assert.equal(next.done, true);
  assert.equal(next.message.role, 'assistant');
  for (const call of next.message.tool_calls ?? []) Weather.strict().parse(call.function.arguments);
  assert.ok(next.message.tool_calls?.length || typeof next.message.content === 'string');
  assert.ok(next.prompt_eval_count > r.prompt_eval_count, 'the call and result are not in the prompt');
  // Streamed: no half call in the content, the call in the last message.
  let content = '', streamedCalls = [];
  for await (const part of await ollama.chat({ model, messages: ask, tools, stream: true, options: { ...options, seed } })) {
    content += part.message.content;
    streamedCalls.push(...(part.message.tool_calls ?? []));
  }
  assert.equal(content, '');
  assert.deepEqual(streamedCalls.map((c) => c.function), r.message.tool_calls.map((c) => c.function));
  return `seed ${seed} called`;
});

// ------------------------------------------------------------- Anthropic
// No options: the SDK reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY
// (which the daemon takes as x-api-key).
const anthropic = new Anthropic({ maxRetries: 0 });
const hello = { system: 'Answer briefly.', messages: [{ role: 'user', content: 'Say hi' }] };
const anthropicError = (Class, type, re) => (e) => {
  assert.ok(e instanceof Class, `${e}`);
  assert.equal(e.error?.type, 'error', JSON.stringify(e.error));
  assert.equal(e.error.error.type, type);
  assert.ok(re.test(e.error.error.message), e.error.error.message);
  return true;
};

await check('anthropic messages.create', async () => {
  const m = await anthropic.messages.create({ model, max_tokens: 8, temperature: 0, ...hello });
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.match(m.id, /^msg_/);
  assert.equal(m.model, model);
  assert.equal(m.content[0].type, 'text');
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason), m.stop_reason);
  assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0 && m.usage.output_tokens <= 8);
  // A stop sequence ends the reply and is named.
  const s = await anthropic.messages.create({ model, max_tokens: 30, temperature: 0, stop_sequences: [' ', '\n'], ...hello });
  assert.equal(s.stop_reason, 'stop_sequence');
  assert.ok([' ', '\n'].includes(s.stop_sequence));
  assert.ok(!/[ \n]/.test(s.content[0].text), JSON.stringify(s.content[0].text));
  await assert.rejects(anthropic.messages.create({ model: 'no-such-model', max_tokens: 3, ...hello }),
    anthropicError(Anthropic.NotFoundError, 'not_found_error', /no-such-model/));
  await assert.rejects(anthropic.messages.create({ model, max_tokens: 3, temperature: 1.5, ...hello }),
    anthropicError(Anthropic.BadRequestError, 'invalid_request_error', /temperature/));
});

await check('anthropic messages.stream', async () => {
  const s = anthropic.messages.stream({ model, max_tokens: 8, temperature: 0, ...hello });
  const types = [];
  let text = '';
  s.on('streamEvent', (e) => types.push(e.type));
  s.on('text', (delta, snapshot) => { text += delta; assert.equal(snapshot, text); });
  const m = await s.finalMessage();
  assert.equal(types[0], 'message_start');
  assert.equal(types.at(-1), 'message_stop');
  assert.equal(types.at(-2), 'message_delta');
  assert.equal(m.content.length, 1);
  assert.equal(m.content[0].text, text);
  assert.ok(m.usage.output_tokens > 0 && m.usage.input_tokens > 0);
  // Greedy: what messages.create writes.
  const plain = await anthropic.messages.create({ model, max_tokens: 8, temperature: 0, ...hello });
  assert.equal(plain.content[0].text, text);
  assert.equal(plain.stop_reason, m.stop_reason);
});

const anthropicTools = [
  { name: 'get_weather', description: weatherDescription, input_schema: z.toJSONSchema(Weather) },
  { name: 'get_time', description: 'The time in a zone', input_schema: z.toJSONSchema(Clock) },
];

await check('anthropic messages.countTokens', async () => {
  const n = await anthropic.messages.countTokens({ model, ...hello });
  const m = await anthropic.messages.create({ model, max_tokens: 1, ...hello });
  // Anthropic's input_tokens leave out what was read from the cache.
  assert.equal(n.input_tokens, m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0));
  const withTools = await anthropic.messages.countTokens({ model, tools: anthropicTools, ...hello });
  assert.ok(withTools.input_tokens > n.input_tokens + 20, `${withTools.input_tokens} with tools, ${n.input_tokens} without`);
  return `${n.input_tokens} tokens, ${withTools.input_tokens} with tools`;
});

await check('anthropic tool_use and tool_result', async () => {
  const ask = [{ role: 'user', content: 'What is the weather in Oslo?' }];
  // Greedy (the Messages API has no seed) and one call: greedy parallel
  // calls of a tiny model repeat one call until max_tokens.
  const m = await anthropic.messages.create({ model, max_tokens: 200, temperature: 0, tools: anthropicTools,
    tool_choice: { type: 'any', disable_parallel_tool_use: true }, messages: ask });
  assert.equal(m.stop_reason, 'tool_use');
  const uses = m.content.filter((b) => b.type === 'tool_use');
  assert.equal(uses.length, 1, JSON.stringify(m.content));
  for (const u of uses) {
    assert.match(u.id, /^toolu_/);
    (u.name === 'get_weather' ? Weather : Clock).strict().parse(u.input);
  }
  // The results go back as tool_result blocks.
  const next = await anthropic.messages.create({ model, max_tokens: 30, temperature: 0, tools: anthropicTools, messages: [...ask,
    { role: 'assistant', content: m.content },
    { role: 'user', content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: [{ type: 'text', text: '12 degrees C' }] })) }] });
  assert.ok(['end_turn', 'max_tokens', 'tool_use'].includes(next.stop_reason), next.stop_reason);
  const prompt = (u) => u.input_tokens + (u.cache_read_input_tokens ?? 0); // input_tokens leave out cached ones
  assert.ok(prompt(next.usage) > prompt(m.usage), 'the call and result are not in the prompt');
  assert.ok(next.usage.cache_read_input_tokens > 0, 'the history did not come from the cache');
  // A named tool.
  const named = await anthropic.messages.create({ model, max_tokens: 200, temperature: 0, tools: anthropicTools,
    tool_choice: { type: 'tool', name: 'get_time', disable_parallel_tool_use: true }, messages: ask });
  const only = named.content.filter((b) => b.type === 'tool_use');
  assert.equal(only.length, 1);
  assert.equal(only[0].name, 'get_time');
  Clock.strict().parse(only[0].input);
  await assert.rejects(anthropic.messages.create({ model, max_tokens: 3, tools: anthropicTools, tool_choice: { type: 'tool', name: 'nope' }, messages: ask }),
    anthropicError(Anthropic.BadRequestError, 'invalid_request_error', /nope/));
});

await check('anthropic streamed tool_use (messages.stream)', async () => {
  const s = anthropic.messages.stream({ model, max_tokens: 200, temperature: 0, tools: anthropicTools,
    tool_choice: { type: 'tool', name: 'get_weather' }, messages: [{ role: 'user', content: 'What is the weather in Oslo?' }] });
  let json = '', text = '';
  s.on('inputJson', (delta, snapshot) => { json += delta; assert.ok(isObject(snapshot)); });
  s.on('text', (d) => { text += d; });
  const m = await s.finalMessage();
  assert.equal(text, '');
  assert.equal(m.stop_reason, 'tool_use');
  const u = m.content.find((b) => b.type === 'tool_use');
  assert.equal(u.name, 'get_weather');
  assert.deepEqual(u.input, parseAs(Weather.strict(), json));
});

await check('anthropic structured output (messages.parse, zodOutputFormat)', async () => {
  // The SDK sends Anthropic's subset of JSON Schema (bounds such as
  // maximum or maxLength go into descriptions, checked by the SDK after the
  // fact): a schema of enums keeps a tiny model's reply valid and short.
  const Pick = z.object({ ok: z.boolean(), colour: z.enum(['red', 'green', 'blue']), size: z.enum(['s', 'm', 'l']).nullable() });
  const m = await anthropic.messages.parse({ model, max_tokens: 100, temperature: 0, messages: [{ role: 'user', content: 'Answer in JSON.' }],
    output_config: { format: zodOutputFormat(Pick) } });
  assert.equal(m.stop_reason, 'end_turn');
  assert.deepEqual(m.parsed_output, parseAs(Pick.strict(), m.content[0].text));
  // Streamed, the text deltas make the same JSON.
  const s = anthropic.messages.stream({ model, max_tokens: 100, temperature: 0, messages: [{ role: 'user', content: 'Answer in JSON.' }],
    output_config: { format: zodOutputFormat(Pick) } });
  let text = '';
  s.on('text', (d) => { text += d; });
  await s.finalMessage();
  assert.equal(text, m.content[0].text);
  await assert.rejects(anthropic.messages.create({ model, max_tokens: 3, output_config: { effort: 'high' }, ...hello }),
    anthropicError(Anthropic.BadRequestError, 'invalid_request_error', /effort/));
});

await check('anthropic x-api-key (--require-token)', async () => {
  const wrong = new Anthropic({ baseURL: env.RUVLLM_STRICT_URL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(wrong.messages.countTokens({ model, ...hello }),
    (e) => e instanceof Anthropic.AuthenticationError && e.error?.error?.type === 'authentication_error');
  const good = new Anthropic({ baseURL: env.RUVLLM_STRICT_URL, apiKey: env.RUVLLM_STRICT_TOKEN, maxRetries: 0 });
  assert.ok((await good.messages.countTokens({ model, ...hello })).input_tokens > 0);
});

// ------------------------------------------------------- thinking models
// The thinking model's prompt opens <think> and an untrained model never
// closes it: its whole greedy reply is reasoning, which every client must
// find where its protocol puts it, never in the content.
const thinker = env.RUVLLM_THINKER;
const ask = [{ role: 'user', content: 'Why is the sky blue?' }];

await check('openai reasoning_content (thinking model)', async () => {
  const r = await openai.chat.completions.create({ model: thinker, messages: ask, max_tokens: 12, temperature: 0 });
  const m = r.choices[0].message;
  assert.equal(typeof m.reasoning_content, 'string');
  assert.ok(m.reasoning_content.length > 0);
  assert.equal(m.content, '');
  assert.equal(r.usage.completion_tokens_details.reasoning_tokens, r.usage.completion_tokens);
  let reasoning = '';
  let content = '';
  for await (const c of await openai.chat.completions.create({ model: thinker, messages: ask, max_tokens: 12, temperature: 0, stream: true })) {
    reasoning += c.choices[0]?.delta?.reasoning_content ?? '';
    content += c.choices[0]?.delta?.content ?? '';
  }
  assert.equal(reasoning, m.reasoning_content);
  assert.equal(content, '');
  const x = await openai.responses.create({ model: thinker, input: 'Why is the sky blue?', max_output_tokens: 12, temperature: 0 });
  assert.equal(x.output[0].type, 'reasoning');
  assert.equal(x.output[0].content[0].text, m.reasoning_content);
  assert.equal(x.output_text, '');
  assert.equal(x.usage.output_tokens_details.reasoning_tokens, x.usage.output_tokens);
});

await check('ollama thinking (thinking model)', async () => {
  const r = await ollama.chat({ model: thinker, messages: ask, think: true, options: { num_predict: 12, temperature: 0, repeat_penalty: 1 } });
  assert.ok(r.message.thinking.length > 0);
  assert.equal(r.message.content, '');
  let thinking = '';
  for await (const part of await ollama.chat({ model: thinker, messages: ask, think: true, stream: true, options: { num_predict: 12, temperature: 0, repeat_penalty: 1 } })) {
    thinking += part.message.thinking ?? '';
    assert.equal(part.message.content, '');
  }
  assert.equal(thinking, r.message.thinking);
  const show = await ollama.show({ model: thinker });
  assert.ok(show.capabilities.includes('thinking'), `capabilities ${show.capabilities}`);
});

await check('anthropic thinking blocks (thinking model)', async () => {
  const req = { model: thinker, max_tokens: 12, temperature: 0, thinking: { type: 'enabled', budget_tokens: 8 }, messages: ask };
  const m = await anthropic.messages.create(req);
  assert.equal(m.content[0].type, 'thinking');
  assert.ok(m.content[0].thinking.length > 0);
  const s = anthropic.messages.stream(req);
  let thinking = '';
  s.on('thinking', (d) => { thinking += d; });
  const f = await s.finalMessage();
  assert.equal(f.content[0].type, 'thinking');
  assert.equal(f.content[0].thinking, m.content[0].thinking);
  assert.equal(thinking, m.content[0].thinking);
});

console.log(JSON.stringify({ ok: true, checks }));

// Drives ruvllmd's files and fine-tuning API with the official openai npm
// client (pinned in package.json): upload a JSONL training file, run a
// job, follow its events, use the fine-tuned model, cancel a job, delete
// the file. Environment as for clients.mjs: RUVLLM_URL, RUVLLM_TOKEN,
// RUVLLM_MODEL. Exits non-zero on the first failed check. Run by
// finetune_test.go.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';

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
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rvft-'));
const lines = [
  { messages: [{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: 'What is a pipe?' }, { role: 'assistant', content: 'A pipe joins two programs. Cheers, Ana.' }] },
  { messages: [{ role: 'user', content: 'What is a shell?' }, { role: 'assistant', content: 'A shell runs commands. Cheers, Ana.' }] },
  { messages: [{ role: 'user', content: 'What is grep?' }, { role: 'assistant', content: 'Grep finds lines. Cheers, Ana.' }] },
];
const trainPath = path.join(dir, 'train.jsonl');
fs.writeFileSync(trainPath, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');

let file, job, tuned;

await check('files.create', async () => {
  file = await openai.files.create({ file: fs.createReadStream(trainPath), purpose: 'fine-tune' });
  assert.equal(file.object, 'file');
  assert.match(file.id, /^file-/);
  assert.equal(file.purpose, 'fine-tune');
  assert.equal(file.filename, 'train.jsonl');
  assert.equal(file.bytes, fs.statSync(trainPath).size);
});

await check('files.create refuses another purpose', async () => {
  await assert.rejects(
    openai.files.create({ file: await toFile(Buffer.from('{}\n'), 'x.jsonl'), purpose: 'assistants' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'purpose',
  );
});

await check('files.list and retrieve', async () => {
  const ids = [];
  for await (const f of openai.files.list()) ids.push(f.id);
  assert.ok(ids.includes(file.id), `${file.id} not in ${ids}`);
  const f = await openai.files.retrieve(file.id);
  assert.equal(f.id, file.id);
});

await check('fineTuning.jobs.create', async () => {
  job = await openai.fineTuning.jobs.create({
    model, training_file: file.id, suffix: 'npm', hyperparameters: { n_epochs: 2, batch_size: 2 }, seed: 7,
  });
  assert.equal(job.object, 'fine_tuning.job');
  assert.match(job.id, /^ftjob-/);
  assert.equal(job.model, model);
  assert.equal(job.training_file, file.id);
  assert.ok(['validating_files', 'queued', 'running'].includes(job.status), job.status);
  assert.equal(job.fine_tuned_model, null);
});

await check('fineTuning.jobs.retrieve until succeeded', async () => {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const j = await openai.fineTuning.jobs.retrieve(job.id);
    if (j.status === 'succeeded') {
      tuned = j.fine_tuned_model;
      assert.ok(j.trained_tokens > 0);
      assert.equal(j.hyperparameters.n_epochs, 2);
      assert.ok(j.finished_at >= j.created_at);
      break;
    }
    assert.ok(['validating_files', 'queued', 'running'].includes(j.status), `job ${j.status}: ${JSON.stringify(j.error)}`);
    assert.ok(Date.now() < deadline, 'the job did not finish in time');
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.match(tuned, new RegExp(`^ft:${model.replace(/[.]/g, '\\.')}:npm:[0-9a-f]{12}$`));
});

await check('fineTuning.jobs.listEvents', async () => {
  const events = [];
  for await (const e of openai.fineTuning.jobs.listEvents(job.id, { limit: 100 })) events.push(e);
  assert.ok(events.length > 3);
  assert.ok(events.every((e) => e.object === 'fine_tuning.job.event'));
  const metrics = events.filter((e) => e.type === 'metrics');
  assert.ok(metrics.length > 0 && typeof metrics[0].data.train_loss === 'number');
  assert.match(events[0].message, /completed/);
});

await check('fineTuning.jobs.list', async () => {
  const ids = [];
  for await (const j of openai.fineTuning.jobs.list({ limit: 10 })) ids.push(j.id);
  assert.ok(ids.includes(job.id));
});

await check('models.retrieve and list the fine-tuned model', async () => {
  const m = await openai.models.retrieve(tuned);
  assert.equal(m.id, tuned);
  const ids = [];
  for await (const x of openai.models.list()) ids.push(x.id);
  assert.ok(ids.includes(tuned) && ids.includes(model));
});

await check('chat with the fine-tuned model', async () => {
  const r = await openai.chat.completions.create({
    model: tuned, messages: [{ role: 'user', content: 'What is a pipe?' }], max_tokens: 4, temperature: 0,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices.length, 1);
});

await check('fineTuning.jobs.cancel', async () => {
  const j = await openai.fineTuning.jobs.create({ model, training_file: file.id, hyperparameters: { n_epochs: 50 } });
  const c = await openai.fineTuning.jobs.cancel(j.id);
  assert.equal(c.id, j.id);
  assert.equal(c.status, 'cancelled');
  await assert.rejects(openai.fineTuning.jobs.retrieve('ftjob-missing'), (e) => e instanceof OpenAI.NotFoundError);
});

await check('files.delete', async () => {
  const d = await openai.files.delete(file.id);
  assert.deepEqual({ id: d.id, deleted: d.deleted }, { id: file.id, deleted: true });
});

fs.rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ ok: true, checks, fine_tuned_model: tuned }));

// llamacpp.mjs measures llama.cpp prompt processing (pp) and generation (tg)
// speed on one GGUF file through node-llama-cpp's prebuilt CPU binaries, the
// way `ruvllm bench` measures ruvllm: random prompt tokens, greedy decoding
// that never stops early, one warm-up run, then REPS timed runs.
//
//   node llamacpp.mjs --model FILE.gguf [--threads 2] [--p 512] [--n 128] [--reps 3]
//
// Prints one JSON object: {"model", "threads", "llama_cpp", "peak_rss_bytes",
// "results": [{test, tokens, tokens_per_second, stddev, samples}]}.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { parseArgs } from "node:util";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

const { values: a } = parseArgs({
  options: {
    model: { type: "string" },
    threads: { type: "string", default: "2" },
    p: { type: "string", default: "512" },
    n: { type: "string", default: "128" },
    reps: { type: "string", default: "3" },
  },
});
if (!a.model) {
  console.error("missing --model FILE.gguf");
  process.exit(2);
}
const threads = Number(a.threads), P = Number(a.p), N = Number(a.n), reps = Number(a.reps);

const llama = await getLlama({ gpu: false, build: "never", maxThreads: threads, logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath: a.model, gpuLayers: 0 });
const context = await model.createContext({
  contextSize: P + N + 16,
  batchSize: Math.max(P, 1),
  sequences: 1,
  threads: { ideal: threads, min: threads },
});
const seq = context.getSequence();

const vocab = model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length ?? 256;
// A fixed-seed generator (mulberry32), so every run sees the same tokens.
let state = 12345;
function rnd() {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const randomTokens = (k) => Array.from({ length: k }, () => Math.floor(rnd() * vocab));

function meanStddev(x) {
  const mean = x.reduce((s, v) => s + v, 0) / x.length;
  if (x.length < 2) return [mean, 0];
  const v = x.reduce((s, y) => s + (y - mean) ** 2, 0) / (x.length - 1);
  return [mean, Math.sqrt(v)];
}

async function pp() {
  await seq.clearHistory();
  const toks = randomTokens(P);
  const t0 = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(toks);
  return P / ((performance.now() - t0) / 1000);
}

// tg times N decode steps: from the first generated token (which comes out
// of the one-token prompt pass) to the (N+1)-th.
async function tg() {
  await seq.clearHistory();
  let count = 0, t0 = 0;
  for await (const _ of seq.evaluate(randomTokens(1), { temperature: 0 })) {
    count++;
    if (count === 1) t0 = performance.now();
    if (count === N + 1) break;
  }
  return N / ((performance.now() - t0) / 1000);
}

const results = [];
for (const [test, k, fn] of [[`pp${P}`, P, pp], [`tg${N}`, N, tg]]) {
  if (k <= 0) continue;
  await fn(); // warm-up
  const samples = [];
  for (let r = 0; r < reps; r++) samples.push(await fn());
  const [mean, sd] = meanStddev(samples);
  results.push({ test, tokens: k, tokens_per_second: mean, stddev: sd, samples });
}
const pkg = JSON.parse(readFileSync(new URL("./node_modules/node-llama-cpp/package.json", import.meta.url)));
console.log(JSON.stringify({
  model: a.model,
  threads: context.currentThreads ?? threads,
  llama_cpp: `node-llama-cpp ${pkg.version}, llama.cpp ${llama.llamaCppRelease?.release ?? "?"}`,
  // Peak RSS of this process: llama.cpp plus the Node.js runtime (~40-50 MiB).
  peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
  results,
}));
await context.dispose();
await model.dispose();
await llama.dispose();

// golden.mjs regenerates engine/llm/testdata/llamacpp-avx512: llama.cpp's
// greedy continuations (and the top-5 probabilities of the first 8
// positions) of the prompts of ../shared/golden, on this machine, with
// node-llama-cpp's prebuilt CPU build and its default context settings
// (flash attention "auto", which is on for the CPU; repacked Q4_0).
//
//   node golden.mjs MODEL.gguf GOLDEN.jsonl OUT.jsonl
//
// The prompts and token counts come from GOLDEN.jsonl (the shared files);
// the outputs are what this CPU's llama.cpp build computes.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { readFileSync, writeFileSync } from "node:fs";

const [model, golden, out] = process.argv.slice(2);
if (!out) {
  console.error("usage: node golden.mjs MODEL.gguf GOLDEN.jsonl OUT.jsonl");
  process.exit(2);
}
const llama = await getLlama({ gpu: false, build: "never", maxThreads: 2, logLevel: LlamaLogLevel.error });
const m = await llama.loadModel({ modelPath: model, gpuLayers: 0 });
const ctx = await m.createContext({ contextSize: 2048, batchSize: 512, sequences: 1, threads: { ideal: 2, min: 2 } });
const seq = ctx.getSequence();
const lines = [];
for (const line of readFileSync(golden, "utf8").trim().split("\n")) {
  const row = JSON.parse(line);
  const tokens = [], top = [];
  if (row.prompt_tokens.length > 0) {
    await seq.clearHistory();
    for await (const r of seq.evaluateWithMetadata(row.prompt_tokens, { probabilities: true }, { temperature: 0 })) {
      if (top.length < 8) top.push([...r.probabilities.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5));
      tokens.push(r.token);
      if (tokens.length === row.tokens.length) break;
    }
  }
  lines.push(JSON.stringify({ prompt: row.prompt, prompt_tokens: row.prompt_tokens, tokens, text: m.detokenize(tokens), top5_probs: top }));
}
writeFileSync(out, lines.join("\n") + "\n");

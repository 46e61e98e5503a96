// compare.mjs runs `ruvllm bench` and llama.cpp (llamacpp.mjs, through
// node-llama-cpp's prebuilt CPU binaries) on the same GGUF files with the
// same threads, prompt and generation lengths, and prints a markdown table
// of both speeds and their ratio, the decode bound that memory bandwidth
// sets, and ruvllm's peak RSS against its budget (file + KV cache + 64 MiB).
// Start it through run.sh, which builds ruvllm and installs node-llama-cpp.
//
//   node compare.mjs --ruvllm BIN [--quick] [--write] [-t THREADS] [-p 512] [-n 128] [-r 5]
//                    [--model FILE]... [--no-shared] [--no-synthetic] [--cache DIR] [--shared DIR]
//
// Models: every *.gguf in the shared models directory (found above the
// repository as shared/models, or --shared) and synthetic 0.5B-class llama
// and qwen2 models in Q4_0, Q8_0 and Q4_K that `ruvllm testmodel` writes
// into the cache directory once. --model FILE replaces both lists.
// --quick: -p 32 -n 8 -r 1, to check that everything runs.
// --write: also replace the table between the compare markers in the
// repository's BENCHMARKS.md. Raw results go to results/DATE.json.
import { parseArgs } from "node:util";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync, statSync } from "node:fs";
import { availableParallelism, cpus, totalmem, release } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");

const { values: a } = parseArgs({
  options: {
    ruvllm: { type: "string" },
    quick: { type: "boolean", default: false },
    write: { type: "boolean", default: false },
    threads: { type: "string", short: "t" },
    p: { type: "string", short: "p" },
    n: { type: "string", short: "n" },
    reps: { type: "string", short: "r" },
    model: { type: "string", multiple: true },
    "no-shared": { type: "boolean", default: false },
    "no-synthetic": { type: "boolean", default: false },
    cache: { type: "string", default: join(here, "models") },
    shared: { type: "string" },
  },
});
if (!a.ruvllm) fail("missing --ruvllm BIN (start compare.mjs through run.sh)");
const threads = Number(a.threads ?? availableParallelism());
const P = Number(a.p ?? (a.quick ? 32 : 512));
const N = Number(a.n ?? (a.quick ? 8 : 128));
const reps = Number(a.reps ?? (a.quick ? 1 : 5));
for (const [k, v] of Object.entries({ threads, p: P, n: N, reps })) {
  if (!Number.isInteger(v) || v < (k === "p" || k === "n" ? 0 : 1)) fail(`bad --${k} ${v}`);
}

function fail(msg) {
  console.error(`compare: ${msg}`);
  process.exit(2);
}

function log(msg) {
  console.error(`compare: ${msg}`);
}

// run runs a command and returns its stdout; it throws with the tail of
// stderr when the command fails.
function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.error) throw new Error(`${basename(cmd)}: ${r.error.message}`);
  if (r.status !== 0) {
    const tail = (r.stderr || r.stdout || "").trim().split("\n").slice(-5).join("\n");
    throw new Error(`${basename(cmd)} ${args.join(" ")}: exit ${r.status ?? r.signal}\n${tail}`);
  }
  return r.stdout;
}

// lastJSON parses the last line of out that is a JSON object.
function lastJSON(out) {
  const lines = out.trim().split("\n").filter((l) => l.startsWith("{"));
  if (lines.length === 0) throw new Error(`no JSON in output: ${out.slice(-300)}`);
  return JSON.parse(lines[lines.length - 1]);
}

// sharedDir finds shared/models in the repository or a directory above it,
// as the Go tests do.
function sharedDir() {
  if (a.shared) return a.shared;
  for (let d = root; ; d = dirname(d)) {
    const p = join(d, "shared", "models");
    if (existsSync(p)) return p;
    if (dirname(d) === d) return null;
  }
}

// synthetic describes the generated models: shapes of 0.5B-class llama
// and qwen2 models whose rows are whole Q4_K super-blocks (multiples of
// 256), with the shared models' 8192-token vocabularies where available.
const synthetic = [
  { arch: "llama", args: ["--layers", "24", "--dim", "1024", "--heads", "16", "--kv-heads", "4", "--ff", "5376"], vocab: "ruvllm-test-llama-19m-q8_0.gguf" },
  { arch: "qwen2", args: ["--layers", "24", "--dim", "1024", "--heads", "16", "--kv-heads", "2", "--ff", "4864"], vocab: "ruvllm-test-qwen2-13m-q8_0.gguf" },
];
const syntheticTypes = ["q4_0", "q8_0", "q4_k"];

function models() {
  if (a.model) return a.model.map((m) => resolve(m));
  const out = [];
  const shared = sharedDir();
  if (!a["no-shared"]) {
    if (shared) {
      for (const f of readdirSync(shared).sort()) if (f.endsWith(".gguf")) out.push(join(shared, f));
    } else log("no shared/models directory found: shared models skipped (--shared DIR)");
  }
  if (!a["no-synthetic"]) {
    mkdirSync(a.cache, { recursive: true });
    for (const s of synthetic) {
      for (const t of syntheticTypes) {
        const path = join(a.cache, `synth-${s.arch}-0.5b-${t}.gguf`);
        if (!existsSync(path)) {
          log(`generating ${path} (once; delete it to regenerate)`);
          const args = ["testmodel", "--arch", s.arch, ...s.args, "--ctx", "2048", "--type", t, "-o", path + ".tmp"];
          if (shared && existsSync(join(shared, s.vocab))) args.push("--vocab-from", join(shared, s.vocab));
          run(a.ruvllm, args);
          renameSync(path + ".tmp", path);
        }
        out.push(path);
      }
    }
  }
  if (out.length === 0) fail("no models: pass --model FILE");
  return out;
}

const mib = (n) => n / (1 << 20);
const fmt = (x, d = 2) => (x === undefined || x === null || Number.isNaN(x) ? "–" : x.toFixed(d));
const tps = (f) => (f ? `${fmt(f.tokens_per_second)} ± ${fmt(f.stddev)}` : "failed");

function main() {
  const files = models();
  const rows = [];
  let failed = 0;

  log(`memory bandwidth with ${threads} threads`);
  const bw = lastJSON(run(a.ruvllm, ["bench", "--membw", "-t", String(threads), "--json"])).membw;

  for (const file of files) {
    const row = { file, name: basename(file, ".gguf") };
    const common = ["-p", String(P), "-n", String(N)];
    log(`${row.name}: ruvllm bench`);
    try {
      row.ruvllm = lastJSON(run(a.ruvllm, ["bench", "-m", file, ...common, "-r", String(reps), "-t", String(threads), "--json"]));
    } catch (e) {
      failed++;
      row.ruvllmError = e.message;
      log(e.message);
    }
    log(`${row.name}: llama.cpp`);
    try {
      row.llama = lastJSON(run(process.execPath, [join(here, "llamacpp.mjs"), "--model", file, "--threads", String(threads),
        "--p", String(P), "--n", String(N), "--reps", String(reps)]));
    } catch (e) {
      failed++;
      row.llamaError = e.message;
      log(e.message);
    }
    rows.push(row);
  }

  const report = { date: new Date().toISOString(), machine: machine(), threads, p: P, n: N, reps, membw: bw, rows };
  const md = markdown(report);
  console.log(md);
  mkdirSync(join(here, "results"), { recursive: true });
  const stamp = report.date.replace(/[:.]/g, "-");
  writeFileSync(join(here, "results", `${stamp}.json`), JSON.stringify(report, null, 1));
  if (a.write) writeBenchmarks(md);
  if (failed > 0) {
    log(`${failed} run(s) failed`);
    process.exit(1);
  }
}

function machine() {
  const c = cpus();
  let go = "", commit = "", llamaRelease = "";
  try { go = run("go", ["version"]).trim(); } catch { go = "go: not found"; }
  try {
    commit = run("git", ["-C", root, "rev-parse", "--short", "HEAD"]).trim();
    if (run("git", ["-C", root, "status", "--porcelain", "--untracked-files=no", "--", ".", ":!BENCHMARKS.md"]).trim() !== "") commit += " (modified)";
  } catch { commit = "?"; }
  const nlc = JSON.parse(readFileSync(join(here, "node_modules", "node-llama-cpp", "package.json"), "utf8")).version;
  try { llamaRelease = JSON.parse(readFileSync(join(here, "node_modules", "node-llama-cpp", "llama", "binariesGithubRelease.json"), "utf8")).release; } catch { llamaRelease = "?"; }
  return {
    cpu: c[0]?.model ?? "?", logicalCPUs: c.length, memoryGiB: totalmem() / (1 << 30), kernel: release(),
    go, commit, nodeLlamaCpp: nlc, llamaCpp: llamaRelease, node: process.version,
  };
}

function markdown(r) {
  const m = r.machine;
  const isa = r.rows.find((x) => x.ruvllm)?.ruvllm.isa ?? "?";
  const out = [];
  out.push(`Measured ${r.date.slice(0, 16).replace("T", " ")} UTC on ${m.cpu}, ${m.logicalCPUs} logical CPUs, ${fmt(m.memoryGiB, 1)} GiB, Linux ${m.kernel}.`);
  out.push(`ruvllm ${m.commit} (${m.go}, dot kernels: ${isa}); llama.cpp ${m.llamaCpp} from node-llama-cpp ${m.nodeLlamaCpp} (prebuilt CPU binaries, ${m.node}).`);
  out.push(`${r.threads} threads, pp${r.p} and tg${r.n}, ${r.reps} repetition${r.reps === 1 ? "" : "s"} after one warm-up; t/s is mean ± sample standard deviation.`);
  out.push(`Memory copy bandwidth (${r.membw.threads} threads, ${r.membw.buffer_bytes >> 20} MiB each): ${fmt(r.membw.read_bytes_per_second / 1e9)} GB/s read, ${fmt(r.membw.copy_bytes_per_second / 1e9)} GB/s read+write.`);
  out.push("");
  out.push("| model | type | size | test | llama.cpp t/s | ruvllm t/s | ruvllm ÷ llama.cpp |");
  out.push("|---|---|---:|---|---:|---:|---:|");
  for (const row of r.rows) {
    const rv = row.ruvllm, ll = row.llama;
    const type = rv?.file_type ?? "?";
    const size = rv ? `${fmt(mib(rv.size_bytes), 1)} MiB` : `${fmt(mib(statSync(row.file).size), 1)} MiB`;
    const tests = (rv?.results ?? ll?.results ?? []).map((f) => f.test);
    if (tests.length === 0) tests.push("–");
    for (const test of tests) {
      const fr = rv?.results.find((f) => f.test === test);
      const fl = ll?.results.find((f) => f.test === test);
      const ratio = fr && fl ? fmt(fr.tokens_per_second / fl.tokens_per_second) : "–";
      out.push(`| ${row.name} | ${type} | ${size} | ${test} | ${tps(fl)} | ${tps(fr)} | ${ratio} |`);
    }
  }
  out.push("");
  out.push("Decode bound = read bandwidth ÷ weight bytes read per token; ruvllm's RSS budget = file + KV cache + 64 MiB. Peak RSS is VmHWM; llama.cpp's includes the Node.js runtime.");
  out.push("");
  out.push("| model | weights/token | decode bound | llama.cpp tg | ruvllm tg | llama.cpp peak RSS | ruvllm peak RSS | ruvllm budget |");
  out.push("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const row of r.rows) {
    const rv = row.ruvllm;
    if (!rv) continue;
    const bound = r.membw.read_bytes_per_second / rv.weight_bytes_per_token;
    const tg = (x) => x?.results.find((f) => f.test.startsWith("tg"));
    const pct = (f) => (f ? `${fmt((100 * f.tokens_per_second) / bound, 0)} %` : "–");
    const budget = rv.size_bytes + rv.kv_bytes + 64 * (1 << 20);
    const over = rv.peak_rss_bytes > budget ? " (over)" : "";
    out.push(`| ${row.name} | ${fmt(mib(rv.weight_bytes_per_token), 1)} MiB | ${fmt(bound, 1)} t/s | ${pct(tg(row.llama))} | ${pct(tg(rv))} | ${row.llama?.peak_rss_bytes ? fmt(mib(row.llama.peak_rss_bytes), 1) + " MiB" : "–"} | ${fmt(mib(rv.peak_rss_bytes), 1)} MiB${over} | ${fmt(mib(budget), 1)} MiB |`);
  }
  return out.join("\n");
}

const begin = "<!-- compare:begin (bench/compare/run.sh --write replaces this) -->";
const end = "<!-- compare:end -->";

function writeBenchmarks(md) {
  const path = join(root, "BENCHMARKS.md");
  const text = readFileSync(path, "utf8");
  const i = text.indexOf(begin), j = text.indexOf(end);
  if (i < 0 || j < i) fail(`${path}: no "${begin}" … "${end}" markers`);
  writeFileSync(path, text.slice(0, i + begin.length) + "\n" + md + "\n" + text.slice(j));
  log(`wrote ${path}`);
}

main();

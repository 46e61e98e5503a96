#!/usr/bin/env python3
"""kld.py scores ruvllm against llama.cpp directly, by llama.cpp's own measure:
`llama-perplexity --kl-divergence-base` saves llama.cpp's next-token
log-probabilities over a text, then `ruvllm perplexity --kl-divergence` (and
`llama-perplexity --kl-divergence` for llama.cpp's own variants) score other
runs against them on exactly those tokens: mean KL divergence, how often the
top token is the same, and the perplexity ratio.

Rows, for each shared model (../shared/models: llama 19M and qwen2 13M in F16,
Q8_0, Q4_0 and Q4_K_M):

  ruvllm            the default (fast) mode
  ruvllm --amx off  the default mode without AMX tiles: on a CPU with AMX-INT8 the
                    default mode's Q8_0 products follow llama.cpp's AMX kernels, as
                    llama.cpp built there does; this row follows llama.cpp without
                    them, as the llama.cpp built on the development VM runs (its
                    AMX kernels crash there)
  ruvllm --exact    llama.cpp's arithmetic (with its attention path by batch size;
                    AMX order on a CPU with AMX-INT8)
  llama.cpp -ub 32  llama.cpp itself with micro-batches of 32 tokens, which take
                    its per-key f16 attention instead of the tiled float32 one: how
                    far llama.cpp moves from itself when only the batching changes

  bench/llama/kld.py                              # all eight files, ctx 512
  bench/llama/kld.py --models llama-19m-q8_0 --ctx 256 --text FILE

The text defaults to the repository's README.md and docs/DESIGN.md (about
8000 tokens; every chunk of --ctx tokens scores its second half). Files go to
a temporary directory. --llama-bin as in compare.py; --json FILE keeps the
figures.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ["llama-19m-f16", "llama-19m-q8_0", "llama-19m-q4_0", "llama-19m-q4_k_m",
          "qwen2-13m-f16", "qwen2-13m-q8_0", "qwen2-13m-q4_0", "qwen2-13m-q4_k_m"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def llama_kld(args, bin_dir, model, base, extra):
    """Scores llama.cpp itself (with extra flags) against base."""
    r = run([os.path.join(bin_dir, "llama-perplexity"), "-m", model, "-c", str(args.ctx), "-t", str(args.threads),
             "--kl-divergence-base", base, "--kl-divergence", *extra])
    out = r.stdout + r.stderr
    def grab(pat):
        m = re.search(pat, out)
        return float(m.group(1)) if m else float("nan")
    return {"kld_mean": grab(r"Mean\s+KLD:\s+(-?[\d.e+-]+)"),
            "kld_max": grab(r"Maximum KLD:\s+(-?[\d.e+-]+)"),
            "same_top": grab(r"Same top p:\s+([\d.]+)") / 100,
            "ppl": grab(r"Mean PPL\(Q\)\s*:\s+([\d.]+)")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--text", default=None)
    ap.add_argument("--llama-bin", default=None)
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-ub32", action="store_true", help="leave out the llama.cpp -ub 32 rows (slow)")
    args = ap.parse_args()

    bin_dir = args.llama_bin or run([str(ROOT / "bench/llama/build.sh")]).stdout.strip().splitlines()[-1]
    tmp = tempfile.mkdtemp(prefix="ruvllm-kld-")
    ruvllm = os.path.join(tmp, "ruvllm")
    run(["go", "build", "-o", ruvllm, "./cmd/ruvllm"], cwd=ROOT)
    text = args.text
    if text is None:
        text = os.path.join(tmp, "text.txt")
        with open(text, "w") as f:
            for p in ("README.md", "docs/DESIGN.md"):
                f.write((ROOT / p).read_text())
    commit = run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT).stdout.strip()

    rows = []
    for name in args.models.split(","):
        model = os.path.join(args.shared, "models", f"ruvllm-test-{name}.gguf")
        base = os.path.join(tmp, f"{name}.kld")
        print(f"kld.py: {name}: llama-perplexity base", file=sys.stderr)
        out = run([os.path.join(bin_dir, "llama-perplexity"), "-m", model, "-f", text, "-c", str(args.ctx),
                   "-t", str(args.threads), "--kl-divergence-base", base])
        m = re.search(r"Final estimate: PPL = ([\d.]+)", out.stdout + out.stderr)
        llama_ppl = float(m.group(1)) if m else float("nan")
        for label, flags in (("ruvllm", []), ("ruvllm --amx off", ["--amx", "off"]), ("ruvllm --exact", ["--exact"])):
            print(f"kld.py: {name}: {label}", file=sys.stderr)
            r = run([ruvllm, "perplexity", "-m", model, "--ctx", str(args.ctx), "-t", str(args.threads),
                     "--kl-divergence-base", base, "--kl-divergence", "--json", *flags])
            s = json.loads(r.stdout)
            rows.append({"model": name, "run": label, "kld_mean": s["kld_mean"], "kld_max": s["kld_max"],
                         "same_top": s["same_top"], "ppl_ratio": s["ppl"] / llama_ppl, "positions": s["positions"]})
        if args.no_ub32:
            continue
        print(f"kld.py: {name}: llama.cpp -ub 32", file=sys.stderr)
        r = llama_kld(args, bin_dir, model, base, ["-ub", "32", "-b", str(args.ctx)])
        r["ppl_ratio"] = r.pop("ppl") / llama_ppl
        rows.append({"model": name, "run": "llama.cpp -ub 32", **r})

    print(f"ruvllm {commit} against llama.cpp ({bin_dir}), llama-perplexity's measure, ctx {args.ctx}, "
          f"{args.threads} threads. Bounds of issue 20: same top >= 99.5 %, mean KLD <= 1e-4, PPL within 0.1 %.\n")
    print("PPL ratio: the run's perplexity over llama-perplexity's (the file's own PPL(base) is biased: it stores")
    print("log-probabilities only down to 16 below the top one).\n")
    print("| model | run | same top | mean KLD | max KLD | PPL ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['run']} | {100 * r['same_top']:.3f} % | {r['kld_mean']:.2e} | {r['kld_max']:.2e} | {r['ppl_ratio']:.5f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"commit": commit, "ctx": args.ctx, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Long-context prefill and decode-at-depth: `ruvllm bench` against llama-bench, alternated.

For each model and each size N (default 4096, 16384, 32768) it runs, ROUNDS times and alternating which engine
goes first:
  ppN           N random prompt tokens in one pass (ruvllm bench -p N -n 0 / llama-bench -p N -n 0)
  tgG @ dN      G generated tokens after an N-token context (ruvllm bench -p 0 -n G -d N / llama-bench -d N)
every run one repetition without warm-up (--no-warmup on both), so that a 32k prefill is paid once per round.
It prints a markdown table of each engine's range (min-max over the rounds) and the ratio of the medians, plus
the CPU seconds each run used (both engines' children, from wait4): on a shared machine wall time swings with
other people's load, and CPU time much less.

usage: bench/longctx/compare.py [--models A.gguf,B.gguf] [--sizes 4096,16384,32768] [--rounds 2] [--gen 32]
                                [--threads 2] [--ruvllm PATH] [--llama-bench PATH] [--json OUT.json]

Defaults: the models `bench/longctx/models.sh` writes into the cache directory ($RUVLLM_BENCH_CACHE, default
~/.cache/ruvllm/longctx), ruvllm from that directory (models.sh builds it), llama-bench from $LLAMA_BIN
(default /work/cache/llama.cpp/build/bin). llama.cpp's AMX kernels die with SIGILL on the development VM and
llama-bench has no flag to turn its extra buffer types off: point LLAMA_BIN at a build without AMX (the
-mno-amx-* build of bench/llama/build.sh); the script checks the binary on a tiny run first.
"""
import argparse, json, os, statistics, subprocess, sys, time

cache = os.environ.get("RUVLLM_BENCH_CACHE", os.path.expanduser("~/.cache/ruvllm/longctx"))
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--models", default=",".join(os.path.join(cache, m) for m in
                ["qwen2.5-0.5b-shape-q8_0.gguf", "llama-3.2-1b-shape-q8_0.gguf"]))
ap.add_argument("--sizes", default="4096,16384,32768")
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--gen", type=int, default=32, help="tokens generated at depth")
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--tests", default="pp,tg", help="pp, tg or both")
ap.add_argument("--ruvllm", default=os.path.join(cache, "ruvllm"))
ap.add_argument("--llama-bench", default=os.path.join(os.environ.get("LLAMA_BIN", "/work/cache/llama.cpp/build/bin"), "llama-bench"))
ap.add_argument("--llama-args", default="", help="more llama-bench arguments, e.g. '--poll 0'")
ap.add_argument("--json", help="also write every run's figures here")
a = ap.parse_args()


def run(cmd):
    """Runs cmd; returns (stdout, wall seconds). The caller reads the child's CPU time from os.times()."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}\n{err[-2000:]}")
    return out, wall


def cpu_children():
    r = os.times()
    return r.children_user + r.children_system


def ruvllm(model, pp, tg, depth):
    cmd = [a.ruvllm, "bench", "-m", model, "-p", str(pp), "-n", str(tg), "-r", "1", "--no-warmup",
           "-t", str(a.threads), "--json"]
    if depth:
        cmd += ["-d", str(depth)]
    c0 = cpu_children()
    out, wall = run(cmd)
    rep = json.loads(out)
    r = rep["results"][0]
    return {"tps": r["tokens_per_second"], "cpu_s": cpu_children() - c0, "wall_s": wall, "test": r["test"],
            "kv_bytes": rep.get("kv_bytes"), "peak_rss": rep.get("peak_rss_bytes"), "isa": rep.get("isa")}


def llama(model, pp, tg, depth):
    cmd = [a.llama_bench, "-m", model, "-p", str(pp), "-n", str(tg), "-d", str(depth), "-r", "1", "--no-warmup",
           "-t", str(a.threads), "-fa", "on", "-o", "json"] + a.llama_args.split()
    c0 = cpu_children()
    out, wall = run(cmd)
    r = [x for x in json.loads(out) if x["n_prompt"] == pp and x["n_gen"] == tg][0]
    return {"tps": r["avg_ts"], "cpu_s": cpu_children() - c0, "wall_s": wall, "build": r["build_commit"]}


# The llama.cpp binary must run here at all (AMX builds die with SIGILL on the first product).
probe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "models", "ruvllm-test-qwen2-13m-q8_0.gguf")
if os.path.exists(probe):
    try:
        llama(probe, 16, 0, 0)
    except RuntimeError as e:
        sys.exit(f"llama-bench fails on a tiny model (AMX build on a CPU that kills AMX?): {e}\n"
                 "Set LLAMA_BIN to a llama.cpp build without AMX (bench/llama/build.sh on branch perf).")

rows, raw = [], []
for model in a.models.split(","):
    name = os.path.basename(model).removesuffix(".gguf")
    for n in [int(s) for s in a.sizes.split(",")]:
        for kind in a.tests.split(","):
            pp, tg, depth = (n, 0, 0) if kind == "pp" else (0, a.gen, n)
            test = f"pp{n}" if kind == "pp" else f"tg{a.gen} @ d{n}"
            figs = {"ruvllm": [], "llama.cpp": []}
            for rnd in range(a.rounds):
                order = [("ruvllm", ruvllm), ("llama.cpp", llama)]
                if rnd % 2:
                    order.reverse()
                for eng, fn in order:
                    load0 = os.getloadavg()[0]
                    f = fn(model, pp, tg, depth)
                    f.update(engine=eng, model=name, kind=kind, n=n, round=rnd, load=(load0, os.getloadavg()[0]),
                             at=time.strftime("%H:%M", time.gmtime()))
                    figs[eng].append(f)
                    raw.append(f)
                    print(f"{name} {test} {eng} round {rnd}: {f['tps']:.2f} t/s, {f['cpu_s']:.1f} CPU s, {f['wall_s']:.0f} s, "
                          f"load {f['load'][0]:.1f}->{f['load'][1]:.1f}, done {f['at']} UTC",
                          file=sys.stderr, flush=True)
                    if a.json:
                        with open(a.json, "w") as fh:
                            json.dump(raw, fh, indent=1)
            cell = lambda fs: (f"{min(x['tps'] for x in fs):.2f}" if len(fs) == 1 else
                               f"{min(x['tps'] for x in fs):.2f}–{max(x['tps'] for x in fs):.2f}")
            med = lambda fs, k: statistics.median(x[k] for x in fs)
            ratio = med(figs["ruvllm"], "tps") / med(figs["llama.cpp"], "tps")
            cpu = med(figs["llama.cpp"], "cpu_s") / med(figs["ruvllm"], "cpu_s")
            loads = [v for fs in figs.values() for x in fs for v in x["load"]]
            rows.append(f"| {name} | {test} | {cell(figs['llama.cpp'])} | {cell(figs['ruvllm'])} | {ratio:.2f} | "
                        f"{med(figs['llama.cpp'], 'cpu_s'):.1f} / {med(figs['ruvllm'], 'cpu_s'):.1f} ({cpu:.2f}) | "
                        f"{min(loads):.1f}–{max(loads):.1f} |")
            print(rows[-1], flush=True)

print()
print(f"{a.threads} threads, {a.rounds} alternated rounds, one repetition each without warm-up; t/s ranges over the rounds,")
print("ratio = ruvllm ÷ llama.cpp of the medians; CPU s = the whole process (load, fill of the depth context, test),")
print("llama.cpp / ruvllm, and in brackets llama.cpp's over ruvllm's (above 1: ruvllm used less).")
print()
print("load = the 1-minute load average at the start and end of each run (range over the cell's runs).")
print()
print("| model | test | llama.cpp t/s | ruvllm t/s | ratio | CPU s llama.cpp / ruvllm | load |")
print("|---|---|---:|---:|---:|---:|---:|")
for r in rows:
    print(r)

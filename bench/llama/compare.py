#!/usr/bin/env python3
"""compare.py measures `ruvllm bench` against `llama-bench` side by side on
synthetic models with real shapes, and prints one markdown table.

Models are written once by `ruvllm testmodel` (random weights in F16, with a
real vocabulary) into a cache directory, never the repository, and quantized
to each format with llama.cpp's own `llama-quantize`:

  qwen2-0.5b  the Qwen2.5-0.5B shape: 24 layers, dim 896, 14 heads, 2 KV heads,
              FF 4864, Qwen2's 151,936-token vocabulary
  llama-1b    the Llama-3.2-1B shape: 16 layers, dim 2048, 32 heads, 8 KV heads,
              FF 8192, Llama 3's 128,256-token vocabulary

The machine is shared, so the two programs run alternately, one repetition
each, `--rounds` times per model (the order flips every round), and the table
shows each side's median and range over the rounds and the ratio of medians
with the range of the per-round ratios.

  bench/llama/compare.py                         # every shape and format, 3 rounds
  bench/llama/compare.py --shapes qwen2-0.5b --types q4_0,q8_0 --rounds 5
  bench/llama/compare.py --exact                 # ruvllm in llama.cpp's arithmetic
  bench/llama/compare.py --table samples.json    # the tables again from a --json file

Contention: llama.cpp's thread pool meets at a barrier after every operation, so
when other processes take a core from one of its two threads the other waits:
with the 2-core machine fully busy, llama-bench -t 2 fell to a tenth of its
speed (qwen2-0.5b Q4_0 tg 0.7 t/s, against 7 with -t 1) while ruvllm lost about
half. Ratios measured under load say more about that than about the kernels, so
each run measures the CPU time other processes took during it (/proc/stat less
this run's own), a round whose runs saw more than --max-busy CPUs of others is
measured again (up to --retries times), and the table shows the worst figure.
Before each run the script waits (up to --max-wait seconds) for a second with
less than --max-busy CPUs of others.

Environment / flags: --llama-bin DIR (default: what bench/llama/build.sh prints),
--models DIR (default ~/.cache/ruvllm/bench-models), --ruvllm BIN (default: a
fresh `go build` of ./cmd/ruvllm into the models directory), -t threads (2),
-p/-n (512/128), --json FILE to keep every sample.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import resource
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHAPES = {
    "qwen2-0.5b": ["--arch", "qwen2", "--layers", "24", "--dim", "896", "--heads", "14", "--kv-heads", "2",
                   "--ff", "4864", "--vocab-from", "vocab/ggml-vocab-qwen2.gguf"],
    "llama-1b": ["--arch", "llama", "--layers", "16", "--dim", "2048", "--heads", "32", "--kv-heads", "8",
                 "--ff", "8192", "--vocab-from", "vocab/ggml-vocab-llama-bpe.gguf"],
}
TYPES = ["f16", "bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


HZ = os.sysconf("SC_CLK_TCK")


def cpu_busy():
    """Returns the machine's busy CPU seconds so far (all CPUs, /proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = v[:8]
    return (user + nice + system + irq + softirq + steal) / HZ


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def others(fn):
    """Runs fn and returns its result and the CPUs other processes used meanwhile."""
    b0, c0, t0 = cpu_busy(), children_cpu(), time.monotonic()
    out = fn()
    b1, c1, t1 = cpu_busy(), children_cpu(), time.monotonic()
    return out, max(0.0, (b1 - b0) - (c1 - c0)) / max(t1 - t0, 1e-3)


def wait_quiet(args):
    """Waits up to --max-wait seconds for a second in which others use under --max-busy CPUs."""
    deadline = time.monotonic() + args.max_wait
    while True:
        _, busy = others(lambda: time.sleep(1))
        if busy <= args.max_busy or time.monotonic() > deadline:
            return busy
        time.sleep(4)


def ensure_model(args, shape, typ):
    """Returns the path of the model file of shape and type, making it if needed."""
    models = pathlib.Path(args.models)
    models.mkdir(parents=True, exist_ok=True)
    base = models / f"{shape}-f16.gguf"
    if not base.exists():
        shared = pathlib.Path(args.shared)
        flags = [f if not f.startswith("vocab/") else str(shared / f) for f in SHAPES[shape]]
        print(f"compare.py: writing {base}", file=sys.stderr)
        run([args.ruvllm, "testmodel", *flags, "--type", "f16", "--ctx", "4096", "-o", str(base)])
    if typ == "f16":
        return base
    out = models / f"{shape}-{typ}.gguf"
    if not out.exists():
        print(f"compare.py: quantizing {out.name}", file=sys.stderr)
        run([os.path.join(args.llama_bin, "llama-quantize"), str(base), str(out), typ.upper(), str(args.threads)])
    return out


def llama_bench(args, model):
    r = run([os.path.join(args.llama_bin, "llama-bench"), "-m", str(model), "-p", str(args.p), "-n", str(args.n),
             "-r", "1", "-t", str(args.threads), "-o", "json"])
    out = {}
    for row in json.loads(r.stdout):
        test = f"pp{row['n_prompt']}" if row["n_prompt"] else f"tg{row['n_gen']}"
        out[test] = row["avg_ts"]
    return out


WEIGHT_BYTES = {}  # model -> weight bytes one decode step reads (ruvllm bench)


def ruvllm_bench(args, model):
    cmd = [args.ruvllm, "bench", "-m", str(model), "-p", str(args.p), "-n", str(args.n), "-r", "1",
           "-t", str(args.threads), "--json"]
    if args.exact:
        cmd.append("--exact")
    rep = json.loads(run(cmd).stdout)
    WEIGHT_BYTES[str(model)] = rep["weight_bytes_per_token"]
    return {f["test"]: f["tokens_per_second"] for f in rep["results"]}


def ruvllm_bench_probed(args, model):
    """ruvllm_bench between two `--membw` probes, whose figures go into the result as "membw"."""
    before = membw(args)
    out = ruvllm_bench(args, model)
    out["membw"] = [before, membw(args)]
    return out


def membw(args):
    """Read bandwidth in bytes/s (ruvllm bench --membw: its read-only stream through 1 GiB)."""
    r = json.loads(run([args.ruvllm, "bench", "--membw", "--json", "-t", str(args.threads)]).stdout)
    return r["membw"]["read_bytes_per_second"]


def fmt_range(v):
    return f"{statistics.median(v):.1f} ({min(v):.1f}–{max(v):.1f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--exact", action="store_true", help="run ruvllm with --exact")
    ap.add_argument("--models", default=os.path.expanduser("~/.cache/ruvllm/bench-models"))
    ap.add_argument("--llama-bin", default=None)
    ap.add_argument("--ruvllm", default=None)
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--json", default=None, help="write every sample to this file (after every round)")
    ap.add_argument("--table", default=None, help="print the tables of a --json file and exit")
    ap.add_argument("--max-busy", type=float, default=0.25, help="CPUs other processes may use during a round")
    ap.add_argument("--retries", type=int, default=3, help="times a round is measured again when others were busy")
    ap.add_argument("--max-wait", type=float, default=60, help="seconds to wait for a quiet second before a run")
    args = ap.parse_args()
    if args.table:
        with open(args.table) as f:
            table(json.load(f))
        return

    if args.llama_bin is None:
        args.llama_bin = run([str(ROOT / "bench/llama/build.sh")]).stdout.strip().splitlines()[-1]
    if args.ruvllm is None:
        pathlib.Path(args.models).mkdir(parents=True, exist_ok=True)
        args.ruvllm = os.path.join(args.models, "ruvllm")
        run(["go", "build", "-o", args.ruvllm, "./cmd/ruvllm"], cwd=ROOT)
    try:
        commit = run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT).stdout.strip()
        dirty = run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = os.environ.get("RUVLLM_COMMIT", "unknown"), ""

    wait_quiet(args)
    bws = [membw(args)]
    samples = {}
    files = {}
    for shape in args.shapes.split(","):
        for typ in args.types.split(","):
            model = ensure_model(args, shape, typ)
            key = f"{shape} {typ.upper()}"
            files[key] = str(model)
            s = samples.setdefault(key, {"llama": {}, "ruvllm": {}, "busy": []})
            for rnd in range(args.rounds):
                order = [("llama", llama_bench), ("ruvllm", ruvllm_bench_probed)]
                if rnd % 2:
                    order.reverse()
                for attempt in range(args.retries + 1):
                    got, busy = {}, 0.0
                    for name, fn in order:
                        wait_quiet(args)
                        got[name], b = others(lambda: fn(args, model))
                        busy = max(busy, b)
                    if busy <= args.max_busy:
                        break
                    print(f"compare.py: {key} round {rnd + 1}: others used {busy:.2f} CPUs, again", file=sys.stderr)
                s.setdefault("membw", []).append(got["ruvllm"].pop("membw"))
                for name in got:
                    for test, ts in got[name].items():
                        s[name].setdefault(test, []).append(ts)
                s["busy"].append(busy)
                print(f"compare.py: {key} round {rnd + 1}: " + ", ".join(
                    f"{n} {t} {v[-1]:.1f}" for n in ("llama", "ruvllm") for t, v in s[n].items()) +
                    f"; others {busy:.2f} CPUs", file=sys.stderr)
                if args.json:
                    save(args, commit, dirty, samples, bws, files)

    wait_quiet(args)
    bws.append(membw(args))
    if args.json:
        save(args, commit, dirty, samples, bws, files)
    table({"commit": commit, "dirty": bool(dirty), "exact": args.exact, "llama_bin": args.llama_bin,
           "threads": args.threads, "rounds": args.rounds, "max_busy": args.max_busy, "samples": samples,
           "membw": bws, "weight_bytes": WEIGHT_BYTES, "files": files})


def save(args, commit, dirty, samples, bws, files):
    with open(args.json, "w") as f:
        json.dump({"commit": commit, "dirty": bool(dirty), "exact": args.exact, "llama_bin": args.llama_bin,
                   "threads": args.threads, "rounds": args.rounds, "max_busy": args.max_busy,
                   "samples": samples, "membw": bws, "weight_bytes": WEIGHT_BYTES, "files": files}, f, indent=1)


def table(d):
    """Prints the comparison and decode-bound tables from saved samples."""
    samples, bws = d["samples"], d["membw"]
    bw = max(bws)
    mode = "ruvllm --exact" if d["exact"] else "ruvllm (default mode)"
    print(f"ruvllm {d['commit']}{' (modified)' if d['dirty'] else ''}, {mode}; llama.cpp from {d['llama_bin']}; "
          f"{d['threads']} threads, alternated rounds of one repetition each; "
          "t/s median (min–max), ratio of medians (range of per-round ratios); "
          "others: the most CPUs other processes used during a round's runs.\n")
    print("| model | test | llama-bench t/s | ruvllm t/s | ruvllm ÷ llama.cpp | rounds | others |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for key, s in samples.items():
        for test in s["llama"]:
            lv, rv = s["llama"][test], s["ruvllm"].get(test, [])
            if not rv:
                continue
            ratios = [r / l for r, l in zip(rv, lv)]
            busy = max(s.get("busy") or [0])
            print(f"| {key} | {test} | {fmt_range(lv)} | {fmt_range(rv)} | "
                  f"**{statistics.median(rv) / statistics.median(lv):.2f}** ({min(ratios):.2f}–{max(ratios):.2f}) | "
                  f"{len(rv)} | {busy:.2f} |")
    print(f"\nDecode bound = read bandwidth ÷ weight bytes per token. The machine's read bandwidth can change "
          "by half within seconds (another tenant of the host), so each ruvllm run sits between two "
          "`ruvllm bench --membw` probes and is set against their mean (\"adjacent\": median and range over the "
          "rounds; a round whose probes differ by more than 10 % is left out and counted under \"moved\"); the "
          f"best of {len(bws)} probes before and after the whole run ({bw / 1e9:.1f} GB/s) is the older, stricter "
          "figure.\n")
    print("| model | weights/token | ruvllm tg (median) | probes (GB/s) | % of adjacent probes | moved | "
          "% of best probe |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for key, s in samples.items():
        tg = [v for t, v in s["ruvllm"].items() if t.startswith("tg")]
        wb = d["weight_bytes"].get(d["files"][key])
        if not tg or not wb:
            continue
        med = statistics.median(tg[0])
        adj, moved, probes = [], 0, []
        for ts, (b0, b1) in zip(tg[0], s.get("membw", [])):
            probes += [b0, b1]
            if abs(b0 - b1) > 0.1 * max(b0, b1):
                moved += 1
                continue
            adj.append(100 * ts * wb / ((b0 + b1) / 2))
        adjs = f"{statistics.median(adj):.0f} % ({min(adj):.0f}–{max(adj):.0f})" if adj else "–"
        prs = f"{min(probes) / 1e9:.1f}–{max(probes) / 1e9:.1f}" if probes else "–"
        print(f"| {key} | {wb / 2**20:.1f} MiB | {med:.1f} | {prs} | {adjs} | {moved} | "
              f"{100 * med * wb / bw:.0f} % |")


if __name__ == "__main__":
    main()

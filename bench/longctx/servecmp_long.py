#!/usr/bin/env python3
"""A long document shared by three apps: cold and warm time to first token, against ruvllmd or llama-server.

The long-document variant of ../shared/bench/servecmp.py's shared-prefix workload: a document of about
--tokens tokens (default 16,000) is the prefix of six streamed /v1/completions requests from three apps
("mail", "editor", "notes", by User-Agent), each with its own question after it. The first request finds
nothing cached (cold); the other five find the document computed by an earlier one, whichever app sent it
(warm). Prints JSON: cold TTFT, the warm TTFTs (median, min, max) and the prompt's tokens as the server counted
them.

usage: servecmp_long.py TARGET [MODEL] [--doc FILE] [--tokens 16000]
  TARGET is unix:/path/to.sock (ruvllmd) or http://127.0.0.1:PORT (llama-server)

The document is the text of --doc (default: this repository's README.md, docs/DESIGN.md and BENCHMARKS.md,
repeated as needed), cut at about 3.6 characters a token; the JSON says how many tokens it really was.
"""
import argparse, http.client, json, os, socket, statistics, sys, time

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("target")
ap.add_argument("model", nargs="?", default="default")
ap.add_argument("--doc", action="append", help="document text file(s)")
ap.add_argument("--tokens", type=int, default=16000, help="about how many tokens the document has")
ap.add_argument("--chars-per-token", type=float, default=3.6)
a = ap.parse_args()


class UC(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("x", timeout=3600)
        self.path_ = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.path_)


def conn():
    if a.target.startswith("unix:"):
        return UC(a.target[5:])
    h, p = a.target[len("http://"):].split(":")
    return http.client.HTTPConnection(h, int(p), timeout=3600)


def complete(prompt, n, agent):
    """Streams one completion; returns (ttft seconds, prompt tokens or None)."""
    c = conn()
    body = json.dumps({"model": a.model, "prompt": prompt, "max_tokens": n, "temperature": 0, "stream": True,
                       "stream_options": {"include_usage": True}, "cache_prompt": True})
    t0 = time.perf_counter()
    ttft, prompt_tokens = None, None
    c.request("POST", "/v1/completions", body, {"content-type": "application/json", "user-agent": agent})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"{r.status} {r.read()[:300]}")
    while True:
        line = r.readline()
        if not line:
            break
        if not line.startswith(b"data: "):
            continue
        d = line[6:].strip()
        if d == b"[DONE]":
            break
        ev = json.loads(d)
        if ev.get("choices") and ttft is None:
            ttft = time.perf_counter() - t0
        if ev.get("usage"):
            prompt_tokens = ev["usage"].get("prompt_tokens")
    c.close()
    return ttft, prompt_tokens


here = os.path.dirname(os.path.abspath(__file__))
files = a.doc or [os.path.join(here, "..", "..", f) for f in ["README.md", "docs/DESIGN.md", "BENCHMARKS.md"]]
text = "\n\n".join(open(f, encoding="utf-8").read() for f in files)
want = int(a.tokens * a.chars_per_token)
while len(text) < want:
    text += "\n\n" + text
doc = "Read this document, then answer the question after it.\n\n" + text[:want]

out = {"target": a.target, "document_chars": len(doc)}
complete("Warm up the engine, please.", 2, "warmup")  # loads the model; shares nothing with the document
ttfts = []
for i, agent in enumerate(["mail", "editor", "notes", "mail", "editor", "notes"]):
    t, n = complete(doc + f"\n\nQuestion {i} from {agent}: what does section {i + 1} say?\nAnswer:", 8, agent)
    ttfts.append(t)
    if n:
        out["prompt_tokens"] = n
    print(f"{agent}: TTFT {t * 1000:.0f} ms", file=sys.stderr, flush=True)
warm = ttfts[1:]
out["cold_ttft_ms"] = round(ttfts[0] * 1000, 1)
out["warm_ttft_ms_median"] = round(statistics.median(warm) * 1000, 1)
out["warm_ttft_ms_min"] = round(min(warm) * 1000, 1)
out["warm_ttft_ms_max"] = round(max(warm) * 1000, 1)
out["cold_over_warm"] = round(ttfts[0] / statistics.median(warm), 1)
print(json.dumps(out))

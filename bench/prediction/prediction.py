#!/usr/bin/env python3
"""prediction.py measures OpenAI predicted outputs against a running ruvllmd: for each prompt, 200 greedy tokens
with speculation off, with the daemon's default speculation (prompt lookup), with a prediction equal to the reply
(regenerating it) and with one with two words changed (an edit), each checked to give the same text, and prints the
decode speed (the daemon's /v1/requests tokens_per_second, which excludes the prompt) per prompt and kind.

    bench/prediction/prediction.py http://127.0.0.1:PORT [ROUNDS]   # ruvllmd --listen 127.0.0.1:PORT -m MODEL
"""
import json
import statistics
import sys
import urllib.request

PROMPTS = [
    "Documentation/process/submitting-patches.rst: Describe your changes. Describe your problem. Whether your patch "
    "is a one-line bug fix or 5000 lines of a new feature, there must be an underlying problem that motivated you to "
    "do this work.\n\nRewrite the paragraph above:",
    "The kernel's memory management",
    "static int foo(struct device *dev)\n{\n\tint ret;\n",
]
KINDS = ["off", "lookup", "prediction (the reply)", "prediction (edited)"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    base, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3

    def post(body):
        req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read()), r.headers.get("X-Ruvllm-Request-Id")

    def speed(rid):
        with urllib.request.urlopen(base + "/v1/requests?limit=50") as r:
            return next(rec.get("tokens_per_second", 0) for rec in json.loads(r.read()) if rec["id"] == rid)

    rows = {(i, k): [] for i in range(len(PROMPTS)) for k in KINDS}
    details = {}
    for _ in range(rounds):
        for i, prompt in enumerate(PROMPTS):
            body = {"prompt": prompt, "max_tokens": 200, "temperature": 0}
            out, rid = post(dict(body, speculation="off"))
            text = out["choices"][0]["text"]
            rows[(i, "off")].append(speed(rid))
            words = text.split(" ")
            words[len(words) // 3], words[2 * len(words) // 3] = "zebra", "giraffe"
            for kind, extra in (("lookup", {}), ("prediction (the reply)", {"prediction": {"type": "content", "content": text}}),
                                ("prediction (edited)", {"prediction": {"type": "content", "content": " ".join(words)}})):
                out, rid = post(dict(body, **extra))
                if out["choices"][0]["text"] != text:
                    sys.exit(f"prompt {i}, {kind}: the reply changed")
                rows[(i, kind)].append(speed(rid))
                details[(i, kind)] = out["usage"].get("completion_tokens_details")
    for (i, kind), v in rows.items():
        off = statistics.median(rows[(i, "off")])
        print(f"prompt {i}  {kind:23} {statistics.median(v):7.0f} tok/s ({min(v):.0f}-{max(v):.0f})  {statistics.median(v) / off:.2f}x  {details.get((i, kind)) or ''}")


if __name__ == "__main__":
    main()

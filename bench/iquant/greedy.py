#!/usr/bin/env python3
"""Greedy generations from a running llama-server, as JSONL for bench/iquant/agree.

    greedy.py http://127.0.0.1:PORT prompts.json N > out.jsonl

For every prompt (the JSON list in prompts.json; empty prompts are skipped)
the server tokenizes it as llama.cpp would for generation (special tokens
added, special text not parsed) and generates N tokens greedily from those
tokens; each line holds prompt, prompt_tokens and tokens.
"""
import json
import sys
import urllib.request


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def main():
    base, prompts_file, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    prompts = json.load(open(prompts_file))
    for p in prompts:
        if not p:
            continue
        toks = post(base + "/tokenize", {"content": p, "add_special": True, "parse_special": False})["tokens"]
        out = post(base + "/completion", {
            "prompt": toks, "n_predict": n, "temperature": 0, "top_k": 1, "top_p": 1, "min_p": 0,
            "repeat_penalty": 1, "cache_prompt": False, "return_tokens": True, "ignore_eos": True,
        })
        print(json.dumps({"prompt": p, "prompt_tokens": toks, "tokens": out["tokens"]}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""llamacmp.py sends the same llama-server API requests (/completion, streamed and not, /infill, /tokenize,
/detokenize, /props, /health) to llama-server and to ruvllmd, and prints, for each, both answers' key fields
side by side and the top-level fields llama-server gives that ruvllmd does not. It exits 1 when ruvllmd lacks a
field llama-server answers with, answers a request llama-server answers with an error of a different class
(2xx against 4xx), or when a greedy reply differs (llama.cpp's arithmetic and ruvllm's default mode are equal
within tolerance, not bit for bit: a greedy reply that differs is reported, and only fails with --strict).

    bench/llamacmp/llamacmp.py http://127.0.0.1:8080 http://127.0.0.1:8081 [--strict]

bench/llamacmp/llamacmp.sh starts both servers on one model and runs this.
"""
import json
import sys
import urllib.error
import urllib.request


def call(base, path, body=None, stream=False):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            raw, code = r.read().decode(), r.status
    except urllib.error.HTTPError as e:
        raw, code = e.read().decode(), e.code
    if stream and code == 200:
        events = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: ") and line[6:] != "[DONE]"]
        return code, events
    try:
        return code, json.loads(raw)
    except ValueError:
        return code, raw


# Fields of llama-server's answers that ruvllmd leaves out on purpose: its sampler settings for samplers ruvllm
# does not have (refused when set), and properties of llama-server's web UI and slots.
NOT_OURS = {
    "generation_settings": {"adaptive_decay", "adaptive_target", "backend_sampling", "chat_format", "dry_allowed_length",
                            "dry_base", "dry_multiplier", "dry_penalty_last_n", "dry_sequence_breakers", "dynatemp_exponent",
                            "dynatemp_range", "generation_prompt", "grammar_lazy", "grammar_triggers", "logit_bias", "lora",
                            "max_tokens", "min_keep", "mirostat", "mirostat_eta", "mirostat_tau", "n_discard",
                            "post_sampling_probs", "preserved_tokens", "reasoning_format", "reasoning_in_content",
                            "speculative.n_max", "speculative.n_min", "speculative.p_min", "speculative.types",
                            "timings_per_token", "top_n_sigma", "xtc_probability", "xtc_threshold", "thinking_forced_open",
                            "n_ctx", "model"},
    "props": {"bos_token", "eos_token", "chat_template_caps", "cors_proxy_enabled", "endpoint_metrics", "endpoint_props",
              "endpoint_slots", "media_marker", "model_alias", "model_ftype", "ui", "ui_settings", "webui", "webui_settings"},
}

COMPLETIONS = [
    {"prompt": "Once upon a time", "n_predict": 16, "temperature": 0},
    {"prompt": "Once upon a time", "n_predict": 16, "temperature": 0, "stop": [","]},
    {"prompt": "Once upon a time", "n_predict": 4, "temperature": 0, "n_probs": 2},
    {"prompt": "Once upon a time", "n_predict": 6, "temperature": 0, "return_tokens": True},
    {"prompt": "The", "n_predict": 6, "temperature": 0, "logit_bias": [[" the", False]]},
    {"prompt": "Answer yes or no:", "n_predict": 8, "temperature": 0, "json_schema": {"type": "boolean"}},
    {"prompt": "Once upon a time", "n_predict": 8, "temperature": 0, "samplers": ["top_k", "temperature"]},
    {"prompt": "Once upon a time", "n_predict": 0},
    {"prompt": "x", "n_predict": 4, "temperature": 0, "response_fields": ["content", "generation_settings/n_predict"]},
    {"prompt": ["Once upon a time", "The", {"prompt_string": "Tell me"}], "n_predict": 6, "temperature": 0},
]
ERRORS = [
    ("/completion", {"prompt": "x", "n_probs": "many"}),
    ("/detokenize", {"tokens": [1, 2, 10000000]}),
]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    llama, ruv, strict = sys.argv[1], sys.argv[2], "--strict" in sys.argv
    failures, differ = [], 0

    def compare(name, a, b, greedy):
        nonlocal differ
        (ca, va), (cb, vb) = a, b
        print(f"== {name}\n   status: llama-server {ca}, ruvllmd {cb}")
        if (ca < 400) != (cb < 400):
            failures.append(f"{name}: llama-server {ca}, ruvllmd {cb}")
        if isinstance(va, list) and isinstance(vb, list):  # several prompts: one answer each
            print(f"   answers: llama-server {len(va)}, ruvllmd {len(vb)}")
            for x, y in zip(va, vb):
                print(f"   content           llama-server {json.dumps(x.get('content'))[:70]:72} ruvllmd {json.dumps(y.get('content'))[:70]}")
                if greedy and x.get("content") != y.get("content"):
                    differ += 1
            if len(va) != len(vb):
                failures.append(f"{name}: {len(va)} answers against {len(vb)}")
            return
        if not (isinstance(va, dict) and isinstance(vb, dict)):
            print(f"   llama-server: {str(va)[:160]}\n   ruvllmd:      {str(vb)[:160]}")
            return
        for k in ("content", "tokens", "stop_type", "stopping_word", "tokens_predicted", "tokens_evaluated", "prompt", "n_predict"):
            if k in va or k in vb:
                print(f"   {k:17} llama-server {json.dumps(va.get(k))[:70]:72} ruvllmd {json.dumps(vb.get(k))[:70]}")
        missing = sorted(set(va) - set(vb) - NOT_OURS["props"])
        gs = sorted(set(va.get("generation_settings", {})) - set(vb.get("generation_settings", {})) - NOT_OURS["generation_settings"])
        missing += ["generation_settings." + k for k in gs]
        if missing:
            failures.append(f"{name}: ruvllmd lacks {missing}")
            print(f"   ruvllmd lacks: {missing}")
        if greedy and ca == cb == 200 and va.get("content") != vb.get("content"):
            differ += 1
            print("   greedy replies differ (tolerance, not identity)")
            if strict:
                failures.append(f"{name}: greedy replies differ")

    for body in COMPLETIONS:
        greedy = body.get("temperature") == 0
        compare("/completion " + json.dumps(body), call(llama, "/completion", body), call(ruv, "/completion", body), greedy)
    body = {"prompt": "Once upon a time", "n_predict": 6, "temperature": 0, "stream": True}
    a, b = call(llama, "/completion", body, True), call(ruv, "/completion", body, True)
    print(f"== /completion {json.dumps(body)}\n   events: llama-server {len(a[1])}, ruvllmd {len(b[1])}")
    for name, evs in (("llama-server", a[1]), ("ruvllmd", b[1])):
        print(f"   {name:13} " + " | ".join(json.dumps({k: e.get(k) for k in ("content", "tokens", "stop")}) for e in evs[:3]))
    for i, (ea, eb) in enumerate(((a[1][0], b[1][0]), (a[1][-1], b[1][-1]))):
        if set(ea) - set(eb):
            failures.append(f"stream event {i}: ruvllmd lacks {sorted(set(ea) - set(eb))}")
    for body in ({"content": "Once upon a time", "with_pieces": True}, {"content": "Once upon a time", "add_special": True},
                 {"content": "<s>x", "parse_special": False}):
        a, b = call(llama, "/tokenize", body), call(ruv, "/tokenize", body)
        compare("/tokenize " + json.dumps(body), a, b, False)
        if a != b:
            failures.append(f"/tokenize {json.dumps(body)}: {a[1]} against {b[1]}")
    tokens = call(llama, "/tokenize", {"content": "Once upon a time"})[1]["tokens"]
    a, b = call(llama, "/detokenize", {"tokens": tokens}), call(ruv, "/detokenize", {"tokens": tokens})
    compare("/detokenize", a, b, False)
    if a != b:
        failures.append(f"/detokenize: {a[1]} against {b[1]}")
    compare("/infill", call(llama, "/infill", {"input_prefix": "def f(", "input_suffix": "):\n", "n_predict": 4, "temperature": 0}),
            call(ruv, "/infill", {"input_prefix": "def f(", "input_suffix": "):\n", "n_predict": 4, "temperature": 0}), True)
    for path, body in ERRORS:
        compare(path + " " + json.dumps(body), call(llama, path, body), call(ruv, path, body), False)
    compare("GET /props", call(llama, "/props"), call(ruv, "/props"), False)
    compare("GET /health", call(llama, "/health"), call(ruv, "/health"), False)
    print(f"\n{differ} greedy replies differ; {len(failures)} failures")
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

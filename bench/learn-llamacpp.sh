#!/usr/bin/env bash
# learn-llamacpp.sh checks that what ruvllm learns from feedback exports
# as a GGUF LoRA file llama.cpp loads and applies: `ruvllm bench learn`
# trains on 20 corrections (the model's own first sentence closed with
# the signature "Cheers, Ana.") and exports the consolidated adapter;
# llama-server then completes the 10 held-out prompts greedily without
# and with --lora, and the script counts the answers that follow the
# preference. Usage: bench/learn-llamacpp.sh [MODEL.gguf]; LLAMA_BIN
# overrides llama.cpp's build/bin directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-$root/../shared/models/ruvllm-test-llama-19m-f16.gguf}
bin=${LLAMA_BIN:-/work/cache/llama.cpp/build/bin}
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/ruvllm" ./cmd/ruvllm)
"$work/ruvllm" bench learn -m "$model" --k 20 --held-out 10 --routing=false --export "$work/learned.gguf"
port=$((20000 + RANDOM % 20000))
for mode in base lora; do
	args=(-m "$model" --port "$port" -c 512 -t 2)
	[ "$mode" = lora ] && args+=(--lora "$work/learned.gguf")
	LD_LIBRARY_PATH=$bin "$bin/llama-server" "${args[@]}" >"$work/server-$mode.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
		sleep 0.2
	done
	MODE=$mode PORT=$port /usr/bin/python3 - "$work/learned.gguf.prompts" <<'PY'
import json, os, sys, urllib.request
port, mode, n, follow = os.environ["PORT"], os.environ["MODE"], 0, 0
for line in open(sys.argv[1]):
    prompt = json.loads(line)
    body = json.dumps({"prompt": prompt, "n_predict": 48, "temperature": 0, "stop": ["\n"]}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", body, {"Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(req))["content"].strip()
    i = answer.find("Cheers, Ana.")
    n += 1
    follow += i > 0 and answer[:i].count(".") <= 1
    print(f"llama.cpp {mode}: {prompt!r} -> {answer!r}")
print(f"llama.cpp {mode}: {follow} of {n} held-out answers follow the preference")
PY
	kill $pid
	wait $pid 2>/dev/null || true
	pid=
done

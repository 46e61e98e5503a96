#!/usr/bin/env bash
# learn-llamacpp.sh checks that what ruvllm learns from feedback exports
# as a GGUF LoRA file llama.cpp loads and applies: `ruvllm bench learn`
# trains on 20 corrections (answers that open with "In short," and close
# with "Cheers, Ana.") and exports the consolidated adapter; llama-server
# then answers the 10 held-out questions greedily without and with
# --lora, and the script counts the answers that follow the preference.
# Usage: bench/learn-llamacpp.sh [MODEL.gguf]; LLAMA_BIN overrides
# llama.cpp's build/bin directory.
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
	n=0 follow=0
	while IFS= read -r q; do
		body=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps({"prompt": "Question: "+sys.argv[1]+"\nAnswer:", "n_predict": 48, "temperature": 0, "stop": ["\n"]}))' "$q")
		answer=$(curl -sf "http://127.0.0.1:$port/completion" -d "$body" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["content"].strip())')
		n=$((n + 1))
		case "$answer" in "In short,"*"Cheers, Ana."*) follow=$((follow + 1)) ;; esac
		echo "llama.cpp $mode: $q -> $answer"
	done <"$work/learned.gguf.questions"
	echo "llama.cpp $mode: $follow of $n held-out answers follow the preference"
	kill $pid
	wait $pid 2>/dev/null || true
	pid=
done
grep -i "lora" "$work/server-lora.log" | head -3

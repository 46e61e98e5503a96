#!/usr/bin/env bash
# serve.sh runs servecmp_long.py (a ~16k-token document shared by three apps: cold and warm TTFT) against
# ruvllmd and llama-server in turn, each started fresh for every round (empty caches; the order alternates), and
# prints one JSON line per run.
#
#   bench/longctx/serve.sh [MODEL.gguf]     # default: the Qwen2.5-0.5B-shaped Q8_0 file of models.sh
#
# Environment: ROUNDS (2), TOKENS (document size, 16000), CTX (context of both servers, 20480), THREADS (2),
# LLAMA_BIN (llama-server's directory, default /work/cache/llama.cpp/build/bin). llama-server runs with -nr
# (no repacking: its AMX buffers die with SIGILL on the development VM) and one slot per app (-np 3, unified KV);
# ruvllmd with --no-learning (as bench/serve/servecmp.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=$("$here/models.sh")
model=${1:-$cache/qwen2.5-0.5b-shape-q8_0.gguf}
rounds=${ROUNDS:-2} tokens=${TOKENS:-16000} ctx=${CTX:-20480} threads=${THREADS:-2}
llama=${LLAMA_BIN:-/work/cache/llama.cpp/build/bin}/llama-server
port=18431
pid=
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap stop EXIT

ruvllm() {
	local dir
	dir=$(mktemp -d)
	"$cache/ruvllmd" --socket "$dir/s.sock" --state-dir "$dir/state" --models-dir "$dir/models" --cache-dir "$dir/cache" \
		-m "$model" --ctx-size "$ctx" --threads "$threads" --no-learning 2>"$dir/log" &
	pid=$!
	until curl -sf --unix-socket "$dir/s.sock" http://x/v1/health >/dev/null; do sleep 1; done
	python3 "$here/servecmp_long.py" "unix:$dir/s.sock" "$model" --tokens "$tokens" | sed 's/^{/{"engine": "ruvllmd", /'
	stop
	rm -rf "$dir"
}

llamacpp() {
	"$llama" -m "$model" -c "$((ctx * 3))" -np 3 -kvu -t "$threads" -nr --port "$port" >/dev/null 2>&1 &
	pid=$!
	until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 1; done
	python3 "$here/servecmp_long.py" "http://127.0.0.1:$port" --tokens "$tokens" | sed 's/^{/{"engine": "llama-server", /'
	stop
}

for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then ruvllm; llamacpp; else llamacpp; ruvllm; fi
done

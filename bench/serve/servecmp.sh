#!/usr/bin/env bash
# servecmp.sh runs ../shared/bench/servecmp.py (a ~1,500-token prefix shared by three apps: cold and warm
# TTFT, then 1 against 8 concurrent streams) against ruvllmd and llama-server in turn, each started fresh for
# every round with the order alternating, and prints one JSON line per run. After each ruvllmd run it prints
# where the warm requests' time to first token went (the daemon's /v1/requests breakdown).
#
#   bench/serve/servecmp.sh MODEL.gguf
#
# Environment: ROUNDS (2), THREADS (2), RUVLLMD (default: built from this checkout into a temporary
# directory), LLAMA_BIN (llama-server's directory; default /work/cache/llama.cpp/build/bin), LLAMA_ARGS
# (extra llama-server flags; default -nr, no repacking: llama.cpp's AMX buffers die with SIGILL on CPUs
# whose AMX the kernel does not enable). llama-server runs as the issue measured it: -np 8 -kvu, context
# 8 × 4096.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
model=${1:?usage: servecmp.sh MODEL.gguf}
rounds=${ROUNDS:-2} threads=${THREADS:-2}
llama=${LLAMA_BIN:-/work/cache/llama.cpp/build/bin}/llama-server
servecmp=${SERVECMP:-$root/../shared/bench/servecmp.py}
work=$(mktemp -d)
pid=
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; pid=; }
trap 'stop; rm -rf "$work"' EXIT
ruvllmd=${RUVLLMD:-}
if [ -z "$ruvllmd" ]; then
	(cd "$root" && go build -o "$work/ruvllmd" ./cmd/ruvllmd)
	ruvllmd=$work/ruvllmd
fi
port=18432

ruvllm() {
	local dir=$work/r$1
	mkdir -p "$dir"
	"$ruvllmd" --socket "$dir/s.sock" --state-dir "$dir/state" --models-dir "$dir/models" --cache-dir "$dir/cache" \
		-m "$model" --threads "$threads" --no-learning 2>"$dir/log" &
	pid=$!
	until curl -sf --unix-socket "$dir/s.sock" http://x/v1/health >/dev/null; do sleep 0.5; done
	python3 "$servecmp" "unix:$dir/s.sock" default | sed 's/^{/{"engine": "ruvllmd", /'
	# The six shared-prefix requests are the 2nd to 7th of the run; the last five are warm.
	curl -sf --unix-socket "$dir/s.sock" 'http://x/v1/requests?limit=100' | python3 -c '
import json, statistics, sys
recs = list(reversed(json.load(sys.stdin)))[2:7]  # newest first
keys = ["handler_ms", "prepare_ms", "queue_ms", "prefill_ms", "sample_ms"]
out = {k: round(statistics.median(r["ttft_breakdown"][k] for r in recs), 2) for k in keys}
out["prefill_steps"] = statistics.median(r["ttft_breakdown"]["prefill_steps"] for r in recs)
out["uncached_tokens"] = statistics.median(r["prompt_tokens"] - r["cached_tokens"] for r in recs)
out["ttft_ms"] = round(statistics.median(r["ttft_ms"] for r in recs), 2)
print(json.dumps({"engine": "ruvllmd", "warm_breakdown_median": out}))'
	stop
}

llamacpp() {
	"$llama" -m "$model" -c 32768 -np 8 -kvu -t "$threads" ${LLAMA_ARGS:--nr} --port "$port" >"$work/llama.log" 2>&1 &
	pid=$!
	until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.5; done
	python3 "$servecmp" "http://127.0.0.1:$port" default | sed 's/^{/{"engine": "llama-server", /'
	stop
}

for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then ruvllm "$r"; llamacpp; else llamacpp; ruvllm "$r"; fi
done

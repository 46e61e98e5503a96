#!/usr/bin/env bash
# Greedy agreement only (no perplexity): for each model file, llama-server of
# the no-AMX llama.cpp build generates 64 tokens greedily from every golden
# prompt (greedy.py), and ruvllm's exact mode generates from the same prompt
# tokens twice: with the prebuilt builds' arithmetic (AMX order off) and with
# the arithmetic of a native AVX512-FP16 build (cpu.Options.Build). Prints a
# Markdown table: identical prompts, and tokens before each prompt's first
# difference.
#
#   bench/iquant/greedy-agree.sh FILE.gguf...
#
# Environment: LLAMA_BIN (default /work/cache/llama-noamx/bin), SHARED
# (default ../shared), PORT (default 18511), THREADS (default 1 for
# llama-server, 2 for ruvllm: its results do not depend on it), PREBUILT (a
# directory with an agree binary; default: go build).
set -euo pipefail
cd "$(dirname "$0")/../.."
LLAMA_BIN=${LLAMA_BIN:-/work/cache/llama-noamx/bin}
SHARED=$(cd "${SHARED:-../shared}" && pwd)
PORT=${PORT:-18511}
T=${THREADS:-1}
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"; [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null || true' EXIT
if [ -n "${PREBUILT:-}" ]; then cp "$PREBUILT/agree" "$BIN/"; else go build -o "$BIN/agree" ./bench/iquant/agree; fi
export GGML_NO_IQ_PANEL=1
echo "| file | prebuilt arithmetic (AMX off) | native AVX512-FP16 arithmetic |"
echo "|---|---|---|"
for f in "$@"; do
	nice "$LLAMA_BIN/llama-server" -m "$f" --port "$PORT" -t "$T" -c 1024 -np 1 > "$BIN/server.log" 2>&1 &
	SERVER=$!
	for _ in $(seq 120); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null 2>&1 && break; sleep 1; done
	python3 bench/iquant/greedy.py "http://127.0.0.1:$PORT" "$SHARED/golden/prompts.json" 64 > "$BIN/ref.jsonl"
	kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=
	before=$(nice "$BIN/agree" -m "$f" --ref "$BIN/ref.jsonl" --amx off -t 2)
	after=$(nice "$BIN/agree" -m "$f" --ref "$BIN/ref.jsonl" --build native-fp16 -t 2)
	python3 - "$(basename "$f" .gguf)" "$before" "$after" <<'PY'
import json, sys
n, b, a = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
cell = lambda r: f"{r['identical']}/{r['prompts']}, {r['tokens_same']}/{r['tokens_total']}"
print(f"| {n} | {cell(b)} | {cell(a)} |")
PY
done

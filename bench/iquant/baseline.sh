#!/usr/bin/env bash
# How far greedy agreement can go on this machine: for each shared model
# file, the no-AMX llama.cpp build generates from the golden prompts
# (llama-server, greedy.py), ruvllm generates from the same prompt tokens
# with the CPU backend's AMX order off and on (agree), and llama.cpp's
# tokens are also compared with ../shared/golden (made by llama.cpp on a CPU
# with AMX, which ruvllm reproduces: TestLlamaCppExact). Prints a Markdown
# table (identical prompts, tokens before the first difference).
#
#   bench/iquant/baseline.sh [NAME...]     (default: the eight shared files, e.g. llama-19m-q8_0)
#
# Environment: LLAMA_BIN (default /work/cache/llama-noamx/bin), SHARED
# (default ../shared), PORT (default 18311), THREADS (default 1).
set -euo pipefail
cd "$(dirname "$0")/../.."
LLAMA_BIN=${LLAMA_BIN:-/work/cache/llama-noamx/bin}
SHARED=$(cd "${SHARED:-../shared}" && pwd)
PORT=${PORT:-18311}
T=${THREADS:-1}
NAMES=("$@")
[ ${#NAMES[@]} -gt 0 ] || NAMES=(llama-19m-f16 llama-19m-q4_0 llama-19m-q8_0 llama-19m-q4_k_m qwen2-13m-f16 qwen2-13m-q4_0 qwen2-13m-q8_0 qwen2-13m-q4_k_m)
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"; [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null || true' EXIT
go build -o "$BIN/agree" ./bench/iquant/agree
export GGML_NO_IQ_PANEL=1
echo "| shared file | ruvllm AMX order off vs no-AMX llama.cpp | ruvllm AMX order on vs no-AMX | no-AMX llama.cpp vs golden (llama.cpp with AMX) |"
echo "|---|---|---|---|"
for n in "${NAMES[@]}"; do
	f="$SHARED/models/ruvllm-test-$n.gguf"
	nice "$LLAMA_BIN/llama-server" -m "$f" --port "$PORT" -t "$T" -c 1024 -np 1 > "$BIN/server.log" 2>&1 &
	SERVER=$!
	for _ in $(seq 120); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null 2>&1 && break; sleep 1; done
	python3 bench/iquant/greedy.py "http://127.0.0.1:$PORT" "$SHARED/golden/prompts.json" 64 > "$BIN/ref.jsonl"
	kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=
	off=$(nice "$BIN/agree" -m "$f" --ref "$BIN/ref.jsonl" --amx off -t "$T")
	on=$(nice "$BIN/agree" -m "$f" --ref "$BIN/ref.jsonl" --amx on -t "$T")
	python3 - "$n" "$off" "$on" "$SHARED/golden/greedy-$n.jsonl" "$BIN/ref.jsonl" <<'PY'
import json, sys
n, off, on, gold, ref = sys.argv[1:6]
def cell(a):
    return f"{a['identical']}/{a['prompts']}, {a['tokens_same']}/{a['tokens_total']}"
g = {r["prompt"]: r["tokens"] for r in map(json.loads, open(gold))}
ident = same = total = prompts = 0
for r in map(json.loads, open(ref)):
    k = 0
    for a, b in zip(g[r["prompt"]], r["tokens"]):
        if a != b:
            break
        k += 1
    prompts += 1
    total += len(r["tokens"])
    same += k
    ident += k == len(r["tokens"])
print(f"| {n} | {cell(json.loads(off))} | {cell(json.loads(on))} | {ident}/{prompts}, {same}/{total} |")
PY
done

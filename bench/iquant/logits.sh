#!/usr/bin/env bash
# Step-by-step comparison of ruvllm's logits with llama.cpp's along the
# greedy continuations of the golden prompts: llama-server of the no-AMX
# build generates them (greedy.py), llamaref (linked against the same
# build's libllama) replays them teacher-forced as the server batches them
# and writes its logits, and agree -logits replays them in ruvllm's exact
# mode, printing per prompt the steps whose logits are bit-identical and the
# first that is not (with its largest difference), then a summary.
#
#   bench/iquant/logits.sh FILE.gguf [BUILD]     (BUILD: native-fp16, the default, or prebuilt)
#
# Environment: LLAMA_BIN (default /work/cache/llama-noamx/bin), LLAMA_SRC
# (headers; default /work/cache/llama.cpp), SHARED, PORT (default 18411).
set -euo pipefail
cd "$(dirname "$0")/../.."
f=$1
BUILD=${2:-native-fp16}
LLAMA_BIN=${LLAMA_BIN:-/work/cache/llama-noamx/bin}
LLAMA_SRC=${LLAMA_SRC:-/work/cache/llama.cpp}
SHARED=$(cd "${SHARED:-../shared}" && pwd)
PORT=${PORT:-18411}
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"; [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null || true' EXIT
c++ -O2 -std=c++17 -o "$BIN/llamaref" bench/iquant/llamaref.cpp -I"$LLAMA_SRC/include" -I"$LLAMA_SRC/ggml/include" \
	-L"$LLAMA_BIN" -lllama -lggml -lggml-base -Wl,-rpath,"$LLAMA_BIN"
go build -o "$BIN/agree" ./bench/iquant/agree
export GGML_NO_IQ_PANEL=1
nice "$LLAMA_BIN/llama-server" -m "$f" --port "$PORT" -t 1 -c 1024 -np 1 > "$BIN/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null 2>&1 && break; sleep 1; done
python3 bench/iquant/greedy.py "http://127.0.0.1:$PORT" "$SHARED/golden/prompts.json" 64 > "$BIN/ref.jsonl"
kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=
nice "$BIN/llamaref" "$f" "$BIN/ref.jsonl" "$BIN/logits.bin" 1
nice "$BIN/agree" -m "$f" --ref "$BIN/ref.jsonl" -logits "$BIN/logits.bin" --build "$BUILD" -t 2

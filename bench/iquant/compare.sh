#!/usr/bin/env bash
# ruvllm against llama.cpp on models quantized to the i-quants and the
# K-quant mixes: for each type, llama-quantize makes the file from the
# shared f16 models (with an importance matrix where the type needs one),
# then both sides compute the perplexity of the same text with the same
# context (llama-perplexity twice: as it runs by default, and with 32-token
# micro-batches, which keep its attention in the arithmetic ruvllm uses), and ruvllm generates greedily from llama.cpp's prompt tokens for
# the golden prompts, counting the tokens that agree with llama-server's.
#
#   bench/iquant/compare.sh [TYPE...]          (default: every i-quant and mix)
#
# Environment:
#   LLAMA_BIN   llama.cpp binaries (default /work/cache/llama-noamx/bin if it
#               exists, else /work/cache/llama.cpp/build/bin with --no-repack:
#               that build's AMX kernels crash on this machine)
#   QUANTIZE    llama-quantize and llama-imatrix directory (default
#               /work/cache/llama.cpp/build/bin)
#   MODELS      where the quantized files go (default /work/cache/models)
#   TEXT        text to score (default the first 20,000 bytes of GPL-3)
#   CTX         perplexity context (default 256)
#   SYNTH=1     also a synthetic 512-wide model (every tensor keeps the i-quant;
#               the shared models' 384-wide rows fall back to IQ4_NL)
#   SHARED      the shared test assets (default ../shared)
#   PREBUILT    a directory holding ruvllm and agree binaries (default: go build)
#   PORT        first llama-server port (default 18080; one per row after it)
#   THREADS     threads of every run (default 1: llama.cpp's spinning workers
#               crawl on a loaded machine; neither side's results depend on it)
#   OUTTYPE     output.weight's type in the files (llama-quantize's
#               --output-tensor-type; the file names get -out-TYPE)
#   SMALLUB=0   skip the 32-token micro-batch perplexity (its column shows -)
#   RUVLLM_EXACT=0  ruvllm's default arithmetic (default: --exact, llama.cpp's
#               arithmetic and, for the perplexity, its attention path by batch)
#   MODELSET    which models: all (default), llama-19m, qwen2-13m or synth-512
#   BUILD       the llama.cpp build ruvllm's exact mode reproduces (--llama-build):
#               native-fp16 with the no-AMX build of this machine (default
#               there: it was built with -march=native on a CPU with
#               AVX512-FP16), prebuilt otherwise
# llama.cpp runs with GGML_NO_IQ_PANEL=1 (its batched IQ panel kernels sum in
# another order than its own decode) and ruvllm with the AMX order off when
# LLAMA_BIN has no AMX. ruvllm's exact mode with llama.cpp's batching (the
# perplexity column) follows the panel for IQ4_XS (IQ4XSPanel), so IQ4_XS's
# perplexity compares with llama-perplexity run without that variable.
# Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/../.."
QUANTIZE=${QUANTIZE:-/work/cache/llama.cpp/build/bin}
if [ -z "${LLAMA_BIN:-}" ]; then
	if [ -x /work/cache/llama-noamx/bin/llama-perplexity ]; then LLAMA_BIN=/work/cache/llama-noamx/bin; else LLAMA_BIN=/work/cache/llama.cpp/build/bin; fi
fi
NOREPACK=()
AMX=auto
if [ "$LLAMA_BIN" = /work/cache/llama.cpp/build/bin ]; then NOREPACK=(--no-repack); AMX=off; fi
case "$LLAMA_BIN" in *noamx*) AMX=off ;; esac
if [ -z "${BUILD:-}" ]; then
	BUILD=prebuilt
	case "$LLAMA_BIN" in *noamx*) BUILD=native-fp16 ;; esac
fi
[ "${RUVLLM_EXACT:-1}" = 1 ] || BUILD=prebuilt
MODELS=${MODELS:-/work/cache/models}
SHARED=$(cd "${SHARED:-../shared}" && pwd)
CTX=${CTX:-256}
T=${THREADS:-1}
EXACT=(--exact)
[ "${RUVLLM_EXACT:-1}" = 1 ] || EXACT=()
mkdir -p "$MODELS"
if [ -z "${TEXT:-}" ]; then TEXT="$MODELS/gpl20k.txt"; head -c 20000 /usr/share/common-licenses/GPL-3 > "$TEXT"; fi
TYPES=("$@")
[ ${#TYPES[@]} -gt 0 ] || TYPES=(IQ4_NL IQ4_XS IQ3_XXS IQ3_S IQ3_M IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ1_S IQ1_M Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K)
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"; [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null || true' EXIT
if [ -n "${PREBUILT:-}" ]; then
	cp "$PREBUILT/ruvllm" "$PREBUILT/agree" "$BIN/"
else
	go build -o "$BIN/ruvllm" ./cmd/ruvllm
	go build -o "$BIN/agree" ./bench/iquant/agree
fi
export GGML_NO_IQ_PANEL=1

srcs=("llama-19m:$SHARED/models/ruvllm-test-llama-19m-f16.gguf" "qwen2-13m:$SHARED/models/ruvllm-test-qwen2-13m-f16.gguf")
if [ -n "${SYNTH:-}" ]; then
	s="$MODELS/ruvllm-synth-llama-512-f16.gguf"
	[ -f "$s" ] || "$BIN/ruvllm" testmodel --arch llama --layers 4 --dim 512 --heads 8 --kv-heads 2 --ff 1024 --type f16 -o "$s" > /dev/null
	srcs+=("synth-512:$s")
fi

# llppl FILE [ARGS...] prints llama-perplexity's final estimate. Its log
# goes through a thread that can lose the last lines at exit on a loaded
# machine, so a run without the line is repeated (up to three times).
llppl() {
	local f=$1 v="" i
	shift
	for i in 1 2 3; do
		v=$(nice "$LLAMA_BIN/llama-perplexity" -m "$f" -f "$TEXT" -c "$CTX" -t "$T" "${NOREPACK[@]}" "$@" 2>&1 | sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p')
		[ -z "$v" ] || break
	done
	echo "$v"
}

echo "| model | type | llama-perplexity | ruvllm perplexity | diff | llama-perplexity -ub 32 | diff | greedy: identical prompts | greedy: tokens before divergence |"
echo "|---|---|---|---|---|---|---|---|---|"
port=${PORT:-18080}
for entry in "${srcs[@]}"; do
	name=${entry%%:*} src=${entry#*:}
	case "${MODELSET:-all}" in all|"$name") ;; *) continue ;; esac
	im="$MODELS/imatrix-$name.gguf"
	[ -f "$im" ] || nice "$QUANTIZE/llama-imatrix" -m "$src" -f "$TEXT" -c "$CTX" -t "$T" -o "$im" > "$MODELS/imatrix-$name.log" 2>&1
	for t in "${TYPES[@]}"; do
		lt=$(echo "$t" | tr 'A-Z' 'a-z')
		f="$MODELS/ruvllm-test-$name-$lt.gguf"
		args=()
		if [ -n "${OUTTYPE:-}" ]; then
			f="$MODELS/ruvllm-test-$name-$lt-out-$(echo "$OUTTYPE" | tr 'A-Z' 'a-z').gguf"
			args=(--output-tensor-type "$OUTTYPE")
		fi
		if [ ! -f "$f" ]; then
			case "$t" in IQ2_*|IQ1_*|IQ3_XXS|IQ3_M) args+=(--imatrix "$im") ;; esac
			nice "$QUANTIZE/llama-quantize" "${args[@]}" "$src" "$f" "$t" "$T" > "$f.log" 2>&1 || { echo "| $name | $t | llama-quantize failed | | | | | | |"; continue; }
		fi
		lp=$(llppl "$f")
		# with micro-batches under 64 tokens llama.cpp's flash attention
		# takes its per-key f16 path, the one ruvllm always takes
		lq=-
		[ "${SMALLUB:-1}" = 0 ] || lq=$(llppl "$f" -ub 32)
		rp=$(nice "$BIN/ruvllm" perplexity "${EXACT[@]}" --llama-build "$BUILD" -m "$f" -f "$TEXT" --ctx "$CTX" -t "$T" 2>/dev/null | sed -n 's/^perplexity: \([0-9.]*\).*/\1/p')
		port=$((port + 1))
		nice "$LLAMA_BIN/llama-server" -m "$f" --port "$port" -t "$T" -c 1024 -np 1 "${NOREPACK[@]}" > "$BIN/server.log" 2>&1 &
		SERVER=$!
		for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break; sleep 1; done
		python3 bench/iquant/greedy.py "http://127.0.0.1:$port" "$SHARED/golden/prompts.json" 64 > "$BIN/ref.jsonl"
		kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=
		ag=$(nice "$BIN/agree" -m "$f" --ref "$BIN/ref.jsonl" --amx "$AMX" --build "$BUILD" -exact="$([ "${RUVLLM_EXACT:-1}" = 1 ] && echo true || echo false)" -t "$T")
		python3 - "$name" "$t" "$lp" "$rp" "$ag" "${OUTTYPE:-}" "$lq" <<'PY'
import json, sys
name, t, lp, rp, ag, out, lq = sys.argv[1:8]
out = f" (output {out})" if out else ""
a = json.loads(ag)
def diff(ref):
    if ref == "-":
        return "-"
    return f"{(float(rp) / float(ref) - 1) * 100:+.3f} %" if ref and rp else "?"
print(f"| {name} | {t}{out} | {lp or '?'} | {rp or '?'} | {diff(lp)} | {lq or '?'} | {diff(lq)} | {a['identical']}/{a['prompts']} | {a['tokens_same']}/{a['tokens_total']} |")
PY
	done
done

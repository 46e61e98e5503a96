#!/usr/bin/env bash
# models.sh builds ruvllm and ruvllmd into the cache directory and writes the long-context benchmark models there
# (never into the repository): synthetic files with the real shapes and vocabularies of Qwen2.5-0.5B (24 layers,
# 896 wide, 14 heads, 2 KV heads, FF 4864, context 32768, rope base 1e6) and Llama-3.2-1B (16 layers, 2048 wide,
# 32 heads, 8 KV heads, FF 8192, context 131072, rope base 5e5 with llama3 frequency factors), in Q8_0. Random
# weights do not change speed. With TYPES it also writes F16 files (ruvllm testmodel) and Q4_K_M files
# (llama-quantize from the F16 ones, as real Q4_K_M files are made: Q4_K with Q6_K where llama.cpp puts it).
# It prints the cache directory.
#
#   RUVLLM_BENCH_CACHE   cache directory (default ~/.cache/ruvllm/longctx)
#   TYPES                element types to write, of q8_0 f16 q4_k_m (default q8_0)
#   LLAMA_BIN            llama.cpp's bin directory, for llama-quantize (default /work/cache/llama.cpp/build/bin)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${RUVLLM_BENCH_CACHE:-$HOME/.cache/ruvllm/longctx}
vocab=$root/../shared/vocab
mkdir -p "$cache"
(cd "$root" && go build -o "$cache/ruvllm" ./cmd/ruvllm && go build -o "$cache/ruvllmd" ./cmd/ruvllmd)
types=${TYPES:-q8_0}
quantize=${LLAMA_BIN:-/work/cache/llama.cpp/build/bin}/llama-quantize
write() {
	local name=$1
	shift
	for t in $types; do
		local out=$cache/$name-$t.gguf
		[ -f "$out" ] && continue
		case $t in
		q8_0 | f16) "$cache/ruvllm" testmodel --type "$t" "$@" -o "$out" >&2 ;;
		q4_k_m)
			[ -f "$cache/$name-f16.gguf" ] || "$cache/ruvllm" testmodel --type f16 "$@" -o "$cache/$name-f16.gguf" >&2
			"$quantize" "$cache/$name-f16.gguf" "$out" Q4_K_M >&2
			;;
		*)
			echo "models.sh: unknown type $t (want q8_0, f16 or q4_k_m)" >&2
			exit 2
			;;
		esac
	done
}
write qwen2.5-0.5b-shape --arch qwen2 --layers 24 --dim 896 --heads 14 --kv-heads 2 --ff 4864 \
	--vocab-from "$vocab/ggml-vocab-qwen2.gguf" --ctx 32768 --rope-base 1000000
write llama-3.2-1b-shape --arch llama --layers 16 --dim 2048 --heads 32 --kv-heads 8 --ff 8192 \
	--vocab-from "$vocab/ggml-vocab-llama-bpe.gguf" --ctx 131072 --rope-base 500000 \
	--rope-scaling llama3 --rope-factor 32 --rope-orig-ctx 8192
echo "$cache"

#!/usr/bin/env bash
# Compares `ruvllm quantize` with llama.cpp's llama-quantize byte for byte:
# for every type ruvllm can make, on the shared f16 models, without and
# with an importance matrix (llama-imatrix's GGUF and legacy .dat output),
# both tools convert the same input and the files must be identical.
#
#   bench/iquant/quantize-compare.sh [TYPES...]
# Environment: LLAMA_CPP (default /work/cache/llama.cpp, with build/bin),
# MODELS (default ../shared/models), WORK (scratch directory, default a
# temporary one), TEXT (the imatrix text; default the first 20,000 bytes of
# /usr/share/common-licenses/GPL-3).
set -euo pipefail
cd "$(dirname "$0")/../.."
LLAMA=${LLAMA_CPP:-/work/cache/llama.cpp}
BIN="$LLAMA/build/bin"
MODELS=${MODELS:-$(cd ../shared/models && pwd)}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
TYPES=("$@")
if [ ${#TYPES[@]} -eq 0 ]; then
	TYPES=(F16 BF16 F32 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ4_NL IQ4_XS IQ3_XXS IQ3_S IQ3_M IQ3_XS IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ1_S IQ1_M)
fi
if [ -z "${TEXT:-}" ]; then
	TEXT="$WORK/text.txt"
	head -c 20000 /usr/share/common-licenses/GPL-3 > "$TEXT"
fi
go build -o "$WORK/ruvllm" ./cmd/ruvllm
pass=0 fail=0
for m in llama-19m qwen2-13m; do
	in="$MODELS/ruvllm-test-$m-f16.gguf"
	for fmt in gguf dat; do
		[ -f "$WORK/imatrix-$m.$fmt" ] || nice "$BIN/llama-imatrix" -m "$in" -f "$TEXT" -c 256 -t 2 \
			-o "$WORK/imatrix-$m.$fmt" --output-format "$fmt" > "$WORK/imatrix-$m-$fmt.log" 2>&1
	done
	for t in "${TYPES[@]}"; do
		for im in none gguf dat; do
			args=() ; tag="$t"
			if [ "$im" != none ]; then args=(--imatrix "$WORK/imatrix-$m.$im"); tag="$t+imatrix.$im"; fi
			case "$t:$im" in Q2_K_S:none|IQ3_XS:none|IQ2_*:none|IQ1_*:none) continue ;; esac # these need an imatrix
			ref="$WORK/ref-$m-$t-$im.gguf" ours="$WORK/ours-$m-$t-$im.gguf"
			nice "$BIN/llama-quantize" "${args[@]}" "$in" "$ref" "$t" 2 > "$WORK/ref.log" 2>&1 || { echo "llama-quantize failed: $m $tag"; tail -3 "$WORK/ref.log"; exit 1; }
			nice "$WORK/ruvllm" quantize -q -t 2 "${args[@]}" "$in" "$ours" "$t" > /dev/null
			if cmp -s "$ref" "$ours"; then
				printf '%-10s %-22s identical (%d bytes)\n' "$m" "$tag" "$(stat -c %s "$ours")"
				pass=$((pass + 1))
			else
				printf '%-10s %-22s DIFFERENT: %s\n' "$m" "$tag" "$(cmp "$ref" "$ours" | head -1)"
				fail=$((fail + 1))
			fi
			rm -f "$ref" "$ours"
		done
	done
done
echo "identical: $pass, different: $fail"
[ "$fail" -eq 0 ]

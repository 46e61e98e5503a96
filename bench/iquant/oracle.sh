#!/usr/bin/env bash
# Builds bench/iquant/oracle.cpp against the libggml of a llama.cpp build and
# runs engine/quant's oracle tests with it: the i-quants' dequantizers and
# dot products, and every file quantizer (with and without an importance
# matrix), compared bit for bit with ggml's on random data. With
# RUVLLM_UPDATE_GOLDEN=1 it also rewrites engine/quant/testdata/ggml_golden.json.
#
#   bench/iquant/oracle.sh [LLAMA_CPP_DIR]   (default /work/cache/llama.cpp)
#
# LIB names another build's library directory (default LLAMA_CPP_DIR/build/bin);
# with RUVLLM_GGML_FP16=1 it must be a build for AVX512-FP16 (the no-AMX one
# here), and the tests of that build's f16 arithmetic run too:
#
#   LIB=/work/cache/llama-noamx/bin RUVLLM_GGML_FP16=1 bench/iquant/oracle.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
LLAMA=${1:-${LLAMA_CPP:-/work/cache/llama.cpp}}
LIB=${LIB:-$LLAMA/build/bin}
[ -f "$LIB/libggml-cpu.so" ] || { echo "oracle: no $LIB/libggml-cpu.so (build llama.cpp first)" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
c++ -O2 -std=c++17 -o "$OUT/oracle" bench/iquant/oracle.cpp -I"$LLAMA/ggml/include" -L"$LIB" -lggml-cpu -lggml-base -lggml -Wl,-rpath,"$LIB"
RUVLLM_GGML_ORACLE="$OUT/oracle" go test -count=1 -run 'TestGGMLOracle' -v ./engine/quant/ | grep -E '^(---|ok|FAIL|PASS)|oracle'

#!/usr/bin/env bash
# run.sh compares engine/tokenizer with llama.cpp's tokenizer on generated
# strings for every vocabulary in ../shared/vocab (see main.go). It builds
# lltok.cpp against a llama.cpp source tree with its shared libraries
# built (LLAMA_CPP, default /work/cache/llama.cpp with build/bin), e.g.
#
#   bench/tokdiff/run.sh -n 20000            # all vocabularies
#   bench/tokdiff/run.sh -only gemma -show 10
#
# Needs go and a C++17 compiler. Not part of make test.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
llama=${LLAMA_CPP:-/work/cache/llama.cpp}
lib="$llama/build/bin"
[ -f "$lib/libllama.so" ] || { echo "run.sh: no $lib/libllama.so (build llama.cpp first)" >&2; exit 1; }
mkdir -p "$here/bin"
if [ ! -x "$here/bin/lltok" ] || [ "$here/lltok.cpp" -nt "$here/bin/lltok" ]; then
	${CXX:-g++} -O2 -std=c++17 -I"$llama/include" -I"$llama/ggml/include" "$here/lltok.cpp" \
		-L"$lib" -lllama -lggml -lggml-base -Wl,-rpath,"$lib" -o "$here/bin/lltok"
fi
cd "$root"
exec go run ./bench/tokdiff/diff -lltok "$here/bin/lltok" -vocab "$root/../shared/vocab" "$@"

#!/usr/bin/env bash
# build.sh makes sure a native llama.cpp build (llama-bench, llama-perplexity,
# llama-quantize, llama-server) is in the cache and prints its bin directory.
# llama.cpp's source comes from the git bundle that the npm package
# node-llama-cpp ships (llama/gitRelease.bundle), so the build needs the npm
# registry once and no other network access.
#
#   bench/llama/build.sh      # prints e.g. /root/.cache/ruvllm/llama.cpp/build/bin
#
# The build is -march=native without AMX: on VMs like the 2-core development
# machine the CPU reports AMX and a lone test program can use it, but the tile
# configuration does not survive the hypervisor's context switches, and
# llama.cpp's AMX kernels (Q4_0, Q8_0, the K-quants) die with SIGILL on
# TILELOADD in llama-bench. LLAMA_CMAKE_FLAGS adds flags (e.g. to drop -mno-amx-*).
#
# Environment:
#   LLAMA_CPP_CACHE  cache directory (default ~/.cache/ruvllm/llama.cpp); the
#                    build goes to $LLAMA_CPP_CACHE/build and is reused as it is
#   LLAMA_CPP_SRC    an existing llama.cpp source tree to build instead of
#                    cloning one into $LLAMA_CPP_CACHE/src (e.g. /work/cache/llama.cpp)
#   NODE_LLAMA_CPP   node-llama-cpp version to take the source from (default 3.22.1)
#   JOBS             parallel compile jobs (default 2)
# Needs git, cmake (apt-get install cmake), a C++ compiler, and npm for the first build.
set -euo pipefail

cache=${LLAMA_CPP_CACHE:-$HOME/.cache/ruvllm/llama.cpp}
version=${NODE_LLAMA_CPP:-3.22.1}
jobs=${JOBS:-2}
build=$cache/build
targets=(llama-bench llama-perplexity llama-quantize llama-server)

have() {
	for t in "${targets[@]}"; do
		[ -x "$build/bin/$t" ] || return 1
	done
}

if have; then
	echo "$build/bin"
	exit 0
fi

for tool in git cmake c++; do
	command -v "$tool" >/dev/null || { echo "build.sh: $tool is required (apt-get install git cmake g++)" >&2; exit 1; }
done

src=${LLAMA_CPP_SRC:-$cache/src}
if [ ! -f "$src/CMakeLists.txt" ]; then
	command -v npm >/dev/null || { echo "build.sh: npm is required once, to fetch node-llama-cpp@$version" >&2; exit 1; }
	pkg=$(mktemp -d)
	trap 'rm -rf "$pkg"' EXIT
	echo "build.sh: fetching node-llama-cpp@$version for llama.cpp's source" >&2
	(cd "$pkg" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error "node-llama-cpp@$version" >&2)
	bundle=$pkg/node_modules/node-llama-cpp/llama/gitRelease.bundle
	[ -f "$bundle" ] || { echo "build.sh: $bundle not found" >&2; exit 1; }
	mkdir -p "$(dirname "$src")"
	git clone --quiet "$bundle" "$src" >&2
fi

noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
echo "build.sh: building llama.cpp from $src in $build (about 15 minutes on 2 cores)" >&2
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
	-DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" ${LLAMA_CMAKE_FLAGS:-} >&2
cmake --build "$build" -j"$jobs" --target "${targets[@]}" >&2
have || { echo "build.sh: the build finished without every target" >&2; exit 1; }
echo "$build/bin"

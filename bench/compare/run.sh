#!/usr/bin/env bash
# run.sh compares ruvllm with llama.cpp on the same GGUF files: it builds
# ruvllm, installs node-llama-cpp from package-lock.json when it is missing
# (npm registry needed once; its prebuilt linux-x64 CPU binaries then run
# offline), and runs compare.mjs with the arguments given, e.g.
#
#   bench/compare/run.sh --quick          # smoke test: pp32/tg8, one rep
#   bench/compare/run.sh -t 4 --write     # full run, table into BENCHMARKS.md
#
# See compare.mjs for every flag. Needs go and node >= 20.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

command -v node >/dev/null || { echo "run.sh: node >= 20 is required (apt-get install nodejs npm)" >&2; exit 1; }
if [ ! -f "$here/node_modules/node-llama-cpp/package.json" ]; then
	(cd "$here" && npm ci --no-audit --no-fund)
fi
mkdir -p "$here/bin"
(cd "$root" && go build -o "$here/bin/ruvllm" ./cmd/ruvllm)
exec node "$here/compare.mjs" --ruvllm "$here/bin/ruvllm" "$@"

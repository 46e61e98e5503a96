#!/usr/bin/env bash
# llamacmp.sh starts llama-server and ruvllmd on one model and runs llamacmp.py against both: the same
# llama-server API requests to each, their answers side by side (issue-free compatibility check; not a
# benchmark, and not part of `make test`, which has no llama.cpp build).
#
#   bench/llamacmp/llamacmp.sh MODEL.gguf [--strict]
#
# Environment: LLAMA_BIN (llama-server's directory; default ~/.cache/ruvllm/llama.cpp/build/bin, where
# bench/llama/build.sh puts it), RUVLLMD (default: built from this checkout into a temporary directory).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
model=${1:?usage: llamacmp.sh MODEL.gguf [--strict]}
shift
llama=${LLAMA_BIN:-$HOME/.cache/ruvllm/llama.cpp/build/bin}/llama-server
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
ruvllmd=${RUVLLMD:-}
if [ -z "$ruvllmd" ]; then
	(cd "$root" && go build -o "$work/ruvllmd" ./cmd/ruvllmd)
	ruvllmd=$work/ruvllmd
fi
"$llama" -m "$model" -c 4096 -t 2 --port 18480 >"$work/llama.log" 2>&1 &
pids+=($!)
"$ruvllmd" --socket "$work/s.sock" --state-dir "$work/state" --models-dir "$work/models" --cache-dir "$work/cache" \
	-m "$model" --ctx-size 4096 --threads 2 --no-learning --listen 127.0.0.1:18481 2>"$work/ruvllmd.log" &
pids+=($!)
until curl -sf http://127.0.0.1:18480/health >/dev/null; do sleep 0.5; done
until curl -sf http://127.0.0.1:18481/health >/dev/null; do sleep 0.5; done
python3 "$here/llamacmp.py" http://127.0.0.1:18480 http://127.0.0.1:18481 "$@"

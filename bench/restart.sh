#!/usr/bin/env bash
# restart.sh measures what the saved prefix cache buys after a daemon
# restart: the TTFT of a chat request with a long (~1000-token) system
# prompt when the cache is cold, when it is warm, and as the first request
# after ruvllmd was stopped (SIGTERM saves the hottest prefixes) and
# started again. Usage: bench/restart.sh [MODEL.gguf] (default: the shared
# llama q8_0 model). Needs bin/ruvllm and bin/ruvllmd (make build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-$root/../shared/models/ruvllm-test-llama-19m-q8_0.gguf}
name=$(basename "$model" .gguf)
bin=$root/bin
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
export RUVLLM_SOCKET=$work/ruvllm.sock

sys="You are the assistant built into a code editor. Follow these rules exactly."
for i in $(seq 1 45); do
	sys+=" Rule $i: when the user asks about file $i of the project, answer with the relevant function names, keep answers short, and never invent APIs."
done

start() {
	"$bin/ruvllmd" --socket "$RUVLLM_SOCKET" --state-dir "$work/state" --cache-dir "$work/cache" -m "$model" \
		>>"$work/ruvllmd.log" 2>&1 &
	pid=$!
	# Ready once the preloaded model is listed: it is listed only after its
	# saved prefixes are restored and its warm-up pass has run, so the first
	# request measures the cache, not the load (reported by the log line).
	for _ in $(seq 100); do
		[ -S "$RUVLLM_SOCKET" ] && "$bin/ruvllm" ps 2>/dev/null | grep -q "^$name " && return
		sleep 0.1
	done
	echo "ruvllmd did not start" >&2; cat "$work/ruvllmd.log" >&2; exit 1
}
ttft() { # $1: question; prints TTFT and cached prompt tokens from ruvllm run's summary line
	"$bin/ruvllm" run --remote -m "$name" --chat --system "$sys" -p "$1" -n 1 --temp 0 2>&1 >/dev/null |
		sed -n 's/.*prompt \([0-9]*\) tokens (\([0-9]*\) cached).*ttft \([0-9.]*\) \(m\?s\).*/\3 \4, \2 of \1 prompt tokens cached/p'
}

start
"$bin/ruvllm" run --remote -m "$name" -p "warm up" -n 1 >/dev/null 2>&1
echo "cold (nothing cached):        $(ttft "What does file 1 do?")"
echo "warm (system prompt cached):  $(ttft "What does file 2 do?")"
kill -TERM $pid; wait $pid || true
start
echo "first request after restart:  $(ttft "What does file 3 do?")"
echo "second request after restart: $(ttft "What does file 4 do?")"
grep -i "prefix\|model loaded" "$work/ruvllmd.log" | tail -3 || true

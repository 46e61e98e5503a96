#!/usr/bin/env bash
# onecore.sh measures decode against the memory read bound on one core.
#
# On a shared host the bandwidth two cores get can change by half within
# seconds (another tenant), which makes "% of the bound" at two threads
# depend on when the probe ran. One core's read bandwidth is steadier (it
# is bounded by the lines one core keeps in flight), so this script pins
# everything to one CPU and sets each measurement between two one-core
# read probes (`ruvllm bench --membw -t 1`):
#
#   streams  BenchmarkDecodeStream (engine/compute/cpu): one-row products
#            over 512 MiB of each repacked format, GB/s of weights read
#   models   `ruvllm bench -p 0 -n 32 -t 1` on each model file given:
#            decode tokens/s × weight bytes a token
#
# Each line gives the figure, the two probes and the figure as a
# percentage of their mean; a measurement whose probes differ by more than
# 10 % is marked "moved".
#
#   bench/llama/onecore.sh [-r ROUNDS] [-c CPU] [-b ruvllm] [MODEL.gguf ...]
#
# With no model, only the stream kernels run. Needs Go and a built
# ruvllm (default bin/ruvllm). Not part of the tests: it measures.
set -euo pipefail

rounds=2 cpu=0 ruvllm=bin/ruvllm
while getopts "r:c:b:" o; do
	case $o in
	r) rounds=$OPTARG ;;
	c) cpu=$OPTARG ;;
	b) ruvllm=$OPTARG ;;
	*) sed -n '2,25p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
cd "$(dirname "$0")/../.."
[ -x "$ruvllm" ] || { echo "onecore.sh: no $ruvllm (make build)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/cpu.test" ./engine/compute/cpu

probe() {
	taskset -c "$cpu" "$ruvllm" bench --membw -t 1 --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["membw"]["read_bytes_per_second"]/1e9)'
}

report() { # name figure p0 p1
	python3 - "$@" <<'PY'
import sys
name, x, p0, p1 = sys.argv[1], *map(float, sys.argv[2:])
mean = (p0 + p1) / 2
note = " (moved)" if abs(p0 - p1) > 0.1 * max(p0, p1) else ""
print(f"{name:24s} {x:6.1f} GB/s  probes {p0:5.1f}/{p1:5.1f}  {100 * x / mean:4.0f} %{note}")
PY
}

for r in $(seq "$rounds"); do
	echo "round $r"
	p0=$(probe)
	taskset -c "$cpu" "$tmp/cpu.test" -test.run XXX -test.bench 'DecodeStream/' -test.benchtime 10x >"$tmp/streams"
	p1=$(probe)
	grep -o 'DecodeStream/.*MB/s' "$tmp/streams" | awk '{print $1, $(NF-1)/1000}' |
		while read -r name gbs; do report "${name#DecodeStream/}" "$gbs" "$p0" "$p1"; done
	for m in "$@"; do
		p0=$(probe)
		gbs=$(taskset -c "$cpu" "$ruvllm" bench -m "$m" -p 0 -n 32 -r 3 -t 1 --json |
			python3 -c 'import json,sys; d=json.load(sys.stdin); t=[f["tokens_per_second"] for f in d["results"] if f["test"].startswith("tg")][0]; print(t*d["weight_bytes_per_token"]/1e9)')
		p1=$(probe)
		report "$(basename "$m" .gguf)" "$gbs" "$p0" "$p1"
	done
done

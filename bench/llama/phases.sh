#!/usr/bin/env bash
# phases.sh measures two-thread decode against the memory read bound in each
# phase of a host whose bandwidth jumps.
#
# The development VM's two cores read about 50 GB/s at some moments and 80-85
# at others (another tenant), switching within seconds, so "% of the bound"
# depends on when the probe ran. This script sets each decode between two
# two-thread read probes (`ruvllm bench --membw -t 2`), keeps only the
# measurements whose probes agree within 10 % (the phase did not change
# during the decode), labels each by phase (slow: probes under 65 GB/s,
# fast: over 70) and prints every kept measurement and, per model and phase,
# the median percentage of the probes' mean. It runs for SECONDS, waiting
# (with one probe every few seconds) for the fast phase when -f is given.
#
#   bench/llama/phases.sh [-s SECONDS] [-f] [-b ruvllm] MODEL.gguf ...
#
# Decode is `ruvllm bench -p 0 -n 32 -r 2 -t 2`: tokens/s × weight bytes a
# token. Not part of the tests: it measures.
set -euo pipefail

secs=300 fast_only=0 ruvllm=bin/ruvllm
while getopts "s:fb:" o; do
	case $o in
	s) secs=$OPTARG ;;
	f) fast_only=1 ;;
	b) ruvllm=$OPTARG ;;
	*) sed -n '2,17p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { sed -n '2,17p' "$0"; exit 2; }
cd "$(dirname "$0")/../.."
[ -x "$ruvllm" ] || { echo "phases.sh: no $ruvllm (make build)" >&2; exit 1; }

probe() {
	"$ruvllm" bench --membw -t 2 --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["membw"]["read_bytes_per_second"]/1e9)'
}
decode() {
	"$ruvllm" bench -m "$1" -p 0 -n 32 -r 2 -t 2 --json |
		python3 -c 'import json,sys; d=json.load(sys.stdin); t=[f["tokens_per_second"] for f in d["results"] if f["test"].startswith("tg")][0]; print(t*d["weight_bytes_per_token"]/1e9)'
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
end=$(($(date +%s) + secs))
while [ "$(date +%s)" -lt "$end" ]; do
	p0=$(probe)
	if [ "$fast_only" = 1 ] && python3 -c "import sys; sys.exit($p0 > 70)"; then
		sleep 2
		continue
	fi
	for m in "$@"; do
		gbs=$(decode "$m")
		p1=$(probe)
		python3 - "$(basename "$m" .gguf)" "$gbs" "$p0" "$p1" <<'PY' | tee -a "$log"
import sys
name, x, p0, p1 = sys.argv[1], *map(float, sys.argv[2:])
if abs(p0 - p1) <= 0.1 * max(p0, p1):
    mean = (p0 + p1) / 2
    phase = "slow" if mean < 65 else "fast" if mean > 70 else "between"
    print(f"{name:24s} {phase:7s} {x:5.1f} GB/s  probes {p0:5.1f}/{p1:5.1f}  {100 * x / mean:4.0f} %")
PY
		p0=$p1
	done
done
echo
python3 - "$log" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    runs[(f[0], f[1])].append(float(f[-2]))
for (name, phase), v in sorted(runs.items()):
    print(f"{name:24s} {phase:7s} median {statistics.median(v):4.0f} % of {len(v)} ({min(v):.0f}-{max(v):.0f})")
PY

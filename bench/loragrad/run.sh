#!/usr/bin/env bash
# run.sh checks engine/train's LoRA gradients against PyTorch autograd on
# a shared F16 model: bench/loragrad writes the Go trainer's gradients of
# a rank-4 adapter on every projection (three examples: likelihood,
# unlikelihood, an avoid term) and compare.py rebuilds the model in
# PyTorch and compares every LoRA matrix's gradient within 1e-3 relative.
# Needs Debian's python3-torch and python3-numpy (apt-get install -y
# python3-torch python3-numpy). Usage: bench/loragrad/run.sh [MODEL.gguf]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:-$root/../shared/models/ruvllm-test-llama-19m-f16.gguf}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$root" && go run ./bench/loragrad -m "$model" -o "$out/grads.json")
# Debian's interpreter, which the apt packages install into.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
for dtype in float64 float32; do
	"$py" "$root/bench/loragrad/compare.py" "$model" "$out/grads.json" --dtype "$dtype"
done

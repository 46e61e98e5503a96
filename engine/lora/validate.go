package lora

import (
	"fmt"
	"slices"

	"github.com/ruvllm/ruvllm/engine/gguf"
)

// Validate checks that a fits base: same architecture (when the adapter
// names one), every target is a weight kind the engine adapts and exists in
// base with the shape the pair implies (in and out). The error names the
// first mismatch, in layer order.
func Validate(a *Adapter, base *gguf.File) error {
	arch := base.Architecture()
	if a.Arch != "" && a.Arch != arch {
		return fmt.Errorf("%w: adapter is for %q, base model is %q", ErrMismatch, a.Arch, arch)
	}
	for _, name := range a.Names() {
		p := a.Targets[name]
		layer, kind := splitKey(name)
		if layer < 0 || !slices.Contains(Kinds, kind) {
			return fmt.Errorf("%w: %s (adaptable: blk.N.{%v})", ErrUnsupportedTarget, name, Kinds)
		}
		t, ok := base.Tensor(name + ".weight")
		if !ok {
			if kind == "attn_q" || kind == "attn_k" || kind == "attn_v" {
				if _, fused := base.Tensor(Key(layer, "attn_qkv.weight")); fused {
					return fmt.Errorf("%w: %s: the base fuses q/k/v into attn_qkv", ErrUnsupportedTarget, name)
				}
			}
			return fmt.Errorf("%w: target %s does not exist in the base model", ErrMismatch, name)
		}
		if kind == "ffn_up" {
			if _, ok := base.Tensor(Key(layer, "ffn_gate.weight")); !ok {
				return fmt.Errorf("%w: %s: the base fuses the gate and up projections", ErrUnsupportedTarget, name)
			}
		}
		if len(t.Shape) != 2 || int(t.Shape[0]) != p.In || int(t.Shape[1]) != p.Out {
			return fmt.Errorf("%w: %s: base weight has shape %v (in×out), adapter expects [%d %d]", ErrMismatch, name, t.Shape, p.In, p.Out)
		}
	}
	return nil
}

package model

import (
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
)

// ropeScaling reads the rotary embedding's base and context-extension keys
// into c.RoPE the way llama.cpp's context parameters end up:
//
//   - rope.scaling.type is "none", "linear", "yarn" or "longrope"; a file
//     without it scales linearly when it has a factor (rope.scaling.factor,
//     or the older rope.scale_linear), as llama.cpp defaults to "linear".
//   - linear and YaRN divide positions by the factor (FreqScale = 1/factor).
//   - YaRN also ramps between interpolated and extrapolated frequencies
//     over the dimensions set by β_fast = 32, β_slow = 1 and the original
//     context, and scales cos/sin by 1 + 0.1·ln(factor), which the backend
//     applies itself; llama.cpp cancels its own copy of that factor in its
//     attention factor, so AttnFactor is (0.1·ln f + 1)·1/(1 + 0.1·ln f)
//     in float32, as it computes it, times rope.scaling.attn_factor.
//   - rope.scaling.attn_factor multiplies cos/sin for every type (Phi-3's
//     LongRoPE files carry it); the YaRN-specific keys yarn_ext_factor,
//     yarn_attn_factor and yarn_beta_* are ignored, as llama.cpp ignores
//     them for these families.
//   - OrigCtx is rope.scaling.original_context_length, else the trained
//     context: YaRN's ramp and Phi-3's long/short factor choice use it.
//
// Every number is bounded before use.
func (l *loader) ropeScaling(c *Config) error {
	base, err := l.floatKey("rope.freq_base", 10000)
	if err != nil {
		return err
	}
	if err := checkFloat(l.arch+".rope.freq_base", base, 1.0001, 1e12); err != nil {
		return err
	}
	c.RoPE.FreqBase, c.RoPE.FreqScale = base, 1
	c.RoPE.OrigCtx = c.ContextLength
	if _, ok := l.f.Get(l.arch + ".rope.scaling.original_context_length"); ok {
		orig, err := l.uintKey("rope.scaling.original_context_length", 0, true)
		if err != nil {
			return err
		}
		if err := checkInt(l.arch+".rope.scaling.original_context_length", orig, 1, maxContext); err != nil {
			return err
		}
		c.RoPE.OrigCtx = orig
	}
	scaling, hasType := l.f.ArchString("rope.scaling.type")
	factor, err := l.floatKey("rope.scaling.factor", 0)
	if err != nil {
		return err
	}
	if factor == 0 {
		if factor, err = l.floatKey("rope.scale_linear", 0); err != nil {
			return err
		}
	}
	if !hasType {
		scaling = "linear"
	}
	if factor != 0 {
		if err := checkFloat(l.arch+".rope.scaling.factor", factor, 1.0/maxRopeFactor, maxRopeFactor); err != nil {
			return err
		}
	}
	attn, err := l.floatKey("rope.scaling.attn_factor", 1)
	if err != nil {
		return err
	}
	if err := checkFloat(l.arch+".rope.scaling.attn_factor", attn, 1e-3, 1e3); err != nil {
		return err
	}
	switch scaling {
	case "none":
	case "linear", "longrope":
		if factor != 0 {
			c.RoPE.FreqScale = 1 / factor
		}
	case "yarn":
		if factor != 0 {
			c.RoPE.FreqScale = 1 / factor
		}
		c.RoPE.ExtFactor = 1
		c.RoPE.BetaFast, c.RoPE.BetaSlow = 32, 1
		attn *= yarnAttnFactor(c.RoPE.FreqScale)
	default:
		return fmt.Errorf("unsupported rope scaling %q (supported: none, linear, yarn, longrope; llama3 files carry rope_freqs.weight)", scaling)
	}
	c.RoPE.AttnFactor = attn
	return nil
}

// yarnAttnFactor is the attention factor llama.cpp's context computes for
// YaRN before multiplying in rope.scaling.attn_factor: its magnitude
// scale get_mscale(factor) times the inverse of the scale the rope kernel
// applies on its own, all in float32. (About 1, but not always exactly.)
func yarnAttnFactor(freqScale float32) float32 {
	factor := 1 / freqScale
	logf := float32(math.Log(float64(factor)))
	mscale := float32(1)
	if factor > 1 {
		mscale = float32(0.1)*logf + 1
	}
	return mscale * (1 / (1 + float32(0.1)*logf))
}

// ropeFactors loads a per-frequency factor vector (llama3's
// rope_freqs.weight, Phi-3's rope_factors_short/long.weight): Dims/2
// values, each finite and within [1/maxRopeFactor, maxRopeFactor], since
// every frequency is divided by its factor. It returns the first of names
// that the file has, or nil when it has none.
func (l *loader) ropeFactors(c Config, names ...string) (compute.Tensor, error) {
	for _, name := range names {
		if !l.has(name) {
			continue
		}
		n := c.RoPE.Dims / 2
		v, err := l.f.Vector(name, n)
		if err != nil {
			return nil, err
		}
		for i, f := range v {
			if err := checkFloat(fmt.Sprintf("%s[%d]", name, i), f, 1.0/maxRopeFactor, maxRopeFactor); err != nil {
				return nil, err
			}
		}
		dst := l.b.New(1, n)
		l.b.Upload(dst, v)
		return dst, nil
	}
	return nil, nil
}

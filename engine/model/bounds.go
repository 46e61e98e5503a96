package model

import (
	"fmt"
	"math"
)

// Bounds on the metadata numbers the newer families read (expert counts,
// head sizes, windows, rope parameters). Each is checked before it sizes
// a buffer or enters the rope arithmetic, so a corrupt or hostile file is
// a clear error, never an allocation of its choosing or a NaN model. The
// limits are well above every released model's.
const (
	maxExperts     = 1024    // llama.cpp's LLAMA_MAX_EXPERTS
	maxExpertsUsed = 64      // experts per token (8 in Mixtral, Qwen3 MoE)
	maxFF          = 1 << 20 // feed-forward width of one expert
	maxHeadDim     = 1024    // key/value head size
	maxContext     = 1 << 24 // context and original-context lengths
	maxRopeFactor  = 1024    // linear/YaRN scaling factor, LongRoPE and llama3 factors
)

// checkInt fails unless lo ≤ v ≤ hi; key names the metadata in the error.
func checkInt(key string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("metadata %s = %d is out of range [%d, %d]", key, v, lo, hi)
	}
	return nil
}

// checkFloat fails unless v is finite and lo ≤ v ≤ hi.
func checkFloat(key string, v float32, lo, hi float32) error {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v < lo || v > hi {
		return fmt.Errorf("metadata %s = %g is out of range [%g, %g]", key, v, lo, hi)
	}
	return nil
}

// checkHeads bounds the head size of families that read it from
// attention.key_length (Qwen3, Gemma 3: not dim/heads) and checks what
// the engine assumes of it: values as long as keys, an even rotated part
// no longer than the head.
func checkHeads(l *loader, c Config) error {
	if err := checkInt(l.arch+".attention.key_length", c.HeadDim, 2, maxHeadDim); err != nil {
		return err
	}
	if v, ok := l.f.ArchUint("attention.value_length"); ok && int(v) != c.HeadDim {
		return fmt.Errorf("metadata %s.attention.value_length = %d differs from key_length %d", l.arch, v, c.HeadDim)
	}
	if d := c.RoPE.Dims; d < 2 || d > c.HeadDim || d%2 != 0 {
		return fmt.Errorf("metadata %s.rope.dimension_count = %d: want an even number in [2, %d]", l.arch, d, c.HeadDim)
	}
	return nil
}

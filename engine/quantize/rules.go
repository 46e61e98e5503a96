package quantize

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ruvllm/ruvllm/engine/quant"
)

// The per-tensor type rules of llama.cpp's llama-quant.cpp
// (tensor_allows_quantization, llama_tensor_get_type and the shape
// fallbacks), which decide, for a file type, which tensors keep their
// type, which get the file type's default and which get more (or fewer)
// bits by their role and layer.

// category is a tensor's role for the rules.
type category int

const (
	catOther category = iota
	catOutput
	catTokenEmbd
	catAttnQKV
	catAttnKVB
	catAttnV
	catAttnK
	catAttnQ
	catAttnOutput
	catFFNUp
	catFFNGate
	catFFNDown
)

func tensorCategory(name string) category {
	switch {
	case name == "output.weight":
		return catOutput
	case name == "token_embd.weight" || name == "per_layer_token_embd.weight":
		return catTokenEmbd
	case strings.Contains(name, "attn_qkv.weight"):
		return catAttnQKV
	case strings.Contains(name, "attn_kv_b.weight"):
		return catAttnKVB
	case strings.Contains(name, "attn_v.weight"):
		return catAttnV
	case strings.Contains(name, "attn_k.weight"):
		return catAttnK
	case strings.Contains(name, "attn_q.weight"):
		return catAttnQ
	case strings.Contains(name, "attn_output.weight"):
		return catAttnOutput
	case strings.Contains(name, "ffn_up"):
		return catFFNUp
	case strings.Contains(name, "ffn_gate"):
		return catFFNGate
	case strings.Contains(name, "ffn_down"):
		return catFFNDown
	}
	return catOther
}

func (c category) attnVLike() bool { return c == catAttnV || c == catAttnQKV || c == catAttnKVB }

// noQuantize are name fragments of tensors llama.cpp never quantizes.
var noQuantize = []string{
	"_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
	"ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
	"time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
	"time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight",
	"time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
	"time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
	"attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos",
	".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
}

// nDims is ggml_n_dims: the number of dimensions up to the last one above
// 1 (at least 1).
func nDims(shape []uint64) int {
	for i := len(shape) - 1; i > 0; i-- {
		if shape[i] > 1 {
			return i + 1
		}
	}
	return 1
}

// allowsQuantization is llama.cpp's tensor_allows_quantization with the
// default parameters (output tensor quantized).
func allowsQuantization(name string, shape []uint64) bool {
	if nDims(shape) < 2 || !strings.HasSuffix(name, "weight") {
		return false
	}
	for _, s := range noQuantize {
		if strings.Contains(name, s) {
			return false
		}
	}
	return name != "position_embd.weight" && name != "token_types.weight"
}

// model holds the hyperparameters the rules look at.
type model struct {
	arch           string
	layers         int
	heads, headsKV int // of layer 0
	experts        int
	is70B          bool
	tiedEmbeddings bool // no output.weight: token_embd is also the output
	attnV          int  // attention-V-like tensors in the file
}

// gqa is n_gqa(): query heads per KV head (0 without KV heads).
func (m *model) gqa() int {
	if m.headsKV == 0 {
		return 0
	}
	return m.heads / m.headsKV
}

// rules is the state of llama.cpp's quantize_state_impl while it walks
// the tensors in order: the counters of the layered tensors it has seen.
type rules struct {
	m                                  *model
	ft                                 uint32
	hasImatrix                         bool
	iAttnV, iFFNDown, iFFNGate, iFFNUp int
}

// moreBits is llama.cpp's use_more_bits: the first and last eighth of the
// layers and every third layer between.
func moreBits(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }

// layer returns the layer of a layered tensor: the counter, or with
// experts the number in the name.
func (r *rules) layer(counter int, name string) (int, error) {
	if r.m.experts <= 1 {
		return counter, nil
	}
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, fmt.Errorf("failed to determine layer for tensor %s", name)
	}
	num, _, _ := strings.Cut(rest, ".")
	i, err := strconv.Atoi(num)
	if err != nil || i < 0 || i >= r.m.layers {
		return 0, fmt.Errorf("bad layer %q for tensor %s (%d layers)", num, name, r.m.layers)
	}
	return i, nil
}

func (r *rules) is(fts ...uint32) bool {
	for _, f := range fts {
		if r.ft == f {
			return true
		}
	}
	return false
}

// typeFor is llama_tensor_get_type_impl: the type of a quantizable tensor
// under the file type's mix, t being the default.
func (r *rules) typeFor(t quant.Type, name string, shape []uint64, cat category) (quant.Type, error) {
	m := r.m
	iq2Mix := r.is(ftIQ2_XXS, ftIQ2_XS, ftIQ1_S, ftIQ2_S, ftIQ2_M, ftIQ1_M)
	switch {
	case cat == catOutput || (m.tiedEmbeddings && cat == catTokenEmbd):
		nx := int(shape[0])
		switch {
		case m.arch == "falcon" || nx%t.BlockSize() != 0:
			t = quant.Q8_0
		case r.is(ftIQ2_XXS, ftIQ2_XS, ftIQ3_XXS, ftIQ1_S, ftIQ2_S, ftIQ2_M, ftIQ1_M):
			t = quant.Q5_K
		case t != quant.Q8_0:
			t = quant.Q6_K
		}
	case cat == catTokenEmbd:
		switch {
		case r.is(ftIQ2_XXS, ftIQ2_XS, ftIQ1_S, ftIQ1_M):
			t = quant.Q2_K
		case r.is(ftIQ2_S, ftIQ2_M, ftIQ3_XXS):
			t = quant.IQ3_S
		}
	case iq2Mix:
		switch {
		case cat.attnVLike():
			if m.gqa() >= 4 || m.experts >= 4 {
				t = quant.Q4_K
			} else if r.is(ftIQ2_S, ftIQ2_M) {
				t = quant.IQ3_S
			} else {
				t = quant.Q2_K
			}
			r.iAttnV++
		case m.experts == 8 && cat == catAttnK:
			t = quant.Q4_K
		case cat == catFFNDown:
			if r.iFFNDown < m.layers/8 {
				if r.is(ftIQ2_S, ftIQ2_M) {
					t = quant.IQ3_S
				} else {
					t = quant.Q2_K
				}
			}
			r.iFFNDown++
		case cat == catAttnOutput:
			if m.experts == 8 {
				t = quant.Q5_K
			} else if r.is(ftIQ1_S, ftIQ1_M) {
				t = quant.IQ2_XXS
			} else if r.is(ftIQ2_S, ftIQ2_M) {
				t = quant.IQ3_S
			}
		}
	case cat.attnVLike():
		switch {
		case r.is(ftQ2_K):
			t = pick(m.gqa() >= 4, quant.Q4_K, quant.Q3_K)
		case r.is(ftQ2_K_S) && m.gqa() >= 4:
			t = quant.Q4_K
		case r.is(ftIQ3_XXS):
			if m.gqa() >= 4 {
				t = quant.Q4_K
			} else {
				t = pick(!r.hasImatrix, quant.IQ3_S, quant.IQ3_XXS)
			}
		case r.is(ftIQ3_XS, ftIQ3_S) && m.gqa() >= 4:
			t = quant.Q4_K
		case r.is(ftIQ3_M):
			t = quant.Q4_K
		case r.is(ftQ3_K_M):
			t = pick(r.iAttnV < 2, quant.Q5_K, quant.Q4_K)
		case r.is(ftQ3_K_L):
			t = quant.Q5_K
		case r.is(ftIQ4_NL, ftIQ4_XS) && m.gqa() >= 4:
			t = quant.Q5_K
		case r.is(ftQ4_K_M, ftQ5_K_M) && moreBits(r.iAttnV, m.attnV):
			t = quant.Q6_K
		case r.is(ftQ4_K_S) && r.iAttnV < 4:
			t = quant.Q5_K
		}
		if m.is70B && (t == quant.Q3_K || t == quant.Q4_K) {
			t = quant.Q5_K
		}
		if m.experts == 8 {
			t = quant.Q8_0
		}
		r.iAttnV++
	case cat == catAttnK:
		switch {
		case m.experts == 8:
			t = quant.Q8_0
		case r.is(ftIQ3_XS):
			t = quant.IQ3_XXS
		case r.is(ftIQ3_XXS):
			t = quant.IQ2_S
		}
	case cat == catAttnQ:
		switch {
		case r.is(ftIQ3_XS):
			t = quant.IQ3_XXS
		case r.is(ftIQ3_XXS):
			t = quant.IQ2_S
		}
	case cat == catFFNDown:
		i, err := r.layer(r.iFFNDown, name)
		if err != nil {
			return 0, err
		}
		n := m.layers
		falcon := m.arch == "falcon"
		switch {
		case r.is(ftQ2_K):
			t = quant.Q3_K
		case r.is(ftQ2_K_S):
			if i < n/8 {
				t = quant.Q4_K
			}
		case r.is(ftIQ3_XXS) && !r.hasImatrix:
			t = pick(i < n/8, quant.Q4_K, quant.Q3_K)
		case r.is(ftQ3_K_M):
			switch {
			case i < n/16:
				t = quant.Q5_K
			case !falcon || moreBits(i, n):
				t = quant.Q4_K
			default:
				t = quant.Q3_K
			}
		case r.is(ftIQ3_M) && (i < n/8 || (m.experts == 8 && moreBits(i, n))):
			t = quant.Q4_K
		case r.is(ftQ3_K_L):
			t = pick(falcon, quant.Q4_K, quant.Q5_K)
		case r.is(ftQ4_K_M):
			if falcon {
				switch {
				case i < n/16:
					t = quant.Q6_K
				case moreBits(i, n):
					t = quant.Q5_K
				default:
					t = quant.Q4_K
				}
			} else if moreBits(i, n) {
				t = quant.Q6_K
			}
		case i < n/8 && r.is(ftIQ4_NL, ftIQ4_XS) && !r.hasImatrix:
			t = quant.Q5_K
		case r.is(ftQ5_K_M) && moreBits(i, n):
			t = quant.Q6_K
		case r.is(ftQ4_K_S) && !falcon && i < n/8:
			t = quant.Q5_K
		case r.is(ftQ4_0, ftQ5_0) && r.hasImatrix && i < n/8:
			t = pick(r.is(ftQ4_0), quant.Q4_1, quant.Q5_1)
		}
		r.iFFNDown++
	case cat == catAttnOutput:
		if m.arch != "falcon" {
			if m.experts == 8 {
				if r.is(ftQ2_K, ftIQ3_XS, ftIQ3_XXS, ftQ3_K_S, ftQ3_K_M, ftIQ4_NL, ftQ4_K_S, ftQ4_K_M, ftIQ3_S, ftIQ3_M, ftIQ4_XS) {
					t = quant.Q5_K
				}
			} else {
				switch {
				case r.is(ftQ2_K):
					t = quant.Q3_K
				case r.is(ftIQ3_XXS):
					t = quant.IQ3_S
				case r.is(ftQ3_K_M):
					t = quant.Q4_K
				case r.is(ftQ3_K_L):
					t = quant.Q5_K
				case r.is(ftIQ3_M):
					t = quant.Q4_K
				}
			}
		} else if r.is(ftQ3_K_L) {
			t = quant.Q4_K
		}
	case cat == catAttnQKV:
		// (attention-V-like above: llama.cpp's branch here is unreachable)
	case cat == catFFNGate, cat == catFFNUp:
		counter := &r.iFFNGate
		if cat == catFFNUp {
			counter = &r.iFFNUp
		}
		i, err := r.layer(*counter, name)
		if err != nil {
			return 0, err
		}
		if r.is(ftIQ3_XS) && i >= m.layers/8 && i < 7*m.layers/8 {
			t = quant.IQ3_XXS
		}
		*counter++
	}
	return t, nil
}

func pick(c bool, a, b quant.Type) quant.Type {
	if c {
		return a
	}
	return b
}

// fallback is llama.cpp's tensor_type_fallback: the type to use when
// rows of ncols values are not whole blocks of t.
func fallback(t quant.Type, ncols int) (quant.Type, bool) {
	if ncols%t.BlockSize() == 0 {
		return t, false
	}
	f := t
	switch t {
	case quant.IQ1_S, quant.IQ1_M, quant.IQ2_XXS, quant.IQ2_XS, quant.IQ2_S, quant.IQ3_XXS, quant.IQ3_S, quant.IQ4_XS:
		f = quant.IQ4_NL
	case quant.Q2_K, quant.Q3_K, quant.TQ1_0, quant.TQ2_0:
		f = quant.Q4_0
	case quant.Q4_K:
		f = quant.Q5_0
	case quant.Q5_K:
		f = quant.Q5_1
	case quant.Q6_K:
		f = quant.Q8_0
	}
	if ncols%f.BlockSize() != 0 {
		f = quant.F16
	}
	return f, true
}

// requiresImatrix is llama.cpp's tensor_requires_imatrix.
func requiresImatrix(name string, t quant.Type, ft uint32) bool {
	if tensorCategory(name) == catTokenEmbd || name == "output.weight" {
		return false
	}
	switch t {
	case quant.IQ3_XXS, quant.IQ2_XXS, quant.IQ2_XS, quant.IQ2_S, quant.IQ1_M, quant.IQ1_S:
		return true
	case quant.Q2_K:
		return ft == ftQ2_K_S
	}
	return false
}

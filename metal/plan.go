package metal

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// This file holds the host-side preparation of kernel arguments. It has no
// build constraint so its logic is tested on every platform, including the
// Linux machines where the kernels themselves cannot run.

// kernelNames are the functions of kernels.metal, one pipeline each.
var kernelNames = []string{
	"matmul_f32", "matmul_f16", "matmul_q8_0", "matmul_q4_0", "matmul_q4_k",
	"get_rows_f32", "get_rows_f16", "get_rows_q8_0", "get_rows_q4_0", "get_rows_q4_k",
	"add_f32", "add_row_f32", "scale_f32", "softcap_f32", "swiglu_f32", "geglu_f32",
	"rms_norm_f32", "rope_f32",
	"kv_store_f32", "kv_store_f16", "attend_f32", "attend_f16",
}

// kernelSuffix names the weight types the MatMul and GetRows kernels read
// (kernels.metal's w_* functions); other types fall back to the CPU.
var kernelSuffix = map[quant.Type]string{
	quant.F32:  "f32",
	quant.F16:  "f16",
	quant.Q8_0: "q8_0",
	quant.Q4_0: "q4_0",
	quant.Q4_K: "q4_k",
}

// params packs kernel parameters as the 4-byte little-endian scalars of an
// MSL struct of uint and float fields, in declaration order.
func params(vals ...any) []byte {
	out := make([]byte, 0, 4*len(vals))
	for _, v := range vals {
		var u uint32
		switch x := v.(type) {
		case int:
			if x < 0 || x > math.MaxUint32 {
				panic(fmt.Sprintf("metal: parameter %d out of uint range", x))
			}
			u = uint32(x)
		case uint32:
			u = x
		case float32:
			u = math.Float32bits(x)
		case bool:
			if x {
				u = 1
			}
		default:
			panic(fmt.Sprintf("metal: parameter of type %T", v))
		}
		out = binary.LittleEndian.AppendUint32(out, u)
	}
	return out
}

// int32Bytes encodes v as little-endian int32s, for index buffers.
func int32Bytes(v []int32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, x := range v {
		out = binary.LittleEndian.AppendUint32(out, uint32(x))
	}
	return out
}

// ropeTable computes, for every row of the spans, the (cos, sin) pairs the
// rope_f32 kernel rotates by, exactly as the CPU backend computes them:
// the angle is built by repeated float32 multiplication and YaRN's ramp,
// frequency factors and attention factor are applied. It returns the
// batch row of each entry and count×half interleaved (cos, sin) values.
// factors is the host view of p.Factors (nil when absent).
func ropeTable(spans []compute.Span, headDim int, p compute.RoPE, factors []float32) (rows []uint32, cs []float32, half int) {
	dims := p.Dims
	if dims == 0 || dims > headDim {
		dims = headDim
	}
	freqScale := p.FreqScale
	if freqScale == 0 {
		freqScale = 1
	}
	attnFactor := p.AttnFactor
	if attnFactor == 0 {
		attnFactor = 1
	}
	var corrLo, corrHi float32
	if p.ExtFactor != 0 {
		corrLo, corrHi = ropeCorrDims(dims, p.OrigCtx, p.FreqBase, p.BetaFast, p.BetaSlow)
	}
	thetaScale := float32(math.Pow(float64(p.FreqBase), float64(float32(-2)/float32(dims))))
	half = dims / 2
	for _, s := range spans {
		for i := 0; i < s.N; i++ {
			rows = append(rows, uint32(s.Row+i))
			theta := float32(s.Pos + i)
			for j := 0; j < half; j++ {
				ff := float32(1)
				if factors != nil {
					ff = factors[j]
				}
				extrap := theta / ff
				interp := freqScale * extrap
				t, mscale := interp, attnFactor
				if p.ExtFactor != 0 {
					y := (float32(j) - corrLo) / max(0.001, corrHi-corrLo)
					ramp := (1 - min(1, max(0, y))) * p.ExtFactor
					t = interp*(1-ramp) + extrap*ramp
					mscale *= 1 + 0.1*float32(math.Log(float64(1/freqScale)))
				}
				sn, c := quant.Sincosf(t) // llama.cpp's rope cache rounding, as the CPU backend
				cs = append(cs, c*mscale, sn*mscale)
				theta *= thetaScale
			}
		}
	}
	return rows, cs, half
}

// ropeCorrDims returns the YaRN ramp bounds, as ggml_rope_yarn_corr_dims
// (the same formula as the CPU backend's).
func ropeCorrDims(nDims, nCtxOrig int, base, betaFast, betaSlow float32) (lo, hi float32) {
	corr := func(nRot float32) float64 {
		return float64(nDims) * math.Log(float64(nCtxOrig)/(float64(nRot)*2*math.Pi)) / (2 * math.Log(float64(base)))
	}
	start := math.Floor(corr(betaFast))
	end := math.Ceil(corr(betaSlow))
	return float32(math.Max(0, start)), float32(math.Min(float64(nDims-1), end))
}

// attnPlan is the host-side description of one Attend call for the
// kv_store and attend kernels: one AttnRow (row, pos, table) per query
// row, and the spans' block tables concatenated.
type attnPlan struct {
	rows   []int32 // 3 per query row: batch row, position, table offset
	blocks []int32
	count  int
}

// planAttention lays out spans for the kernels, checking each block table
// covers its span (a programming error, so it panics as the CPU backend).
func planAttention(spans []compute.Span, blockSize, numBlocks int) attnPlan {
	var p attnPlan
	for _, sp := range spans {
		if len(sp.Blocks)*blockSize < sp.Pos+sp.N {
			panic("Attend: block table too short")
		}
		table := len(p.blocks)
		for _, b := range sp.Blocks {
			if b < 0 || int(b) >= numBlocks {
				panic(fmt.Sprintf("Attend: block %d out of range [0,%d)", b, numBlocks))
			}
		}
		p.blocks = append(p.blocks, sp.Blocks...)
		for i := 0; i < sp.N; i++ {
			p.rows = append(p.rows, int32(sp.Row+i), int32(sp.Pos+i), int32(table))
		}
		p.count += sp.N
	}
	return p
}

// kvIndex is the element offset of position t's K row in layer layer, the
// formula of kernels.metal's kv_index and of the CPU backend's offset.
func kvIndex(blocks []int32, table, t, blockSize, perBlock, perLayer, rowElems, layer int) int {
	blk := int(blocks[table+t/blockSize])
	return blk*perBlock + layer*2*perLayer + (t%blockSize)*rowElems
}

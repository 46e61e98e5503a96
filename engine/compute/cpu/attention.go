package cpu

import (
	"fmt"
	"math"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
)

// kvStore keeps keys and values in host memory. Layout: for each block, for
// each layer, K then V, each BlockSize×KVHeads×HeadDim elements, so one
// block's bytes are contiguous (cheap to copy, save and restore).
type kvStore struct {
	cfg      compute.KVConfig
	f16      []uint16 // when cfg.Type == F16
	f32      []float32
	rowElems int // KVHeads×HeadDim
	perLayer int // elements of K (or V) of one layer in one block
	perBlock int // elements of one block, all layers, K and V
}

// NewKVStore implements compute.Backend.
func (b *Backend) NewKVStore(cfg compute.KVConfig) (compute.KVStore, error) {
	if cfg.Type != quant.F16 && cfg.Type != quant.F32 {
		return nil, fmt.Errorf("kv type %s: %w", cfg.Type, compute.ErrUnsupported)
	}
	s := &kvStore{cfg: cfg, rowElems: cfg.KVHeads * cfg.HeadDim}
	s.perLayer = cfg.BlockSize * s.rowElems
	s.perBlock = 2 * cfg.Layers * s.perLayer
	total := s.perBlock * cfg.Blocks
	if cfg.Type == quant.F16 {
		s.f16 = make([]uint16, total)
	} else {
		s.f32 = make([]float32, total)
	}
	return s, nil
}

func (s *kvStore) Config() compute.KVConfig { return s.cfg }

func (s *kvStore) elemBytes() int {
	if s.f16 != nil {
		return 2
	}
	return 4
}

func (s *kvStore) BlockBytes() int { return s.perBlock * s.elemBytes() }

func (s *kvStore) CopyBlock(dst, src int32) {
	d, o := int(dst)*s.perBlock, int(src)*s.perBlock
	if s.f16 != nil {
		copy(s.f16[d:d+s.perBlock], s.f16[o:o+s.perBlock])
	} else {
		copy(s.f32[d:d+s.perBlock], s.f32[o:o+s.perBlock])
	}
}

func (s *kvStore) ReadBlock(blk int32, dst []byte) error {
	if len(dst) != s.BlockBytes() {
		return fmt.Errorf("read block: buffer of %d bytes, block is %d", len(dst), s.BlockBytes())
	}
	o := int(blk) * s.perBlock
	if s.f16 != nil {
		for i, v := range s.f16[o : o+s.perBlock] {
			dst[2*i], dst[2*i+1] = byte(v), byte(v>>8)
		}
		return nil
	}
	for i, v := range s.f32[o : o+s.perBlock] {
		u := math.Float32bits(v)
		dst[4*i], dst[4*i+1], dst[4*i+2], dst[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return nil
}

func (s *kvStore) WriteBlock(blk int32, src []byte) error {
	if len(src) != s.BlockBytes() {
		return fmt.Errorf("write block: %d bytes, block is %d", len(src), s.BlockBytes())
	}
	o := int(blk) * s.perBlock
	if s.f16 != nil {
		for i := range s.f16[o : o+s.perBlock] {
			s.f16[o+i] = uint16(src[2*i]) | uint16(src[2*i+1])<<8
		}
		return nil
	}
	for i := range s.f32[o : o+s.perBlock] {
		u := uint32(src[4*i]) | uint32(src[4*i+1])<<8 | uint32(src[4*i+2])<<16 | uint32(src[4*i+3])<<24
		s.f32[o+i] = math.Float32frombits(u)
	}
	return nil
}

// offset returns the element offset of position pos's K row (V is
// perLayer further) in layer l, through the block table.
func (s *kvStore) offset(blocks []int32, layer, pos int) int {
	bs := s.cfg.BlockSize
	blk := int(blocks[pos/bs])
	return blk*s.perBlock + layer*2*s.perLayer + (pos%bs)*s.rowElems
}

// Attend implements compute.Backend.
func (b *Backend) Attend(dst, q, k, v compute.Tensor, store compute.KVStore, spans []compute.Span, a compute.Attention) {
	s := store.(*kvStore)
	d, qs, ks, vs := ct(dst), ct(q), ct(k), ct(v)
	hd, kvh := a.HeadDim, a.KVHeads
	if qs.cols != a.Heads*hd || ks.cols != kvh*hd || vs.cols != kvh*hd || d.cols != qs.cols || s.rowElems != kvh*hd {
		panic(fmt.Sprintf("Attend: q %d, k %d, v %d, dst %d cols for %d/%d heads of %d", qs.cols, ks.cols, vs.cols, d.cols, a.Heads, kvh, hd))
	}
	re := s.rowElems
	// Store the new keys and values.
	for _, sp := range spans {
		if len(sp.Blocks)*s.cfg.BlockSize < sp.Pos+sp.N {
			panic("Attend: block table too short")
		}
		for i := 0; i < sp.N; i++ {
			o := s.offset(sp.Blocks, a.Layer, sp.Pos+i)
			kr, vr := ks.f32[(sp.Row+i)*re:(sp.Row+i+1)*re], vs.f32[(sp.Row+i)*re:(sp.Row+i+1)*re]
			if s.f16 != nil {
				for j := 0; j < re; j++ {
					s.f16[o+j] = quant.FP32ToFP16(kr[j])
					s.f16[o+s.perLayer+j] = quant.FP32ToFP16(vr[j])
				}
			} else {
				copy(s.f32[o:o+re], kr)
				copy(s.f32[o+s.perLayer:o+s.perLayer+re], vr)
			}
		}
	}
	j := &b.attend
	j.items = j.items[:0]
	for si := range spans {
		for i := 0; i < spans[si].N; i++ {
			for h := 0; h < a.Heads; h++ {
				j.items = append(j.items, attendItem{si, i, h})
			}
		}
	}
	j.d, j.q, j.s, j.spans, j.a = d, qs, s, spans, a
	// One item is one head of one token: decode parallelises over heads,
	// prefill over tokens and heads.
	b.w.run(len(j.items), 4, j)
	j.d, j.q, j.s, j.spans = nil, nil, nil, nil
}

// attendItem is the attention of head h of token i of span span.
type attendItem struct{ span, i, h int }

// attendJob holds the parameters of one Attend call and per-worker scratch
// rows (scores, the query head, the output accumulator).
type attendJob struct {
	items           []attendItem
	d, q            *tensor
	s               *kvStore
	spans           []compute.Span
	a               compute.Attention
	scores, qh, acc [][]float32
	kf              [][]float32 // per-worker f16 KV rows converted to f32
}

// grow returns buf resliced to n elements, reallocated when too short with
// at least double the capacity, so a row that grows by one element per
// decode step (attention scores) is reallocated only log(context) times.
func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n, max(n, 2*cap(buf), 64))
	}
	return buf[:n]
}

func (j *attendJob) do(wk, lo, hi int) {
	s, a, qs, d := j.s, j.a, j.q, j.d
	hd := a.HeadDim
	group := a.Heads / a.KVHeads
	f16 := s.f16 != nil
	qh := grow(j.qh[wk], hd)
	acc := grow(j.acc[wk], hd)
	j.qh[wk], j.acc[wk] = qh, acc
	// f16 keys and values are converted to f32 here, four rows at a time,
	// with F16C where the CPU has it; the conversion is exact, so the
	// scores are those of multiplying by each converted element.
	kf := grow(j.kf[wk], 4*hd)
	j.kf[wk] = kf
	k0, k1, k2, k3 := kf[:hd], kf[hd:2*hd], kf[2*hd:3*hd], kf[3*hd:4*hd]
	for _, it := range j.items[lo:hi] {
		sp := &j.spans[it.span]
		pos := sp.Pos + it.i
		first := 0
		if a.Window > 0 && pos-a.Window+1 > 0 {
			first = pos - a.Window + 1
		}
		n := pos - first + 1
		scores := grow(j.scores[wk], n)
		j.scores[wk] = scores
		row := sp.Row + it.i
		copy(qh, qs.f32[row*qs.cols+it.h*hd:row*qs.cols+(it.h+1)*hd])
		if f16 {
			// llama.cpp multiplies f16 keys with queries rounded to f16.
			for t := range qh {
				qh[t] = quant.FP16ToFP32(quant.FP32ToFP16(qh[t]))
			}
		}
		kvOff := (it.h / group) * hd
		maxScore := float32(math.Inf(-1))
		// Raw dot products first, four keys at a time: four independent
		// sums, each in element order, so the additions overlap and every
		// score is bit-identical to a one-key loop.
		t := 0
		for ; t+4 <= len(scores); t += 4 {
			var o [4]int
			for u := range o {
				o[u] = s.offset(sp.Blocks, a.Layer, first+t+u) + kvOff
			}
			var d [4]float32
			if f16 {
				quant.HalfToFloat(k0, s.f16[o[0]:o[0]+hd])
				quant.HalfToFloat(k1, s.f16[o[1]:o[1]+hd])
				quant.HalfToFloat(k2, s.f16[o[2]:o[2]+hd])
				quant.HalfToFloat(k3, s.f16[o[3]:o[3]+hd])
				d = dot4F32(qh, k0, k1, k2, k3)
			} else {
				d = dot4F32(qh, s.f32[o[0]:o[0]+hd], s.f32[o[1]:o[1]+hd], s.f32[o[2]:o[2]+hd], s.f32[o[3]:o[3]+hd])
			}
			copy(scores[t:t+4], d[:])
		}
		for ; t < len(scores); t++ {
			o := s.offset(sp.Blocks, a.Layer, first+t) + kvOff
			var dot float32
			if f16 {
				quant.HalfToFloat(k0, s.f16[o:o+hd])
				kr := k0[:len(qh)]
				for e, x := range qh {
					dot += x * kr[e]
				}
			} else {
				kr := s.f32[o : o+hd]
				kr = kr[:len(qh)]
				for e, x := range qh {
					dot += x * kr[e]
				}
			}
			scores[t] = dot
		}
		for t, dot := range scores {
			sc := dot * a.Scale
			if a.Softcap > 0 {
				sc = a.Softcap * float32(math.Tanh(float64(sc/a.Softcap)))
			}
			scores[t] = sc
			maxScore = max(maxScore, sc)
		}
		var sum float64
		for t, sc := range scores {
			e := float32(math.Exp(float64(sc - maxScore)))
			scores[t] = e
			sum += float64(e)
		}
		inv := float32(1 / sum)
		clear(acc)
		for t, p := range scores {
			p *= inv
			o := s.offset(sp.Blocks, a.Layer, first+t) + s.perLayer + kvOff
			if f16 {
				// llama.cpp multiplies f16 values by probabilities
				// converted to f16.
				p = quant.FP16ToFP32(quant.FP32ToFP16(p))
				quant.HalfToFloat(k0, s.f16[o:o+hd])
				vr := k0[:len(acc)]
				for e := range acc {
					acc[e] += p * vr[e]
				}
			} else {
				vr := s.f32[o : o+hd]
				vr = vr[:len(acc)]
				for e := range acc {
					acc[e] += p * vr[e]
				}
			}
		}
		copy(d.f32[row*d.cols+it.h*hd:row*d.cols+(it.h+1)*hd], acc)
	}
}

// dot4F16 returns the dot products of q with four f16 key rows (each at
// least len(q) long), each summed in element order: the plain form of
// what Attend computes by converting the rows with quant.HalfToFloat and
// calling dot4F32, kept as the tests' reference.
func dot4F16(q []float32, k0, k1, k2, k3 []uint16) [4]float32 {
	k0, k1, k2, k3 = k0[:len(q)], k1[:len(q)], k2[:len(q)], k3[:len(q)]
	var d0, d1, d2, d3 float32
	for e, x := range q {
		d0 += x * quant.FP16ToFP32(k0[e])
		d1 += x * quant.FP16ToFP32(k1[e])
		d2 += x * quant.FP16ToFP32(k2[e])
		d3 += x * quant.FP16ToFP32(k3[e])
	}
	return [4]float32{d0, d1, d2, d3}
}

// dot4F32 is dot4F16 for f32 key rows.
func dot4F32(q, k0, k1, k2, k3 []float32) [4]float32 {
	k0, k1, k2, k3 = k0[:len(q)], k1[:len(q)], k2[:len(q)], k3[:len(q)]
	var d0, d1, d2, d3 float32
	for e, x := range q {
		d0 += x * k0[e]
		d1 += x * k1[e]
		d2 += x * k2[e]
		d3 += x * k3[e]
	}
	return [4]float32{d0, d1, d2, d3}
}

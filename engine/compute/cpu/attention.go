package cpu

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/internal/hostmem"
)

// kvStore keeps keys and values in host memory. Layout: for each block, for
// each layer, K then V, each BlockSize×KVHeads×HeadDim elements, so one
// block's bytes are contiguous (cheap to copy, save and restore).
type kvStore struct {
	cfg compute.KVConfig
	// kT stores each block's keys transposed, per KV head element-major
	// ([KVHeads][HeadDim][BlockSize]), so that the tiled attention of the
	// default mode converts a block of keys into its transposed tile with
	// contiguous loads, and its values per KV head
	// ([KVHeads][BlockSize][HeadDim], vRow), so that a head's values in a
	// block are one contiguous run too: in rows of KVHeads×HeadDim, a
	// decode step over a long context read each head's value rows a
	// row's width apart, and converting them took three times as long as
	// the same bytes of keys (a third of a 1B model's attention at 4096
	// positions). Without kT, keys and values are rows of KVHeads×HeadDim.
	kT       bool
	f16      []uint16 // when cfg.Type == F16
	f32      []float32
	rowElems int // KVHeads×HeadDim
	perLayer int // elements of K (or V) of one layer in one block
	perBlock int // elements of one block, all layers, K and V

	coldT *coldTier // blocks Blocks.. quantized (coldkv.go), nil without
}

// Layout names how the store keeps keys and values and so which attention
// reads them: "keys-transposed,values-by-head" (the default mode's tiled
// attention) or "keys-rows". Blocks saved from a store of one layout are
// not those of another (the prefix cache's namespace includes it).
func (s *kvStore) Layout() string {
	if s.kT {
		return "keys-transposed,values-by-head"
	}
	return "keys-rows"
}

// NewKVStore implements compute.Backend.
func (b *Backend) NewKVStore(cfg compute.KVConfig) (compute.KVStore, error) {
	if cfg.Type != quant.F16 && cfg.Type != quant.F32 {
		return nil, fmt.Errorf("kv type %s: %w", cfg.Type, compute.ErrUnsupported)
	}
	s := &kvStore{cfg: cfg, rowElems: cfg.KVHeads * cfg.HeadDim}
	// A cold tier (coldkv.go) demotes and reads rows of keys, so a store
	// with one keeps rows, and its attention is flash, not tiled.
	s.kT = !b.exact && cfg.HeadDim%16 == 0 && cfg.BlockSize > 0 && quant.FlashTile%cfg.BlockSize == 0 && cfg.ColdType == 0
	s.perLayer = cfg.BlockSize * s.rowElems
	s.perBlock = 2 * cfg.Layers * s.perLayer
	total := s.perBlock * cfg.Blocks
	if err := s.newColdTier(); err != nil { // coldkv.go
		return nil, err
	}
	// Outside the Go heap and in huge pages, as repacked weights: a long
	// context's cache is GiBs that decode streams through every step.
	buf, err := hostmem.Alloc(total * cfg.Type.BlockBytes())
	if err != nil {
		return nil, fmt.Errorf("kv cache: %w", err)
	}
	// Which of f16 and f32 is non-nil says the element type, even for an
	// empty store.
	s.f16, s.f32 = []uint16{}, nil
	if cfg.Type == quant.F32 {
		s.f16, s.f32 = nil, []float32{}
	}
	if len(buf) > 0 {
		runtime.AddCleanup(s, freeHost, buf)
		if s.f16 != nil {
			s.f16 = unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(buf))), total)
		} else {
			s.f32 = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(buf))), total)
		}
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
	if s.cold(src) { // coldkv.go
		s.promote(dst, src)
		return
	}
	d, o := int(dst)*s.perBlock, int(src)*s.perBlock
	if s.f16 != nil {
		copy(s.f16[d:d+s.perBlock], s.f16[o:o+s.perBlock])
	} else {
		copy(s.f32[d:d+s.perBlock], s.f32[o:o+s.perBlock])
	}
}

func (s *kvStore) ReadBlock(blk int32, dst []byte) error {
	if s.cold(blk) { // coldkv.go: the quantized bytes as they are
		if len(dst) != s.ColdBlockBytes() {
			return fmt.Errorf("read cold block: buffer of %d bytes, block is %d", len(dst), s.ColdBlockBytes())
		}
		o := (int(blk) - s.cfg.Blocks) * s.coldT.perBlock
		copy(dst, s.coldT.data[o:o+s.coldT.perBlock])
		return nil
	}
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
	if s.cold(blk) {
		if len(src) != s.ColdBlockBytes() {
			return fmt.Errorf("write cold block: %d bytes, block is %d", len(src), s.ColdBlockBytes())
		}
		o := (int(blk) - s.cfg.Blocks) * s.coldT.perBlock
		copy(s.coldT.data[o:o+s.coldT.perBlock], src)
		return nil
	}
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

// kbase returns the element offset of the keys of layer l in the block
// that holds position pos (values are perLayer further).
func (s *kvStore) kbase(blocks []int32, layer, pos int) int {
	return int(blocks[pos/s.cfg.BlockSize])*s.perBlock + layer*2*s.perLayer
}

// kHead returns the element offset of KV head h's transposed keys
// (HeadDim×BlockSize, element-major) in layer l of the block that holds
// position pos (kT).
func (s *kvStore) kHead(blocks []int32, layer, pos, h int) int {
	return s.kbase(blocks, layer, pos) + h*s.cfg.HeadDim*s.cfg.BlockSize
}

// offset returns the element offset of position pos's K row (V is
// perLayer further) in layer l, through the block table.
func (s *kvStore) offset(blocks []int32, layer, pos int) int {
	bs := s.cfg.BlockSize
	blk := int(blocks[pos/bs])
	return blk*s.perBlock + layer*2*s.perLayer + (pos%bs)*s.rowElems
}

// vRow returns the element offset of KV head h's values at position pos
// in layer l, through the block table, and the elements from one
// position's values to the next within the block: HeadDim with kT (values
// by head), KVHeads×HeadDim without.
func (s *kvStore) vRow(blocks []int32, layer, pos, h int) (off, stride int) {
	hd := s.cfg.HeadDim
	if s.kT {
		bs := s.cfg.BlockSize
		return s.kHead(blocks, layer, pos, h) + s.perLayer + (pos%bs)*hd, hd
	}
	return s.offset(blocks, layer, pos) + s.perLayer + h*hd, s.rowElems
}

// storeV writes the value row v (KVHeads×HeadDim) of position pos.
func (s *kvStore) storeV(blocks []int32, layer, pos int, v []float32) {
	hd := s.cfg.HeadDim
	for h := range s.cfg.KVHeads {
		o, _ := s.vRow(blocks, layer, pos, h)
		if s.f16 != nil {
			quant.FloatToHalf(s.f16[o:o+hd], v[h*hd:(h+1)*hd])
		} else {
			copy(s.f32[o:o+hd], v[h*hd:(h+1)*hd])
		}
	}
}

// storeKT writes the key row k of position pos into its block's
// transposed keys (kT).
func (s *kvStore) storeKT(blocks []int32, layer, pos int, k []float32) {
	bs, base, p := s.cfg.BlockSize, s.kbase(blocks, layer, pos), pos%s.cfg.BlockSize
	if s.f16 != nil {
		for e, x := range k[:s.rowElems] {
			s.f16[base+e*bs+p] = quant.FP32ToFP16(x)
		}
		return
	}
	for e, x := range k[:s.rowElems] {
		s.f32[base+e*bs+p] = x
	}
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
		if sp.Tree != nil && !compute.ValidTree(sp.Tree, sp.N) {
			panic("Attend: invalid tree")
		}
		if s.coldT != nil && sp.N > 0 && (s.cold(sp.Blocks[sp.Pos/s.cfg.BlockSize]) || s.cold(sp.Blocks[(sp.Pos+sp.N-1)/s.cfg.BlockSize])) {
			panic("Attend: writing into a cold block")
		}
		for i := 0; i < sp.N; i++ {
			o := s.offset(sp.Blocks, a.Layer, sp.Pos+i)
			kr, vr := ks.f32[(sp.Row+i)*re:(sp.Row+i+1)*re], vs.f32[(sp.Row+i)*re:(sp.Row+i+1)*re]
			if s.kT {
				s.storeKT(sp.Blocks, a.Layer, sp.Pos+i, kr)
				s.storeV(sp.Blocks, a.Layer, sp.Pos+i, vr)
				continue
			}
			if s.f16 != nil {
				quant.FloatToHalf(s.f16[o:o+re], kr)
				quant.FloatToHalf(s.f16[o+s.perLayer:o+s.perLayer+re], vr)
			} else {
				copy(s.f32[o:o+re], kr)
				copy(s.f32[o+s.perLayer:o+s.perLayer+re], vr)
			}
		}
	}
	j := &b.attend
	j.items = j.items[:0]
	group := a.Heads / kvh
	units, grain, tokens := 0, 4, 0 // single-token items (decode) are small
	for _, sp := range spans {
		units += (sp.N + attendChunk - 1) / attendChunk
		tokens += sp.N
		if sp.N > 1 {
			grain = 1
		}
	}
	// An item takes every query head of a KV head when that leaves enough
	// items to share out, so that the group's keys and values are
	// gathered once; otherwise (decode of few sequences) one head. Over
	// an f16 cache an item takes up to quant.FlashMaxHeads heads of one
	// KV head, which flash runs side by side, and as many as still leave
	// two items per worker.
	perItem := 1
	if units*kvh >= 2*b.w.n {
		perItem, grain = group, 1
	}
	tiled := (!b.exact || b.batched && tokens >= quant.FlashTile) && a.HeadDim%16 == 0
	if tiled {
		// Every query head of a KV head in one item, so that each tile of
		// keys and values is read and converted once for all of them,
		// unless that leaves a worker without an item (decode of one
		// sequence with fewer KV heads than workers). Asking for two items
		// a worker, as the other paths do, split a 2-KV-head model's heads
		// in two and read its whole cache twice a step: the 0.5B shape's
		// Q4_0 decode at 8192 positions ran 37.2 t/s that way, 44.0 so.
		perItem = group
		for perItem > 1 && units*kvh*((group+perItem-1)/perItem) < b.w.n {
			perItem = (perItem + 1) / 2
		}
		grain = 1
	} else if s.f16 != nil {
		perItem = min(group, quant.FlashMaxHeads)
		for perItem > 1 && units*kvh*((group+perItem-1)/perItem) < 2*b.w.n {
			perItem--
		}
		if perItem > 1 {
			grain = 1
		}
	}
	for si := range spans {
		for i0 := 0; i0 < spans[si].N; i0 += attendChunk {
			for g := range kvh {
				for h := g * group; h < (g+1)*group; h += perItem {
					j.items = append(j.items, attendItem{si, i0, min(i0+attendChunk, spans[si].N), h, min(h+perItem, (g+1)*group)})
				}
			}
		}
	}
	j.d, j.q, j.s, j.spans, j.a, j.tiledMode, j.fp16 = d, qs, s, spans, a, tiled, b.fp16
	b.w.run(len(j.items), grain, j)
	j.d, j.q, j.s, j.spans = nil, nil, nil, nil
}

// attendChunk is the number of consecutive query tokens one attention item
// takes: their keys and values are converted to f32 (and the keys
// transposed) once for all of them.
const attendChunk = 16

// attendItem is the attention of query heads [h0, h1), which share one
// KV head, for tokens [i0, i1) of span span.
type attendItem struct{ span, i0, i1, h0, h1 int }

// attendJob holds the parameters of one Attend call and per-worker scratch
// rows (scores, the query head, the output accumulator, the keys and
// values of the current item in f32).
type attendJob struct {
	items           []attendItem
	d, q            *tensor
	s               *kvStore
	spans           []compute.Span
	a               compute.Attention
	scores, qh, acc [][]float32
	q16, acc16      [][]uint16         // the queries and output accumulators in f16 (flash)
	heads           []quant.FlashHeads // flash's running state of an item's heads
	kt, vf          [][]float32        // keys transposed (head dim × keys) and values (keys × head dim)
	runs            [][]keyRun         // the runs of keys a row of a tree span reads (tree.go)
	cold            []coldScratch      // cold rows decoded to f16 (coldkv.go)
	// tiledMode runs every item through tiled (the default mode's
	// attention); its per-worker state is tile.
	tiledMode bool
	tile      []tileState
	// fp16 gives flash the f16 arithmetic of a native AVX512-FP16 build
	// (Options.Build).
	fp16 bool
}

// tileState is one worker's scratch for tiled: a tile of keys (transposed)
// and values in float32, the scores of one token's heads, and the running
// maximum, sum and output accumulator of each (token, head) row of an item.
type tileState struct {
	kt, vt, sc, acc, ms, ss []float32
	tmp                     []float32
	kt16                    []uint16 // a row store's keys transposed, in f16
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

// firstKey returns the first position a query at pos attends to.
func (a *attendJob) firstKey(pos int) int {
	if w := a.a.Window; w > 0 && pos-w+1 > 0 {
		return pos - w + 1
	}
	return 0
}

// do computes items [lo, hi); over an f16 cache each item goes to flash.
// Over an f32 cache it gathers the keys and values its tokens see, with
// the keys transposed so that a query's scores are a weighted sum of
// key-element rows. Scores and the weighted sum of values are then
// quant.AddScaledRows calls: every score sums its products in element
// order and every output element its terms in key order, so results do
// not depend on the chunking, and equal a plain loop's on amd64.
func (j *attendJob) do(wk, lo, hi int) {
	s, a, qs, d := j.s, j.a, j.q, j.d
	hd := a.HeadDim
	group := a.Heads / a.KVHeads
	f16 := s.f16 != nil
	qh := grow(j.qh[wk], hd)
	acc := grow(j.acc[wk], hd)
	j.qh[wk], j.acc[wk] = qh, acc
	for _, it := range j.items[lo:hi] {
		sp := &j.spans[it.span]
		if sp.Tree != nil { // tree.go
			if j.tiledMode {
				j.tiledTree(wk, it)
			} else if f16 {
				j.flashTree(wk, it)
			} else {
				j.treeF32(wk, it)
			}
			continue
		}
		if j.tiledMode {
			j.tiled(wk, it)
			continue
		}
		if f16 {
			j.flash(wk, it)
			continue
		}
		kvOff := (it.h0 / group) * hd
		// Keys [k0, k0+nk) cover every token of the item.
		k0 := j.firstKey(sp.Pos + it.i0)
		nk := sp.Pos + it.i1 - k0
		ldk := (nk + 7) &^ 7
		kt := grow(j.kt[wk], hd*ldk)
		vf := grow(j.vf[wk], nk*hd)
		j.kt[wk], j.vf[wk] = kt, vf
		// Eight key rows are transposed together, so that each key
		// element's row gets eight consecutive stores.
		var rows [8][]float32
		for t0 := 0; t0 < nk; t0 += 8 {
			m := min(8, nk-t0)
			for u := range m {
				o := s.offset(sp.Blocks, a.Layer, k0+t0+u) + kvOff
				v := vf[(t0+u)*hd : (t0+u+1)*hd]
				rows[u] = s.f32[o : o+hd]
				copy(v, s.f32[o+s.perLayer:o+s.perLayer+hd])
			}
			if m == 8 {
				r0, r1, r2, r3 := rows[0][:hd], rows[1][:hd], rows[2][:hd], rows[3][:hd]
				r4, r5, r6, r7 := rows[4][:hd], rows[5][:hd], rows[6][:hd], rows[7][:hd]
				for e := range hd {
					c := kt[e*ldk+t0 : e*ldk+t0+8]
					c[0], c[1], c[2], c[3] = r0[e], r1[e], r2[e], r3[e]
					c[4], c[5], c[6], c[7] = r4[e], r5[e], r6[e], r7[e]
				}
				continue
			}
			for u := range m {
				for e, x := range rows[u][:hd] {
					kt[e*ldk+t0+u] = x
				}
			}
		}
		for h := it.h0; h < it.h1; h++ {
			for i := it.i0; i < it.i1; i++ {
				pos := sp.Pos + i
				first := j.firstKey(pos)
				n, off := pos-first+1, first-k0
				row := sp.Row + i
				copy(qh, qs.f32[row*qs.cols+h*hd:row*qs.cols+(h+1)*hd])
				scores := grow(j.scores[wk], n)
				j.scores[wk] = scores
				attendHead(d.f32[row*d.cols+h*hd:row*d.cols+(h+1)*hd], qh, kt[off:], ldk, vf[off*hd:], scores, acc, a.Scale, a.Softcap)
			}
		}
	}
}

// attendHead is one query head's attention over len(scores) keys, the
// f32 cache's arithmetic: the scores q·k (the keys transposed in kt, a
// key a column, rows ldk apart), scaled (and soft-capped), a float32
// softmax whose sum is taken in float64, and the scores' weighted sum of
// the values (v, hd = len(acc) values a key) into dst. Each score sums in
// element order and each output element in key order, so a key's place
// in kt and v does not change the bits. scores and acc are scratch.
func attendHead(dst, q, kt []float32, ldk int, v, scores, acc []float32, scale, softcap float32) {
	clear(scores)
	quant.AddScaledRows(scores, q, kt, ldk)
	maxScore := float32(math.Inf(-1))
	if softcap > 0 {
		for t, dot := range scores {
			sc := softcap * float32(math.Tanh(float64(dot*scale/softcap)))
			scores[t] = sc
			maxScore = max(maxScore, sc)
		}
	} else {
		for t, dot := range scores {
			sc := dot * scale
			scores[t] = sc
			maxScore = max(maxScore, sc)
		}
	}
	for t := range scores {
		scores[t] -= maxScore
	}
	quant.Exp(scores, scores)
	var sum float64
	for _, e := range scores {
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for t := range scores {
		scores[t] *= inv
	}
	clear(acc)
	quant.AddScaledRows(acc, scores, v, len(acc))
	copy(dst, acc)
}

// flash computes item it the way llama.cpp's CPU flash attention computes
// one query row over an f16 cache (quant.FlashKeys): the query rounded to
// f16, each visible key in position order, a block's run at a time, an
// online softmax with glibc-exact expf whose running output is held in
// f16, and a final division by the float32 sum, taken as a multiplication
// by its reciprocal. llama.cpp runs this per-key path for batches of
// fewer than 64 query tokens and every decode step, which is what
// reproducing its tokens needs; from 64 query tokens it switches to a
// tiled float32 path, not reproduced here: taking the per-key path for
// every span keeps a prompt's results independent of how it is batched
// and of how much of it came from the prefix cache. The item's heads
// share one KV head and go through its keys together
// (quant.FlashKeysHeads), each with the arithmetic it would have alone.
func (j *attendJob) flash(wk int, it attendItem) {
	s, a, qs, d := j.s, j.a, j.q, j.d
	hd, bs := a.HeadDim, s.cfg.BlockSize
	sp := &j.spans[it.span]
	kvOff := (it.h0 / (a.Heads / a.KVHeads)) * hd
	nh := it.h1 - it.h0
	q16, acc16 := growHalf(j.q16[wk], nh*hd), growHalf(j.acc16[wk], nh*hd)
	j.q16[wk], j.acc16[wk] = q16, acc16
	st := &j.heads[wk]
	st.N, st.Acc, st.Scale, st.Softcap, st.FP16 = nh, acc16, a.Scale, a.Softcap, j.fp16
	if a.Softcap > 0 {
		st.Scale /= a.Softcap
	}
	for i := it.i0; i < it.i1; i++ {
		pos, row := sp.Pos+i, sp.Row+i
		quant.FloatToHalf(q16, qs.f32[row*qs.cols+it.h0*hd:row*qs.cols+it.h1*hd])
		clear(acc16)
		for h := range nh {
			st.Max[h], st.Sum[h] = float32(math.Inf(-1)), 0
		}
		// The visible keys, a block's run of consecutive rows at a time.
		for t := j.firstKey(pos); t <= pos; {
			m := min(bs-t%bs, pos+1-t)
			k, v, stride := j.kvRows(wk, sp.Blocks, a.Layer, t, m, kvOff)
			quant.FlashKeysHeads(st, q16, k, v, stride, m)
			t += m
		}
		out := d.f32[row*d.cols+it.h0*hd : row*d.cols+it.h1*hd]
		quant.HalfToFloat(out, acc16)
		for h := range nh {
			inv := 1 / st.Sum[h]
			for e := range out[h*hd : (h+1)*hd] {
				out[h*hd+e] *= inv
			}
		}
	}
	st.Acc = nil
}

// growHalf is grow for f16 rows.
func growHalf(buf []uint16, n int) []uint16 {
	if cap(buf) < n {
		return make([]uint16, n, max(n, 2*cap(buf), 64))
	}
	return buf[:n]
}

// tiled computes item it with the tiled float32 flash attention of the
// default mode (quant.FlashTile): the arithmetic of llama.cpp's CPU flash
// attention for batches of 64 query tokens or more, here for every query
// row, decode included. Tiles of quant.FlashTile keys are aligned to
// position 0; a tile is converted to float32 once (keys transposed) for
// all of the item's rows, and each (token, head) row keeps its own running
// maximum, sum and accumulator, so its result does not depend on the
// other rows, the chunking or the batch.
func (j *attendJob) tiled(wk int, it attendItem) {
	s, a, qs := j.s, j.a, j.q
	hd, bs := a.HeadDim, s.cfg.BlockSize
	const tile = quant.FlashTile
	sp := &j.spans[it.span]
	kvOff := (it.h0 / (a.Heads / a.KVHeads)) * hd
	nh, nt := it.h1-it.h0, it.i1-it.i0
	st := &j.tile[wk]
	st.kt, st.vt = grow(st.kt, hd*tile), grow(st.vt, tile*hd)
	st.sc, st.tmp = grow(st.sc, nh*tile), grow(st.tmp, hd)
	st.acc, st.ms, st.ss = grow(st.acc, nt*nh*hd), grow(st.ms, nt*nh), grow(st.ss, nt*nh)
	clear(st.acc)
	for r := range st.ms {
		st.ms[r], st.ss[r] = float32(math.Inf(-1)), 0
	}
	kmin := j.firstKey(sp.Pos + it.i0) // the first key any row sees
	kmax := sp.Pos + it.i1 - 1         // the last
	for t0 := kmin / tile * tile; t0 <= kmax; t0 += tile {
		// The tile's keys [t0, t0+tile) that some row sees, in float32;
		// the others are zero (their scores are masked).
		lo, hi := max(t0, kmin), min(t0+tile-1, kmax)
		if s.kT && s.f16 != nil && t0+2*tile <= kmax {
			j.prefetchTile(sp, kvOff/hd, t0+2*tile, min(t0+3*tile-1, kmax))
		}
		// Value rows outside [lo, hi] are zero, so that a masked key's
		// weight of 0 adds 0; key columns there may hold anything, their
		// scores are masked.
		clear(st.vt[:(lo-t0)*hd])
		clear(st.vt[(hi-t0+1)*hd:])
		for p := lo; p <= hi; {
			m := min(bs-p%bs, hi+1-p)
			j.tileLoad(wk, st, sp.Blocks, p, p-t0, m, kvOff, true)
			p += m
		}
		for i := it.i0; i < it.i1; i++ {
			pos, row := sp.Pos+i, sp.Row+i
			first := j.firstKey(pos)
			if t0 > pos || t0+tile <= first {
				continue // no key of the tile is visible to this token
			}
			vis0, vis1 := max(first, t0)-t0, min(pos, t0+tile-1)-t0 // visible columns
			j.tileRow(st, qs.f32[row*qs.cols+it.h0*hd:], (i-it.i0)*nh, nh, vis0, vis1)
		}
	}
	for i := it.i0; i < it.i1; i++ {
		j.tileOut(st, sp.Row+i, (i-it.i0)*nh, it)
	}
}

// prefetchTile starts loading the keys and values of KV head h at
// positions [lo, hi] into the caches; tiled asks for the tile after next.
// A long context's cache is read a head's 2 KiB run per block and layer,
// each block a whole block's bytes (every layer's) from the previous one,
// which the hardware prefetchers do not follow: the 1B shape's Q4_0 decode
// at 8192 positions ran 20.6 t/s without, 21.7-21.8 with (the next tile
// only: 20.7-21.5), the 0.5B shape's 45.5-45.7 and 46.9-47.6.
func (j *attendJob) prefetchTile(sp *compute.Span, h, lo, hi int) {
	s, a := j.s, j.a
	hd, bs := a.HeadDim, s.cfg.BlockSize
	for p := lo - lo%bs; p <= hi; p += bs {
		k := s.kHead(sp.Blocks, a.Layer, p, h)
		quant.Prefetch(s.f16[k : k+hd*bs])
		v, _ := s.vRow(sp.Blocks, a.Layer, p, h)
		quant.Prefetch(s.f16[v : v+hd*bs])
	}
}

// tileRow adds the keys and values of the tile in st to the running
// softmax of one query token's nh heads q (rows r0.. of st's state), with
// the tile's columns [vis0, vis1] visible.
func (j *attendJob) tileRow(st *tileState, q []float32, r0, nh, vis0, vis1 int) {
	a := j.a
	hd := a.HeadDim
	const tile = quant.FlashTile
	scale := a.Scale
	if a.Softcap > 0 {
		scale /= a.Softcap
	}
	sc := st.sc[:nh*tile]
	quant.FlashScores(sc, q, hd, st.kt, hd, nh)
	for h := range nh {
		x := sc[h*tile : (h+1)*tile]
		var mt float32
		if a.Softcap > 0 {
			for c := range x {
				x[c] = a.Softcap * float32(math.Tanh(float64(x[c]*scale)))
			}
			mt = quant.FlashScaleMask(x, 1, vis0, vis1)
		} else {
			mt = quant.FlashScaleMask(x, scale, vis0, vis1)
		}
		r := r0 + h
		mold := st.ms[r]
		mnew := max(mold, mt)
		if mnew > mold {
			ms := quant.Expf(mold - mnew)
			quant.FlashRescale(st.acc[r*hd:(r+1)*hd], ms)
			st.ss[r] *= ms
		}
		st.ms[r] = mnew
		st.ss[r] = float32(float64(st.ss[r]) + quant.FlashSoftmax(x, mnew))
	}
	quant.FlashPV(st.acc[r0*hd:], hd, sc, st.vt, hd, nh)
}

// tileOut writes the normalized output of the heads of item it for the
// token at output row row from st's state rows r0...
func (j *attendJob) tileOut(st *tileState, row, r0 int, it attendItem) {
	d, hd := j.d, j.a.HeadDim
	out := d.f32[row*d.cols+it.h0*hd : row*d.cols+it.h1*hd]
	for h := range it.h1 - it.h0 {
		r := r0 + h
		inv := float32(0)
		if st.ss[r] != 0 {
			inv = 1 / st.ss[r]
		}
		o, acc := out[h*hd:(h+1)*hd], st.acc[r*hd:(r+1)*hd]
		for e := range o {
			o[e] = acc[e] * inv
		}
	}
}

package quant

import "math"

// The functions here are the arithmetic of llama.cpp's CPU flash attention
// over an f16 KV cache, step for step: a query (rounded to f16) times a
// key in the order of ggml_vec_dot_f16, and an output accumulator held in
// f16 that every key's value is fused-multiply-added into and rounded
// back. Reproducing llama.cpp's greedy tokens needs this rounding; the
// rest of the attention (online softmax with expf) is in the caller.

// HalfDotLanes is the vector width, in float32 lanes, whose summation
// order DotHalf follows: 16 where llama.cpp's CPU backend would use
// AVX-512, 8 for AVX/AVX2 (and, here, every other architecture).
func HalfDotLanes() int { return halfDotLanes }

// DotHalf returns the dot product of the f16 vectors x and y (equal
// lengths) rounded as ggml_vec_dot_f16 rounds it with HalfDotLanes lanes:
// four accumulators of that many lanes take fused multiply-adds over
// blocks of 4·lanes elements, are added pairwise and then across lanes,
// and the elements past the last full block are added in float64.
func DotHalf(x, y []uint16) float32 {
	y = y[:len(x)]
	lanes := halfDotLanes
	step := 4 * lanes
	np := len(x) &^ (step - 1)
	if res, ok := dotHalfVector(x, y, np); ok && lanes == 16 {
		sum := float64(res)
		for i := np; i < len(x); i++ {
			sum += float64(halfTable[x[i]] * halfTable[y[i]])
		}
		return float32(sum)
	}
	var acc [4][16]float32
	for i := 0; i < np; i += step {
		for j := range 4 {
			a := &acc[j]
			xs, ys := x[i+j*lanes:i+(j+1)*lanes], y[i+j*lanes:i+(j+1)*lanes]
			for l := range lanes {
				a[l] = fma32(halfTable[xs[l]], halfTable[ys[l]], a[l])
			}
		}
	}
	for l := range lanes {
		acc[0][l] += acc[2][l]
		acc[1][l] += acc[3][l]
		acc[0][l] += acc[1][l]
	}
	a := &acc[0]
	var res float32
	if lanes == 16 {
		// _mm512_reduce_add_ps: halves of 8, then of 4, then pairs.
		var t [8]float32
		for l := range 8 {
			t[l] = a[8+l] + a[l]
		}
		t0, t1, t2, t3 := t[4]+t[0], t[5]+t[1], t[6]+t[2], t[7]+t[3]
		res = (t0 + t2) + (t1 + t3)
	} else {
		// Halves of 4, then two horizontal adds.
		t0, t1, t2, t3 := a[0]+a[4], a[1]+a[5], a[2]+a[6], a[3]+a[7]
		res = (t0 + t1) + (t2 + t3)
	}
	sum := float64(res)
	for i := np; i < len(x); i++ {
		sum += float64(halfTable[x[i]] * halfTable[y[i]])
	}
	return float32(sum)
}

// ScaleHalf multiplies the f16 values of y by v in place, rounding each
// product to f16 (ggml_vec_scale_f16).
func ScaleHalf(y []uint16, v float32) {
	for i := scaleHalfVector(y, v); i < len(y); i++ {
		y[i] = FP32ToFP16(halfTable[y[i]] * v)
	}
}

// MadHalf adds x·v to the f16 values of y in place with one rounding to
// f16 per element after a fused multiply-add (ggml_vec_mad_f16).
func MadHalf(y, x []uint16, v float32) {
	x = x[:len(y)]
	for i := madHalfVector(y, x, v); i < len(y); i++ {
		y[i] = FP32ToFP16(fma32(halfTable[x[i]], v, halfTable[y[i]]))
	}
}

// FlashState is one query row's running state in FlashKeys: the largest
// score so far, the sum of the exponentials, and the output accumulator
// in f16. Reset it (Max = -Inf, Sum = 0, Acc zeroed) before the row's
// first key.
type FlashState struct {
	Max, Sum float32
	Acc      []uint16
	// Scale multiplies every dot product; Softcap, when positive, is
	// llama.cpp's logit soft-capping (Scale then already divided by it).
	Scale, Softcap float32
	// FP16 takes the f16 arithmetic of a llama.cpp build for AVX512-FP16
	// (DotHalfFP16, ScaleHalfFP16, MadHalfFP16) instead of DotHalf's.
	FP16 bool

	scratch [3 * flashChunk]float32 // scores and exponentials of a chunk of keys
}

// FlashKeys runs the per-key step of llama.cpp's CPU flash attention for
// n keys and values stored stride elements apart (k[i·stride:],
// v[i·stride:]), in order, for the f16 query q: the score q·k (DotHalf)
// times Scale, then, when it is a new maximum, the accumulator scaled by
// expf(old max − score) (ScaleHalf), else the value weighted by
// expf(score − max); the value is fused-multiply-added into the f16
// accumulator (MadHalf) and the sum updated without fusing (as llama.cpp's
// compiler leaves it).
func FlashKeys(st *FlashState, q, k, v []uint16, stride, n int) {
	if st.FP16 {
		flashKeysFP16(st, q, k, v, stride, n)
		return
	}
	hd := len(q)
	acc := st.Acc[:hd]
	fast := hasFlashAVX512 && halfDotLanes == 16 && hd > 0 && hd%64 == 0
	if n > 0 {
		_, _ = k[(n-1)*stride+hd-1], v[(n-1)*stride+hd-1]
	}
	if fast {
		flashKeysChunked(st, q, k, v, stride, n)
		return
	}
	for i := range n {
		kr, vr := k[i*stride:i*stride+hd], v[i*stride:i*stride+hd]
		var sc float32
		if fast {
			sc = dotHalf64(hd, &kr[0], &q[0])
		} else {
			sc = DotHalf(kr, q)
		}
		sc *= st.Scale
		if st.Softcap > 0 {
			sc = st.Softcap * float32(math.Tanh(float64(sc)))
		}
		ms, vs := float32(1), float32(1)
		if sc > st.Max {
			ms = Expf(st.Max - sc)
			st.Max = sc
			if fast {
				scaleHalf16(hd, &acc[0], ms)
			} else {
				ScaleHalf(acc, ms)
			}
		} else {
			vs = Expf(sc - st.Max)
		}
		if fast {
			madHalf16(hd, &acc[0], &vr[0], vs)
		} else {
			MadHalf(acc, vr, vs)
		}
		st.Sum = float32(st.Sum*ms) + vs
	}
}

// flashChunk is how many keys flashKeysChunked takes per pass.
const flashChunk = 64

// flashKeysChunked is FlashKeys with AVX-512, in three passes over up to
// flashChunk keys: the scores (independent of each other), then the
// running maximum, the two exponentials and the sum in key order, then
// every value into the accumulator with flashMad64, which keeps it in
// registers across the keys. The arithmetic is FlashKeys' step for step.
func flashKeysChunked(st *FlashState, q, k, v []uint16, stride, n int) {
	hd := len(q)
	sc, ms, vs := st.scratch[:flashChunk], st.scratch[flashChunk:2*flashChunk], st.scratch[2*flashChunk:]
	mx, sum := st.Max, st.Sum
	for c := 0; c < n; c += flashChunk {
		cnt := min(flashChunk, n-c)
		dotHalf64Keys(hd, &k[c*stride], stride, &q[0], cnt, st.Scale, &sc[0])
		if st.Softcap > 0 {
			for i, s := range sc[:cnt] {
				sc[i] = st.Softcap * float32(math.Tanh(float64(s)))
			}
		}
		for i, s := range sc[:cnt] {
			m, w := float32(1), float32(1)
			if s > mx {
				m = Expf(mx - s)
				mx = s
			} else {
				w = Expf(s - mx)
			}
			ms[i], vs[i] = m, w
			sum = float32(sum*m) + w
		}
		flashMad64(hd, &st.Acc[0], &v[c*stride], stride, &ms[0], &vs[0], cnt)
	}
	st.Max, st.Sum = mx, sum
}

// FlashMaxHeads is the most query heads FlashKeysHeads takes at once.
const FlashMaxHeads = 4

// FlashHeads is the running state of N query heads (1 ≤ N ≤
// FlashMaxHeads) that read one KV head, each as a FlashState: head h's
// largest score Max[h], sum Sum[h] and f16 accumulator Acc[h·hd:(h+1)·hd].
// Reset it (Max = -Inf, Sum = 0, Acc zeroed) before the first key.
type FlashHeads struct {
	N        int
	Max, Sum [FlashMaxHeads]float32
	Acc      []uint16
	// Scale, Softcap and FP16 are as in FlashState.
	Scale, Softcap float32
	FP16           bool

	sc, ms, vs [FlashMaxHeads][flashChunk]float32 // per head: scores, then the two exponentials
}

// FlashKeysHeads runs FlashKeys for each of st's heads, head h with the
// query q[h·hd:(h+1)·hd], over the same n keys and values: every head's
// arithmetic is FlashKeys' step for step, so the results are the same bits
// as N calls of it. With AVX-512 the heads go through the keys together:
// each key and value is converted once for all of them, and the heads'
// accumulators, each a chain of dependent roundings, are updated side by
// side instead of one chain at a time.
func FlashKeysHeads(st *FlashHeads, q, k, v []uint16, stride, n int) {
	heads := st.N
	if heads < 1 || heads > FlashMaxHeads {
		panic("quant: FlashKeysHeads with a bad head count")
	}
	hd := len(q) / heads
	acc := st.Acc[:heads*hd]
	if n > 0 {
		_, _ = k[(n-1)*stride+hd-1], v[(n-1)*stride+hd-1]
	}
	if st.FP16 || !hasFlashAVX512 || halfDotLanes != 16 || hd == 0 || hd%64 != 0 {
		for h := range heads {
			one := FlashState{Max: st.Max[h], Sum: st.Sum[h], Acc: acc[h*hd : (h+1)*hd], Scale: st.Scale, Softcap: st.Softcap, FP16: st.FP16}
			FlashKeys(&one, q[h*hd:(h+1)*hd], k, v, stride, n)
			st.Max[h], st.Sum[h] = one.Max, one.Sum
		}
		return
	}
	for c := 0; c < n; c += flashChunk {
		cnt := min(flashChunk, n-c)
		dotHalf64KeysHeads(hd, &k[c*stride], stride, &q[0], heads, cnt, st.Scale, &st.sc[0][0])
		for h := range heads {
			sc, ms, vs := st.sc[h][:cnt], st.ms[h][:cnt], st.vs[h][:cnt]
			if st.Softcap > 0 {
				for i, s := range sc {
					sc[i] = st.Softcap * float32(math.Tanh(float64(s)))
				}
			}
			mx, sum := st.Max[h], st.Sum[h]
			for i, s := range sc {
				m, w := float32(1), float32(1)
				if s > mx {
					m = Expf(mx - s)
					mx = s
				} else {
					w = Expf(s - mx)
				}
				ms[i], vs[i] = m, w
				sum = float32(sum*m) + w
			}
			st.Max[h], st.Sum[h] = mx, sum
		}
		flashMad64Heads(hd, &acc[0], &v[c*stride], stride, &st.ms[0][0], &st.vs[0][0], cnt, heads)
	}
}

package model

import (
	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/lora"
)

// loraGroup is one adapter used by some rows of the current batch: its
// delta B·(A·x) is computed once for all of them.
type loraGroup struct {
	ad     *lora.Adapter
	rows   []int32   // batch rows using the adapter
	scales []float32 // user scale of each row
	all    bool      // rows is 0..n-1: x needs no gathering
}

// loraState is the per-forward LoRA plan and its scratch tensors.
type loraState struct {
	groups []loraGroup
	scales []float32                 // per-row scales × the pair's alpha/rank
	bufs   map[[3]int]compute.Tensor // scratch by (slot, rows, cols)
}

// prepareLoRA groups the rows of batch by adapter; with no adapters the
// plan is empty and matmul adds nothing.
func (m *base) prepareLoRA(batch *Batch) {
	st := &m.lora
	st.groups = st.groups[:0]
	if batch.Adapters == nil {
		return
	}
	for i, sp := range batch.Spans {
		if i >= len(batch.Adapters) {
			break
		}
		for _, ap := range batch.Adapters[i] {
			if ap.Adapter == nil || ap.Scale == 0 {
				continue
			}
			g := st.group(ap.Adapter)
			for r := sp.Row; r < sp.Row+sp.N; r++ {
				g.rows = append(g.rows, int32(r))
				g.scales = append(g.scales, ap.Scale)
			}
		}
	}
	for i := range st.groups {
		g := &st.groups[i]
		g.all = len(g.rows) == len(batch.Tokens)
		for j, r := range g.rows {
			if int(r) != j {
				g.all = false
				break
			}
		}
	}
}

// group returns the group of adapter a, adding it when new; the slices of
// a reused slot keep their capacity.
func (st *loraState) group(a *lora.Adapter) *loraGroup {
	for i := range st.groups {
		if st.groups[i].ad == a {
			return &st.groups[i]
		}
	}
	if len(st.groups) < cap(st.groups) {
		st.groups = st.groups[:len(st.groups)+1]
		g := &st.groups[len(st.groups)-1]
		g.ad, g.rows, g.scales = a, g.rows[:0], g.scales[:0]
		return g
	}
	st.groups = append(st.groups, loraGroup{ad: a})
	return &st.groups[len(st.groups)-1]
}

// buf returns a scratch tensor for slot (0: gathered x, 1: A·x, 2: B·A·x).
func (m *base) loraBuf(slot, rows, cols int) compute.Tensor {
	st := &m.lora
	if st.bufs == nil || len(st.bufs) > 64 {
		st.bufs = map[[3]int]compute.Tensor{}
	}
	k := [3]int{slot, rows, cols}
	t := st.bufs[k]
	if t == nil {
		t = m.b.New(rows, cols)
		st.bufs[k] = t
	}
	return t
}

// matmul sets dst = x·wᵀ and adds the deltas of the adapters that target
// the weight called name, on the rows that use them.
func (m *base) matmul(dst, x, w compute.Tensor, name string) {
	m.b.MatMul(dst, x, w)
	m.addLoRA(dst, x, name)
}

// matmuls is matmul for the first n (2 or 3) weights of ws, all
// multiplying x, in one backend call where the backend fuses them
// (compute.MultiMatMuler): one parallel loop instead of n.
func (m *base) matmuls(x compute.Tensor, dsts, ws [3]compute.Tensor, names [3]string, n int) {
	if mm, ok := m.b.(compute.MultiMatMuler); ok {
		m.mmDst, m.mmW = dsts, ws
		mm.MatMulMulti(m.mmDst[:n], x, m.mmW[:n])
		m.mmDst, m.mmW = [3]compute.Tensor{}, [3]compute.Tensor{}
	} else {
		for i := range n {
			m.b.MatMul(dsts[i], x, ws[i])
		}
	}
	for i := range n {
		m.addLoRA(dsts[i], x, names[i])
	}
}

// addLoRA adds to dst = x·wᵀ the deltas of the adapters that target the
// weight called name, on the rows that use them.
func (m *base) addLoRA(dst, x compute.Tensor, name string) {
	if len(m.lora.groups) == 0 || name == "" {
		return
	}
	b, st := m.b, &m.lora
	for i := range st.groups {
		g := &st.groups[i]
		p := g.ad.Targets[name]
		if p == nil || p.A == nil {
			continue
		}
		n := len(g.rows)
		in := x
		if !g.all {
			in = m.loraBuf(0, n, x.Cols())
			b.GetRows(in, x, g.rows)
		}
		ax := m.loraBuf(1, n, p.Rank)
		b.MatMul(ax, in, p.A)
		bax := m.loraBuf(2, n, p.Out)
		b.MatMul(bax, ax, p.B)
		st.scales = st.scales[:0]
		for _, s := range g.scales {
			st.scales = append(st.scales, s*p.Scale)
		}
		b.AddRowsScaled(dst, bax, g.rows, st.scales)
	}
}

package lora

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/quant"
	"github.com/ruvllm/ruvllm/engine/testmodel"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in    string
		path  string
		scale float32
		ok    bool
	}{
		{"a.gguf", "a.gguf", 1, true},
		{"a.gguf:0.5", "a.gguf", 0.5, true},
		{"dir/x:y.gguf", "dir/x:y.gguf", 1, true},
		{"a.gguf:-2", "a.gguf", -2, true},
		{"a.gguf:NaN", "", 0, false},
		{"", "", 0, false},
	} {
		s, err := ParseSpec(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (s.Path != tc.path || s.Scale != tc.scale)) {
			t.Errorf("ParseSpec(%q) = %+v, %v", tc.in, s, err)
		}
	}
}

// TestMergeFileRequantizes merges into a Q8_0 base: adapted tensors keep
// Q8_0 and equal W + scale·B·A within Q8_0 rounding, other tensors are
// byte-identical, metadata is copied.
func TestMergeFileRequantizes(t *testing.T) {
	dir := t.TempDir()
	basePath, adPath, out := filepath.Join(dir, "base.gguf"), filepath.Join(dir, "ad.gguf"), filepath.Join(dir, "merged.gguf")
	o := testmodel.DefaultOptions()
	o.Type = quant.Q8_0
	if err := testmodel.Write(context.Background(), o, basePath); err != nil {
		t.Fatal(err)
	}
	base, err := gguf.Open(basePath)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	w, err := Random(base, RandomOptions{Rank: 4, Alpha: 2, Seed: 1, Kinds: []string{"attn_v"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(adPath); err != nil {
		t.Fatal(err)
	}
	if err := MergeFile(context.Background(), basePath, []Spec{{Path: adPath, Scale: 0.5}}, out); err != nil {
		t.Fatal(err)
	}
	m, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(m.Tensors) != len(base.Tensors) || m.Architecture() != "llama" {
		t.Fatalf("%d tensors, arch %q", len(m.Tensors), m.Architecture())
	}
	if v, ok := m.Strings("ruvllm.merged_adapters"); !ok || len(v) != 1 {
		t.Fatalf("merged_adapters = %v", v)
	}
	a, err := Load(adPath, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, bt := range base.Tensors {
		mt, _ := m.Tensor(bt.Name)
		if mt.Type != bt.Type {
			t.Fatalf("%s: type %s, base %s", bt.Name, mt.Type, bt.Type)
		}
		bd, _ := base.TensorData(bt.Name)
		md, _ := m.TensorData(bt.Name)
		p := a.Targets[bt.Name[:max(0, len(bt.Name)-len(".weight"))]]
		if p == nil {
			if string(bd) != string(md) {
				t.Fatalf("%s changed though not adapted", bt.Name)
			}
			continue
		}
		in, rows := int(bt.Shape[0]), int(bt.Shape[1])
		wv := make([]float32, in*rows)
		mv := make([]float32, in*rows)
		quant.Dequantize(bt.Type, bd, wv)
		quant.Dequantize(bt.Type, md, mv)
		av, _ := p.HostA.Floats()
		bv, _ := p.HostB.Floats()
		var maxErr, maxDelta float64
		for o := 0; o < rows; o++ {
			for j := 0; j < in; j++ {
				var d float64
				for r := 0; r < p.Rank; r++ {
					d += float64(bv[o*p.Rank+r]) * float64(av[r*in+j])
				}
				d *= 0.5 * float64(p.Scale)
				want := float64(wv[o*in+j]) + d
				maxErr = max(maxErr, math.Abs(float64(mv[o*in+j])-want))
				maxDelta = max(maxDelta, math.Abs(d))
			}
		}
		// Q8_0 rounds to 1/127 of each block's largest magnitude.
		if maxErr > 0.01 || maxDelta < 0.01 {
			t.Fatalf("%s: max error %g, max delta %g", bt.Name, maxErr, maxDelta)
		}
	}
}

// TestMergeFileRefusesItsInputs: -o naming the base model (or an adapter),
// by the same path, another spelling or a hard link, is refused and the
// file is left as it was; `ruvllm adapter merge -m B -a A -o B` replaced
// the base model with the merged one.
func TestMergeFileRefusesItsInputs(t *testing.T) {
	dir := t.TempDir()
	basePath, adPath := filepath.Join(dir, "base.gguf"), filepath.Join(dir, "ad.gguf")
	o := testmodel.DefaultOptions()
	o.Type = quant.Q8_0
	if err := testmodel.Write(context.Background(), o, basePath); err != nil {
		t.Fatal(err)
	}
	base, err := gguf.Open(basePath)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Random(base, RandomOptions{Rank: 4, Seed: 1, Kinds: []string{"attn_v"}})
	base.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(adPath); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.gguf")
	if err := os.Link(basePath, link); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(basePath)
	beforeAd, _ := os.ReadFile(adPath)
	for _, out := range []string{basePath, filepath.Join(dir, ".", "base.gguf"), link, adPath} {
		err := MergeFile(context.Background(), basePath, []Spec{{Path: adPath, Scale: 1}}, out)
		if err == nil || !strings.Contains(err.Error(), "another file") {
			t.Errorf("-o %s: err %v, want a refusal", out, err)
		}
	}
	if after, _ := os.ReadFile(basePath); !bytes.Equal(after, before) {
		t.Error("the base model was overwritten")
	}
	if after, _ := os.ReadFile(adPath); !bytes.Equal(after, beforeAd) {
		t.Error("the adapter was overwritten")
	}
}

// TestMergeRefusesOverflow: an adapter whose scaled delta makes a weight
// beyond what the base's type holds (past float32, or past Q8_0's F16
// block scale) is refused with the weight named. The merged model was
// written with ±Inf weights and answered every request with nothing.
func TestMergeRefusesOverflow(t *testing.T) {
	dir := t.TempDir()
	basePath, adPath := filepath.Join(dir, "base.gguf"), filepath.Join(dir, "ad.gguf")
	o := testmodel.DefaultOptions()
	o.Type = quant.Q8_0
	if err := testmodel.Write(context.Background(), o, basePath); err != nil {
		t.Fatal(err)
	}
	base, err := gguf.Open(basePath)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Random(base, RandomOptions{Rank: 4, Alpha: 4, Seed: 1, Kinds: []string{"attn_v"}})
	base.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(adPath); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scale float32
		ok    bool
	}{
		{1, true},
		{1e12, false}, // finite in float32, past Q8_0's F16 scales
		{3e38, false}, // past float32
	} {
		out := filepath.Join(dir, "merged.gguf")
		err := MergeFile(context.Background(), basePath, []Spec{{Path: adPath, Scale: tc.scale}}, out)
		if tc.ok {
			if err != nil {
				t.Errorf("scale %g: %v", tc.scale, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "attn_v.weight") {
			t.Errorf("scale %g: err = %v, want a refusal naming the weight", tc.scale, err)
		}
	}
}

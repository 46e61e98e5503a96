package lora

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/safetensors"
)

// PEFT file names inside an adapter directory.
const (
	PEFTConfig  = "adapter_config.json"
	PEFTWeights = "adapter_model.safetensors"
)

// maxPEFTBytes bounds the safetensors file read into memory.
const maxPEFTBytes = 8 << 30

// PEFTConfigFile is the subset of PEFT's adapter_config.json that matters here.
type PEFTConfigFile struct {
	PEFTType      string             `json:"peft_type"`
	R             int                `json:"r"`
	Alpha         float64            `json:"lora_alpha"`
	TargetModules json.RawMessage    `json:"target_modules"`
	UseRSLoRA     bool               `json:"use_rslora"`
	FanInFanOut   bool               `json:"fan_in_fan_out"`
	AlphaPattern  map[string]float64 `json:"alpha_pattern"`
	BaseModel     string             `json:"base_model_name_or_path"`
	// Refused when set: per-module ranks, DoRA's magnitude vectors and
	// layer replication change the model in ways the pairs alone do not
	// carry (they were accepted and ignored).
	RankPattern      map[string]int  `json:"rank_pattern"`
	UseDoRA          bool            `json:"use_dora"`
	LayerReplication json.RawMessage `json:"layer_replication"`
}

// hfModules maps Hugging Face module paths inside a decoder layer to GGUF
// weight kinds, for llama-style models (llama, mistral, qwen2, gemma2).
var hfModules = map[string]string{
	"self_attn.q_proj": "attn_q",
	"self_attn.k_proj": "attn_k",
	"self_attn.v_proj": "attn_v",
	"self_attn.o_proj": "attn_output",
	"mlp.gate_proj":    "ffn_gate",
	"mlp.up_proj":      "ffn_up",
	"mlp.down_proj":    "ffn_down",
}

// LoadPEFT reads a PEFT LoRA directory (adapter_config.json and
// adapter_model.safetensors) for the base model base, which is required:
// module names are mapped to GGUF names, and for the llama architecture the
// output rows of q and k deltas are permuted the way llama.cpp's converter
// permutes the base q and k weights. The adapter is validated against base
// and placed on b when b is non-nil.
func LoadPEFT(dir string, base *gguf.File, b compute.Backend) (*Adapter, error) {
	if base == nil {
		return nil, errors.New("load PEFT adapter: a base model is required to map its module names")
	}
	raw, err := readPEFTConfig(filepath.Join(dir, PEFTConfig))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: no %s in %s", ErrNotAdapter, PEFTConfig, dir)
		}
		return nil, err
	}
	var cfg PEFTConfigFile
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%w: %s is not valid JSON (%s)", ErrMalformed, PEFTConfig, safetensors.JSONProblem(err))
	}
	if cfg.PEFTType != "" && !strings.EqualFold(cfg.PEFTType, "LORA") {
		return nil, fmt.Errorf("%w: peft_type is %q", ErrNotAdapter, cfg.PEFTType)
	}
	if cfg.FanInFanOut {
		return nil, fmt.Errorf("%w: fan_in_fan_out adapters (Conv1D layers)", ErrUnsupportedTarget)
	}
	if len(cfg.AlphaPattern) > 0 {
		return nil, fmt.Errorf("%w: per-module alpha_pattern is not supported", ErrMalformed)
	}
	if len(cfg.RankPattern) > 0 {
		return nil, fmt.Errorf("%w: per-module rank_pattern is not supported", ErrMalformed)
	}
	if cfg.UseDoRA {
		return nil, fmt.Errorf("%w: DoRA adapters (use_dora) are not supported", ErrMalformed)
	}
	if s := strings.TrimSpace(string(cfg.LayerReplication)); s != "" && s != "null" {
		return nil, fmt.Errorf("%w: layer_replication is not supported", ErrMalformed)
	}
	if cfg.R <= 0 || cfg.Alpha < 0 || math.IsNaN(cfg.Alpha) || math.IsInf(cfg.Alpha, 0) {
		return nil, fmt.Errorf("%w: r = %d, lora_alpha = %v", ErrMalformed, cfg.R, cfg.Alpha)
	}
	st, err := safetensors.ReadFile(filepath.Join(dir, PEFTWeights), maxPEFTBytes)
	if err != nil {
		return nil, err
	}
	return fromPEFT(cfg, st, base, b)
}

// maxPEFTConfigBytes bounds adapter_config.json, a few hundred bytes in
// practice: the whole file was read and decoded, so one of gigabytes (a
// long string in it) took twice its size in memory at every load.
const maxPEFTConfigBytes = 1 << 20

// readPEFTConfig reads the config at path, refusing one over
// maxPEFTConfigBytes before reading it.
func readPEFTConfig(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxPEFTConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(raw) > maxPEFTConfigBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d KiB", ErrMalformed, PEFTConfig, maxPEFTConfigBytes>>10)
	}
	return raw, nil
}

// fromPEFT builds the adapter from a parsed config and weights file.
func fromPEFT(cfg PEFTConfigFile, st *safetensors.File, base *gguf.File, b compute.Backend) (*Adapter, error) {
	arch := base.Architecture()
	a := &Adapter{Arch: arch, Targets: map[string]*Pair{}, Format: "peft"}
	// The engine scales a pair by alpha/rank; rsLoRA scales by
	// alpha/sqrt(r), which is the same as an alpha of alpha·sqrt(r).
	alpha := cfg.Alpha
	if cfg.UseRSLoRA {
		alpha *= math.Sqrt(float64(cfg.R))
	}
	a.Alpha = float32(alpha)
	for _, t := range st.Tensors {
		key, isA, err := peftName(t.Name)
		if err != nil {
			return nil, err
		}
		if len(t.Shape) != 2 {
			return nil, fmt.Errorf("%w: tensor %s has shape %v, want 2 dimensions", ErrMalformed, t.Name, t.Shape)
		}
		// A dimension of 0 holds no data whatever the other is, so the
		// file bounds neither: a lora_B of [6·2^40, 0] held the row
		// permutation below in a loop of trillions of steps (and a
		// dimension past MaxInt became a negative int).
		if t.Shape[0] == 0 || t.Shape[1] == 0 {
			return nil, fmt.Errorf("%w: tensor %s has shape %v: an empty matrix", ErrMalformed, t.Name, t.Shape)
		}
		v, err := st.Floats(t.Name)
		if err != nil {
			return nil, err
		}
		rows, cols := int(t.Shape[0]), int(t.Shape[1])
		p := a.Targets[key]
		if p == nil {
			p = &Pair{}
			a.Targets[key] = p
		}
		if isA {
			if p.HostA.Data != nil {
				return nil, fmt.Errorf("%w: %s: two lora_A tensors", ErrMalformed, key)
			}
			p.HostA, p.In = f32Matrix(rows, cols, v), cols
			continue
		}
		if p.HostB.Data != nil {
			return nil, fmt.Errorf("%w: %s: two lora_B tensors", ErrMalformed, key)
		}
		if arch == "llama" {
			_, kind := splitKey(key)
			heads := 0
			switch kind {
			case "attn_q":
				heads = archInt(base, "attention.head_count", 0)
			case "attn_k":
				heads = archInt(base, "attention.head_count_kv", archInt(base, "attention.head_count", 0))
			}
			if heads > 0 {
				if err := permuteRows(v, rows, cols, heads); err != nil {
					return nil, fmt.Errorf("%s: %w", t.Name, err)
				}
			}
		}
		p.HostB, p.Out = f32Matrix(rows, cols, v), rows
	}
	for _, name := range a.Names() {
		p := a.Targets[name]
		if p.HostA.Data == nil || p.HostB.Data == nil {
			return nil, fmt.Errorf("%w: %s is missing its lora_A or lora_B", ErrMalformed, name)
		}
		// The scale is alpha over the pairs' rank, which PEFT takes from
		// r: a pair of another rank would be scaled otherwise than trained
		// (and an absurd r made rsLoRA's alpha·sqrt(r) overflow to NaN).
		if p.HostA.Rows != cfg.R {
			return nil, fmt.Errorf("%w: %s has rank %d, but the config's r is %d", ErrMalformed, name, p.HostA.Rows, cfg.R)
		}
	}
	return a.complete(base, b)
}

func archInt(f *gguf.File, suffix string, def int) int {
	if v, ok := f.ArchUint(suffix); ok && v < math.MaxInt32 {
		return int(v)
	}
	return def
}

// peftName maps "base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight"
// to ("blk.N.attn_q", true).
func peftName(name string) (key string, isA bool, err error) {
	s := strings.TrimPrefix(name, "base_model.model.")
	rest, ok := strings.CutPrefix(s, "model.layers.")
	if !ok {
		return "", false, fmt.Errorf("%w: tensor %s is not inside a decoder layer", ErrUnsupportedTarget, name)
	}
	num, rest, ok := strings.Cut(rest, ".")
	layer, perr := strconv.Atoi(num)
	if !ok || perr != nil || layer < 0 || layer > 1<<20 {
		return "", false, fmt.Errorf("%w: tensor %s: bad layer number", ErrMalformed, name)
	}
	var module string
	switch {
	case strings.HasSuffix(rest, ".lora_A.weight"):
		module, isA = strings.TrimSuffix(rest, ".lora_A.weight"), true
	case strings.HasSuffix(rest, ".lora_B.weight"):
		module = strings.TrimSuffix(rest, ".lora_B.weight")
	default:
		return "", false, fmt.Errorf("%w: tensor %s is not a lora_A/lora_B weight", ErrUnsupportedTarget, name)
	}
	kind, ok := hfModules[module]
	if !ok {
		return "", false, fmt.Errorf("%w: module %s of tensor %s", ErrUnsupportedTarget, module, name)
	}
	return Key(layer, kind), isA, nil
}

// permuteRows reorders the rows of a rows×cols matrix the way llama.cpp's
// converter reorders llama q/k projections: within each head, the rows of
// the first half and the second half are interleaved (row h·d + j·d/2 + i
// moves to h·d + 2i + j), turning HF's rotate-half layout into GGML's
// adjacent-pair layout.
func permuteRows(v []float32, rows, cols, heads int) error {
	if heads <= 0 || rows%heads != 0 || (rows/heads)%2 != 0 {
		return fmt.Errorf("%w: %d rows do not split into %d heads of even size", ErrMismatch, rows, heads)
	}
	d := rows / heads
	src := append([]float32(nil), v...)
	for h := 0; h < heads; h++ {
		for j := 0; j < 2; j++ {
			for i := 0; i < d/2; i++ {
				from, to := h*d+j*d/2+i, h*d+2*i+j
				copy(v[to*cols:(to+1)*cols], src[from*cols:(from+1)*cols])
			}
		}
	}
	return nil
}

// ExportPEFT writes a as a PEFT directory (adapter_config.json and
// adapter_model.safetensors, F32, Hugging Face module names and layout),
// undoing the llama q/k row permutation; base gives the head counts.
func ExportPEFT(a *Adapter, base *gguf.File, dir string) error {
	kinds := map[string]string{}
	for hf, kind := range hfModules {
		kinds[kind] = hf
	}
	var names []string
	var shapes [][]uint64
	var values [][]float32
	var modules []string
	seen := map[string]bool{}
	for _, key := range a.Names() {
		p := a.Targets[key]
		layer, kind := splitKey(key)
		hf, ok := kinds[kind]
		if layer < 0 || !ok {
			return fmt.Errorf("%w: %s has no PEFT name", ErrUnsupportedTarget, key)
		}
		av, err := p.HostA.Floats()
		if err != nil {
			return err
		}
		bv, err := p.HostB.Floats()
		if err != nil {
			return err
		}
		if a.Arch == "llama" && (kind == "attn_q" || kind == "attn_k") {
			heads := archInt(base, "attention.head_count", 0)
			if kind == "attn_k" {
				heads = archInt(base, "attention.head_count_kv", heads)
			}
			if bv, err = unpermuteRows(bv, p.Out, p.Rank, heads); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
		prefix := fmt.Sprintf("base_model.model.model.layers.%d.%s", layer, hf)
		names = append(names, prefix+".lora_A.weight", prefix+".lora_B.weight")
		shapes = append(shapes, []uint64{uint64(p.Rank), uint64(p.In)}, []uint64{uint64(p.Out), uint64(p.Rank)})
		values = append(values, av, bv)
		if m := hf[strings.LastIndexByte(hf, '.')+1:]; !seen[m] {
			seen[m] = true
			modules = append(modules, m)
		}
	}
	st, err := safetensors.Encode(names, shapes, values, map[string]string{"format": "pt"})
	if err != nil {
		return err
	}
	rank, alpha := a.Rank, a.Alpha
	if alpha == 0 { // no alpha means a scale of 1: alpha = rank
		alpha = float32(rank)
	}
	cfg, err := json.MarshalIndent(map[string]any{
		"peft_type": "LORA", "r": rank, "lora_alpha": alpha, "target_modules": modules,
	}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, PEFTWeights), st, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, PEFTConfig), cfg, 0o644)
}

// unpermuteRows is permuteRows' inverse.
func unpermuteRows(v []float32, rows, cols, heads int) ([]float32, error) {
	if heads <= 0 || rows%heads != 0 || (rows/heads)%2 != 0 {
		return nil, fmt.Errorf("%w: %d rows do not split into %d heads of even size", ErrMismatch, rows, heads)
	}
	d := rows / heads
	out := make([]float32, len(v))
	for h := 0; h < heads; h++ {
		for j := 0; j < 2; j++ {
			for i := 0; i < d/2; i++ {
				hf, gg := h*d+j*d/2+i, h*d+2*i+j
				copy(out[hf*cols:(hf+1)*cols], v[gg*cols:(gg+1)*cols])
			}
		}
	}
	return out, nil
}

// Command loragrad writes the LoRA gradients engine/train computes for a
// fixed adapter and fixed examples on a GGUF model, as JSON, for
// bench/loragrad/compare.py to check against PyTorch autograd.
//
//	go run ./bench/loragrad -m MODEL.gguf -o grads.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/train"
)

type pairOut struct {
	Name  string    `json:"name"`
	In    int       `json:"in"`
	Out   int       `json:"out"`
	A     []float32 `json:"a"`
	B     []float32 `json:"b"`
	GradA []float32 `json:"grad_a"`
	GradB []float32 `json:"grad_b"`
}

type output struct {
	Rank      int             `json:"rank"`
	Alpha     float32         `json:"alpha"`
	Examples  []train.Example `json:"examples"`
	Objective float64         `json:"objective"`
	Pairs     []pairOut       `json:"pairs"`
}

func main() {
	path := flag.String("m", "", "GGUF model")
	out := flag.String("o", "grads.json", "output file")
	rank := flag.Int("rank", 4, "adapter rank")
	flag.Parse()
	if err := run(*path, *out, *rank); err != nil {
		fmt.Fprintln(os.Stderr, "loragrad:", err)
		os.Exit(1)
	}
}

func run(path, out string, rank int) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	base, err := train.NewBase(f, train.BaseOptions{})
	if err != nil {
		return err
	}
	a, err := train.NewAdapter(base, train.AdapterConfig{Rank: rank, Alpha: float32(2 * rank), Seed: 1})
	if err != nil {
		return err
	}
	// B random too, so that every value of A has a gradient.
	rng := rand.New(rand.NewPCG(2, 3))
	for _, p := range a.Targets {
		for i := range p.B {
			p.B[i] = float32(rng.NormFloat64() * 0.02)
		}
	}
	vocab := base.Config().Vocab
	tokens := func(n int) []int32 {
		t := make([]int32, n)
		for i := range t {
			t[i] = int32(rng.IntN(vocab))
		}
		return t
	}
	ex := []train.Example{
		{Tokens: tokens(40), Start: 25},
		{Tokens: tokens(23), Start: 10, Weight: -0.5},
		{Tokens: tokens(31), Start: 20, Avoid: []train.Avoid{{Pos: 20, Token: 5, Weight: 0.5}}},
	}
	grads := a.ZeroLike()
	tr := train.NewTrainer(base, train.Options{})
	loss, err := tr.Gradients(context.Background(), a, nil, ex, grads)
	if err != nil {
		return err
	}
	o := output{Rank: a.Rank, Alpha: a.Alpha, Examples: ex, Objective: loss.Objective}
	for _, n := range a.Names() {
		p, g := a.Targets[n], grads.Targets[n]
		o.Pairs = append(o.Pairs, pairOut{Name: n, In: p.In, Out: p.Out, A: p.A, B: p.B, GradA: g.A, GradB: g.B})
	}
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

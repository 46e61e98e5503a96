// Command agree compares ruvllm with llama.cpp on one model file: the
// perplexity of a text (like ruvllm perplexity, with the CPU backend's AMX
// order selectable so that it can match a llama.cpp build without AMX)
// and greedy generation from the prompt tokens llama.cpp used (a JSONL
// file of {"prompt", "prompt_tokens", "tokens"} that bench/iquant/compare.sh
// gets from llama-server), in the CPU backend's exact mode (llama.cpp's
// arithmetic) unless -exact=false. It prints one JSON object.
//
//	go run ./bench/iquant/agree -m FILE.gguf -f TEXT --ctx 256 --ref greedy.jsonl [--amx off]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/ruvllm/ruvllm/engine/compute"
	"github.com/ruvllm/ruvllm/engine/compute/cpu"
	"github.com/ruvllm/ruvllm/engine/llm"
)

type refRow struct {
	Prompt       string  `json:"prompt"`
	PromptTokens []int32 `json:"prompt_tokens"`
	Tokens       []int32 `json:"tokens"`
}

type result struct {
	Model       string  `json:"model"`
	Perplexity  float64 `json:"perplexity,omitempty"`
	Prompts     int     `json:"prompts"`
	Identical   int     `json:"identical"`    // prompts whose every generated token matches
	TokensTotal int     `json:"tokens_total"` // llama.cpp's generated tokens
	TokensSame  int     `json:"tokens_same"`  // of them, before each prompt's first difference
}

func main() {
	path := flag.String("m", "", "GGUF model")
	text := flag.String("f", "", "text file for the perplexity (empty: none)")
	ctxLen := flag.Int("ctx", 256, "perplexity chunk size")
	ref := flag.String("ref", "", "llama.cpp's greedy generations (JSONL; empty: none)")
	amx := flag.String("amx", "auto", "CPU backend's AMX order: auto, on or off")
	exact := flag.Bool("exact", true, "llama.cpp's arithmetic (cpu.Options.Exact); the perplexity also follows llama.cpp's attention path by batch size")
	build := flag.String("build", "prebuilt", "which llama.cpp build's arithmetic the exact mode follows: prebuilt or native-fp16 (cpu.Options.Build)")
	threads := flag.Int("t", 2, "threads")
	logitsFile := flag.String("logits", "", "llamaref's logits along the -ref generations (bench/iquant/logits.sh): compare step by step instead of generating")
	flag.Parse()
	if *path == "" {
		log.Fatal("need -m")
	}
	mode := map[string]cpu.AMXMode{"auto": cpu.AMXAuto, "on": cpu.AMXOn, "off": cpu.AMXOff}[*amx]
	lb, ok := map[string]cpu.LlamaBuild{"prebuilt": cpu.BuildPrebuilt, "native-fp16": cpu.BuildNativeFP16}[*build]
	if !ok {
		log.Fatalf("-build %q: want prebuilt or native-fp16", *build)
	}
	ctx := context.Background()
	m, err := llm.Load(ctx, *path, llm.Options{Threads: *threads, ContextLength: max(*ctxLen, 512), Sequences: 1,
		NewBackend: func() (compute.Backend, error) {
			return cpu.New(cpu.Options{Threads: *threads, AMX: mode, Build: lb, Exact: *exact, LlamaBatching: *exact && *text != ""}), nil
		}})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	res := result{Model: *path}
	if *text != "" {
		b, err := os.ReadFile(*text)
		if err != nil {
			log.Fatal(err)
		}
		p, err := m.Perplexity(ctx, string(b), *ctxLen, nil)
		if err != nil {
			log.Fatal(err)
		}
		res.Perplexity = p.Perplexity
	}
	if *ref != "" && *logitsFile != "" {
		compareLogits(ctx, m, *ref, *logitsFile)
		return
	}
	if *ref != "" {
		f, err := os.Open(*ref)
		if err != nil {
			log.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var row refRow
			if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
				log.Fatal(err)
			}
			if len(row.PromptTokens) == 0 || len(row.Tokens) == 0 {
				continue
			}
			res.Prompts++
			res.TokensTotal += len(row.Tokens)
			i, diverged := 0, false
			_, err := m.Generate(ctx, llm.Request{Tokens: row.PromptTokens, MaxTokens: len(row.Tokens)}, func(tok llm.Token) error {
				if tok.ID < 0 || diverged || i >= len(row.Tokens) {
					return nil
				}
				if tok.ID != row.Tokens[i] {
					diverged = true
					return nil
				}
				i++
				return nil
			})
			if err != nil {
				log.Fatal(err)
			}
			res.TokensSame += i
			if i == len(row.Tokens) {
				res.Identical++
			}
		}
		if err := sc.Err(); err != nil {
			log.Fatal(err)
		}
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
}

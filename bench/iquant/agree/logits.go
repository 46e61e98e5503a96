package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"os"

	"github.com/ruvllm/ruvllm/engine/llm"
)

// logitRow is what compareLogits prints for one prompt: the steps whose
// logits equal llama.cpp's bit for bit, the first step that differs (-1:
// none), and there the largest difference and whether the argmax agrees.
type logitRow struct {
	Prompt    int     `json:"prompt"`
	Steps     int     `json:"steps"`
	Identical int     `json:"identical_steps"`
	First     int     `json:"first_diff"`
	MaxDiff   float64 `json:"max_diff,omitempty"`
	Diffs     int     `json:"diff_logits,omitempty"` // logits that differ at the first differing step
	Argmax    int     `json:"argmax_same"`           // steps whose argmax equals llama.cpp's
}

// compareLogits runs every generation of ref teacher-forced (llm.Model.ForcedLogits)
// and compares each step's logits with llamaref's (bench/iquant/llamaref.cpp),
// printing one JSON line per prompt and a summary.
func compareLogits(ctx context.Context, m *llm.Model, ref, logitsPath string) {
	f, err := os.Open(ref)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	lf, err := os.Open(logitsPath)
	if err != nil {
		log.Fatal(err)
	}
	defer lf.Close()
	lr := bufio.NewReaderSize(lf, 1<<20)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var sumSteps, sumIdent, sumArg, rowsIdent int
	p := 0
	for sc.Scan() {
		var row refRow
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			log.Fatal(err)
		}
		if len(row.PromptTokens) == 0 || len(row.Tokens) == 0 {
			continue
		}
		var hdr [2]uint32
		if err := binary.Read(lr, binary.LittleEndian, &hdr); err != nil {
			log.Fatalf("logits file: %v", err)
		}
		steps, vocab := int(hdr[0]), int(hdr[1])
		if steps != len(row.Tokens) || vocab > 1<<20 {
			log.Fatalf("logits file: %d steps of %d for a row of %d tokens", steps, vocab, len(row.Tokens))
		}
		want := make([]float32, vocab)
		res := logitRow{Prompt: p, Steps: steps, First: -1}
		err := m.ForcedLogits(ctx, row.PromptTokens, row.Tokens, func(step int, got []float32) error {
			if err := binary.Read(lr, binary.LittleEndian, want); err != nil {
				return fmt.Errorf("logits file: %w", err)
			}
			if len(got) != vocab {
				return fmt.Errorf("vocabulary %d, llama.cpp's %d", len(got), vocab)
			}
			same, md, nd := true, 0.0, 0
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					same = false
					nd++
					md = max(md, math.Abs(float64(got[i])-float64(want[i])))
				}
			}
			if same {
				res.Identical++
			} else if res.First < 0 {
				res.First, res.MaxDiff, res.Diffs = step, md, nd
			}
			if argmax(got) == argmax(want) {
				res.Argmax++
			}
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
		b, _ := json.Marshal(res)
		fmt.Println(string(b))
		sumSteps += steps
		sumIdent += res.Identical
		sumArg += res.Argmax
		if res.First < 0 {
			rowsIdent++
		}
		p++
	}
	if _, err := lr.ReadByte(); err != io.EOF {
		log.Fatal("logits file: more rows than the reference")
	}
	fmt.Printf("{\"prompts\":%d,\"prompts_identical\":%d,\"steps\":%d,\"steps_identical\":%d,\"argmax_same\":%d}\n", p, rowsIdent, sumSteps, sumIdent, sumArg)
}

func argmax(x []float32) int {
	b := 0
	for i, v := range x {
		if v > x[b] {
			b = i
		}
	}
	return b
}

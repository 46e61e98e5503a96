package tokenizer

import (
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ruvllm/ruvllm/engine/gguf"
)

// TestEncodeLargeInputFast encodes inputs of 50-100 KB, including
// one-word inputs that make a single merge list 100 K symbols long and
// long runs that a pre-tokenizer matcher must not rescan, and
// requires each to finish within 3 s of CPU time (of the encoding thread, on
// Linux; it takes 1-300 ms; a quadratic loop would take minutes), since
// the merge loop is a heap over a linked list, not a rescan per merge, and
// matchers skip what they have scanned.
func TestEncodeLargeInputFast(t *testing.T) {
	inputs := map[string]string{
		"prose":    strings.Repeat("The quick brown fox jumps over the lazy dog; naïve café 日本語 1234567. ", 1400),
		"one word": strings.Repeat("a", 100_000),
		"spaces":   strings.Repeat(" ", 100_000),
		// Runs that a careless matcher would rescan from every position:
		// \s+$ on spaces that do not end the text, \p{N}{1,3} on one long
		// number, combining marks, line feeds, special-token prefixes.
		"spaces then €": strings.Repeat(" ", 50_000) + "€",
		"digits":        strings.Repeat("7", 50_000),
		"marks":         "e" + strings.Repeat("\u0301", 25_000),
		"newlines":      strings.Repeat("\n", 50_000),
		"[P":            strings.Repeat("[P<|", 12_500),
	}
	type run struct {
		tok    *Tokenizer
		inputs []string
	}
	var runs []run
	for _, tok := range append(sharedTokenizers(t), mustNew(t, spmVocab()), mustNew(t, bpeVocab("gpt-2"))) {
		runs = append(runs, run{tok, []string{"prose", "one word", "spaces", "digits", "[P"}})
	}
	// Each family of shared/vocab on the inputs its own matchers meet.
	for _, v := range vocabTokenizers(t) {
		var in []string
		switch bpePre(v.tok.v) {
		case "deepseek-llm", "deepseek-coder", "falcon":
			in = []string{"spaces then €", "digits", "[P"}
		case "qwen35":
			in = []string{"marks", "digits"}
		case "gemma4":
			in = []string{"prose", "one word", "newlines", "spaces then €"}
		}
		if v.tok != nil && in != nil {
			runs = append(runs, run{v.tok, in})
		}
	}
	for _, r := range runs {
		tok := r.tok
		for _, name := range r.inputs {
			in := inputs[name]
			// Encode runs on this goroutine's OS thread; on Linux its CPU
			// time is what is bounded, so other processes of a loaded
			// machine do not count (elsewhere the wall time is).
			runtime.LockOSThread()
			start := time.Now()
			c0, onCPU := threadCPU()
			ids := tok.Encode(in, EncodeOptions{AddSpecial: true, ParseSpecial: true})
			el := time.Since(start)
			if c1, ok := threadCPU(); onCPU && ok {
				el = time.Duration(c1 - c0)
			}
			runtime.UnlockOSThread()
			t.Logf("%s/%s %s: %d bytes → %d tokens in %v", tok.v.Model, bpePre(tok.v), name, len(in), len(ids), el)
			if el > 3*time.Second {
				t.Errorf("%s/%s %s: %v for %d bytes", tok.v.Model, bpePre(tok.v), name, el, len(in))
			}
		}
	}
}

// BenchmarkEncode measures Encode on 10 KB of prose per shared model.
func BenchmarkEncode(b *testing.B) {
	in := strings.Repeat("The quick brown fox jumps over the lazy dog; naïve café 日本語 1234567. ", 140)
	for _, tok := range sharedTokenizers(b) {
		b.Run(tok.v.Model, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				tok.Encode(in, EncodeOptions{})
			}
		})
	}
}

// benchText is a few KB of mixed text: prose, code, numbers, accents,
// CJK, emoji, runs of spaces and tabs.
var benchText = strings.Repeat("The quick brown fox jumps over the lazy dog; naïve café, 日本語のテキスト 1234567.\n"+
	"func main() { x := map[string]int{\"a\": 1}; fmt.Println(x[\"a\"] + 42) } // don't panic\n"+
	"Ünïcödé façade — “quotes” 😀 résumé \ttabs   and  spaces\n", 16)

// BenchmarkEncodeVocab measures Encode on benchText with every vocabulary
// of shared/vocab (one sub-benchmark per family), in bytes and tokens per
// second and, on Linux, in CPU time of the benchmark's thread (cpu-ns/op,
// which a loaded machine disturbs much less than the wall time):
// go test -run '^$' -bench EncodeVocab ./engine/tokenizer/
func BenchmarkEncodeVocab(b *testing.B) {
	dir := findShared("vocab")
	if dir == "" {
		b.Skip("no shared/vocab directory")
	}
	models, _ := filepath.Glob(filepath.Join(dir, "ggml-vocab-*.gguf"))
	for _, path := range models {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "ggml-vocab-"), ".gguf")
		b.Run(name, func(b *testing.B) {
			f, err := gguf.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			tok, err := FromGGUF(f)
			f.Close()
			if err != nil {
				b.Skip(err)
			}
			n := len(tok.Encode(benchText, EncodeOptions{}))
			b.SetBytes(int64(len(benchText)))
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c0, ok := threadCPU()
			for b.Loop() {
				tok.Encode(benchText, EncodeOptions{})
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			if c1, ok1 := threadCPU(); ok && ok1 {
				b.ReportMetric(float64(c1-c0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// TestMergeSmallMatchesHeap checks that the two merge loops give the same
// symbols: words of up to smallWord characters, made of pieces of the
// vocabulary so that many merges apply, for the hand-built vocabularies
// and the shared ones.
func TestMergeSmallMatchesHeap(t *testing.T) {
	toks := fuzzTokenizers(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tok := range toks {
		rank := tok.bpeRank
		if tok.spm {
			rank = tok.spmRank
		}
		for range 300 {
			var b strings.Builder
			for b.Len() < 40 {
				p := tok.v.Tokens[rng.IntN(len(tok.v.Tokens))]
				if tok.types[rng.IntN(len(tok.types))] == TypeNormal && len(p) < 12 {
					b.WriteString(p)
				} else {
					b.WriteByte(byte('a' + rng.IntN(26)))
				}
			}
			word := b.String()
			var sc scratch
			small := tok.mergeWordWith(word, rank, &sc, true)
			heap := tok.mergeWordWith(word, rank, &sc, false)
			if len(small) != len(heap) {
				t.Fatalf("%s/%s %q: small %d symbols, heap %d", tok.v.Model, tok.v.Pre, word, len(small), len(heap))
			}
			for i := range small {
				if small[i].start != heap[i].start || small[i].n != heap[i].n || small[i].id != heap[i].id {
					t.Fatalf("%s/%s %q: symbol %d: small %+v, heap %+v", tok.v.Model, tok.v.Pre, word, i, small[i], heap[i])
				}
			}
		}
	}
}

// BenchmarkEncodeLong measures Encode on texts a hostile client may send:
// 4 MB of prose (a SentencePiece vocabulary merges it a piece between
// spaces at a time) and a 4 MB word without a space (merged maxMergeBytes
// at a time); B/op is the memory one such request takes.
func BenchmarkEncodeLong(b *testing.B) {
	texts := map[string]string{
		"prose": strings.Repeat("the quick brown fox jumps over the lazy dog ", 4<<20/44),
		"word":  strings.Repeat("kernel", 4<<20/6),
		// Lines of a document, as prompts quote them.
		"lines": strings.Repeat("The quick brown fox jumps over the lazy dog; it was 42 times faster.\n", 4<<20/69),
	}
	for _, tok := range sharedTokenizers(b) {
		for _, name := range []string{"prose", "lines", "word"} {
			in := texts[name]
			b.Run(tok.v.Model+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				b.ReportAllocs()
				for b.Loop() {
					tok.Encode(in, EncodeOptions{})
				}
			})
		}
	}
}

package tokenizer

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
)

// ggufWith writes a vocabulary-only GGUF with the given metadata and
// parses it back.
func ggufWith(t *testing.T, kv map[string]any, order ...string) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	for _, k := range order {
		if err := w.AddKV(k, kv[k]); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFromGGUFDefaults(t *testing.T) {
	spm := spmVocab()
	types := make([]int32, len(spm.Types))
	for i, ty := range spm.Types {
		types[i] = int32(ty)
	}
	// SentencePiece with no special-id or flag keys: llama.cpp's defaults
	// BOS 1, EOS 2, UNK 0, add_bos and the space prefix.
	f := ggufWith(t, map[string]any{
		"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": spm.Tokens,
		"tokenizer.ggml.scores": spm.Scores, "tokenizer.ggml.token_type": types,
		"tokenizer.ggml.padding_token_id": uint32(99999), // out of range: ignored
	}, "tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.padding_token_id")
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	if tok.BOS() != 1 || tok.EOS() != 2 || tok.UNK() != 0 || tok.PAD() != -1 || !tok.AddBOS() || tok.AddEOS() || tok.Model() != "llama" {
		t.Errorf("BOS %d EOS %d UNK %d PAD %d AddBOS %v AddEOS %v", tok.BOS(), tok.EOS(), tok.UNK(), tok.PAD(), tok.AddBOS(), tok.AddEOS())
	}
	if got := tok.Encode("x", EncodeOptions{AddSpecial: true}); !equal(got, []int32{1, 269}) {
		t.Errorf("Encode = %v", got)
	}

	bpe := bpeVocab("llama-bpe")
	base := map[string]any{
		"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": bpe.Tokens, "tokenizer.ggml.merges": bpe.Merges,
		"tokenizer.ggml.pre": "llama-bpe", "tokenizer.ggml.bos_token_id": uint32(266), "tokenizer.ggml.add_eos_token": true,
		"tokenizer.ggml.eos_token_id": uint32(265),
	}
	keys := []string{"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.pre",
		"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_eos_token"}
	tok, err = FromGGUF(ggufWith(t, base, keys...))
	if err != nil {
		t.Fatal(err)
	}
	// llama3-style pre-tokenizers add BOS by default.
	if got := tok.Encode("hello", EncodeOptions{AddSpecial: true}); !equal(got, []int32{266, 259, 265}) {
		t.Errorf("llama-bpe Encode = %v, want BOS hello EOS", got)
	}

	// An unknown pre-tokenizer or tokenizer model is refused with one
	// line naming it.
	base["tokenizer.ggml.pre"] = "no-such-pre"
	_, err = FromGGUF(ggufWith(t, base, keys...))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `tokenizer.ggml.pre "no-such-pre"`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("unknown pre: err = %v", err)
	}
	base["tokenizer.ggml.pre"] = "llama-bpe"
	base["tokenizer.ggml.model"] = "t5"
	_, err = FromGGUF(ggufWith(t, base, keys...))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `tokenizer.ggml.model "t5"`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("unknown model: err = %v", err)
	}
	base["tokenizer.ggml.model"] = "gpt2"
	delete(base, "tokenizer.ggml.merges")
	base["tokenizer.ggml.pre"] = "gpt-2"
	_, err = FromGGUF(ggufWith(t, base, append(keys[:2:2], keys[3:]...)...))
	if !errors.Is(err, ErrInvalidVocab) {
		t.Errorf("missing merges: err = %v", err)
	}
	_, err = FromGGUF(ggufWith(t, map[string]any{"general.architecture": "llama"}, "general.architecture"))
	if !errors.Is(err, ErrInvalidVocab) {
		t.Errorf("no tokenizer: err = %v", err)
	}
}

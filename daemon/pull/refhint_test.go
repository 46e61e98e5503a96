package pull

import (
	"errors"
	"strings"
	"testing"
)

// TestParseRefOtherForms: a reference in another tool's form is refused
// with the form pull takes and what was wrong: a URL was "empty or
// relative path segment", Ollama's hf.co/OWNER/REPO:QUANT a complaint
// about the ':' of its tag.
func TestParseRefOtherForms(t *testing.T) {
	for _, c := range []struct{ ref, want string }{
		{"http://127.0.0.1:8000/model.gguf", "not a URL"},
		{"https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/q.gguf", "not a URL"},
		{"hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", "hf.co/OWNER/REPO:QUANT"},
		{"huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF", "without the host"},
		{"llama3.2", "library names"},
		{"llama3.2:1b", "library names"},
	} {
		_, _, err := ParseRef(c.ref)
		if !errors.Is(err, ErrInvalidRef) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "OWNER/REPO/FILE.gguf") {
			t.Errorf("%s: %v, want ErrInvalidRef saying %q and the form", c.ref, err, c.want)
		}
	}
	if repo, file, err := ParseRef("Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf"); err != nil ||
		repo != "Qwen/Qwen2.5-0.5B-Instruct-GGUF" || file != "qwen2.5-0.5b-instruct-q4_k_m.gguf" {
		t.Errorf("a reference of the form: %q %q %v", repo, file, err)
	}
}

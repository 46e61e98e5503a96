package api

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestCreateQuantize: Ollama's /api/create with quantize converts a float
// model's weights into a new model file (a blob), which then serves
// requests; a created model's settings survive the conversion; a
// quantized base, an unknown type and a type the file cannot take are
// 400s naming the field.
func TestCreateQuantize(t *testing.T) {
	ta := startAPIWith(t, true)
	model := realTinyModel(t) // F32 weights
	post := func(path, body string, want int) []byte {
		t.Helper()
		resp, b := ta.post(t, path, body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", path, body, resp.StatusCode, b, want)
		}
		return b
	}
	post("/api/create", `{"model":"tiny-q8","from":`+quote(model)+`,"quantize":"q8_0","stream":false}`, 200)
	show := mustJSON(t, string(post("/api/show", `{"model":"tiny-q8"}`, 200)))
	if q := field(show, "details", "quantization_level"); q != "Q8_0" {
		t.Fatalf("quantized model's level %v: %v", q, show)
	}
	g := mustJSON(t, string(post("/api/generate", `{"model":"tiny-q8","prompt":"Hello","stream":false,"options":{"num_predict":4}}`, 200)))
	if field(g, "eval_count") != 4.0 {
		t.Fatalf("generate with the quantized model: %v", g)
	}

	// From a created model, streamed: progress lines with the weights done,
	// then success; the base's system prompt carries over.
	post("/api/create", `{"model":"tiny-sys","from":`+quote(model)+`,"system":"Be terse.","stream":false}`, 200)
	b := post("/api/create", `{"model":"tiny-sys-q","from":"tiny-sys","quantize":"Q4_K_M"}`, 200)
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	var quantizing, completed bool
	for _, l := range lines {
		if s, _ := l["status"].(string); strings.HasPrefix(s, "quantizing F32 model to Q4_K_M") {
			quantizing = true
			if l["total"] != nil && l["completed"] == l["total"] {
				completed = true
			}
		}
	}
	if !quantizing || !completed || lines[len(lines)-1]["status"] != "success" {
		t.Fatalf("progress of a streamed create: %s", b)
	}
	show = mustJSON(t, string(post("/api/show", `{"model":"tiny-sys-q"}`, 200)))
	if show["system"] != "Be terse." || field(show, "details", "quantization_level") != "Q4_K_M" {
		t.Fatalf("created from a created model: %v", show)
	}

	for _, tc := range []struct{ body, want string }{
		{`{"model":"x","from":"tiny-q8","quantize":"q4_0","stream":false}`, "requantizing"},
		{`{"model":"x","from":` + quote(model) + `,"quantize":"q9_9","stream":false}`, "unknown quantization type"},
	} {
		resp, b := ta.post(t, "/api/create", tc.body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), tc.want) || !strings.Contains(string(b), "quantize") {
			t.Errorf("%s: %d %s, want a 400 naming quantize (%s)", tc.body, resp.StatusCode, b, tc.want)
		}
	}
	post("/api/show", `{"model":"x"}`, 404)

	// Deleting a quantized model removes its blob once nothing uses it.
	blob := func(name string) string {
		t.Helper()
		var m ipc.ModelManifest
		if err := ta.srv.Store().Get(ManifestBucket, name, &m); err != nil {
			t.Fatal(err)
		}
		return m.From
	}
	q8 := blob("tiny-q8")
	if data, err := os.ReadFile(q8); err != nil || filepath.Base(q8) != fmt.Sprintf("sha256-%x", sha256.Sum256(data)) {
		t.Fatalf("blob %s is not named by its content's digest (%v)", q8, err)
	}
	post("/api/copy", `{"source":"tiny-q8","destination":"tiny-q8-copy"}`, 200)
	del := func(name string) {
		t.Helper()
		req, _ := http.NewRequest("DELETE", "http://ruvllm/api/delete", strings.NewReader(`{"model":"`+name+`"}`))
		resp, err := ta.http.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("delete %s: %v %v", name, resp, err)
		}
		resp.Body.Close()
	}
	del("tiny-q8")
	if _, err := os.Stat(q8); err != nil {
		t.Fatalf("the blob went while a copy still uses it: %v", err)
	}
	del("tiny-q8-copy")
	if _, err := os.Stat(q8); !os.IsNotExist(err) {
		t.Fatalf("the blob of a deleted quantized model is left: %v", err)
	}
	if _, err := os.Stat(model); err != nil {
		t.Fatalf("the source file was touched: %v", err)
	}
}

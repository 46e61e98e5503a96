package quantize

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruvllm/ruvllm/engine/gguf"
)

// Golden hashes of llama-quantize's output files (testdata/quantize_golden.json),
// recorded once by TestWriteQuantizeGolden with the llama-quantize of a
// llama.cpp build (RUVLLM_LLAMA_QUANTIZE=path/to/llama-quantize) on the
// synthetic models of synth_test.go and their importance matrices. The key
// is "model type imatrix" (imatrix none, dat or gguf); the value the
// SHA-256 of the whole output file, which File must reproduce byte for byte.

const quantizeGoldenFile = "testdata/quantize_golden.json"

// goldenTypes are the file types recorded; goldenImatrixTypes those also
// recorded with each importance matrix format.
var (
	goldenTypes = []string{"F16", "BF16", "F32", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_S", "Q3_K_M",
		"Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS", "IQ3_S", "IQ3_M"}
	goldenImatrixTypes = []string{"Q4_0", "Q5_1", "Q2_K_S", "Q3_K_M", "Q4_K_M", "Q5_K_S", "Q6_K", "IQ4_NL", "IQ4_XS", "IQ3_S", "IQ3_XS",
		"IQ3_XXS", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M"}
)

func goldenCases() (keys []string) {
	for _, m := range synthModels {
		for _, t := range goldenTypes {
			keys = append(keys, m.name+" "+t+" none")
		}
		for _, t := range goldenImatrixTypes {
			keys = append(keys, m.name+" "+t+" dat", m.name+" "+t+" gguf")
		}
	}
	return keys
}

// checkedCases are the cases TestQuantizeGolden runs, unless
// RUVLLM_QUANTIZE_ALL is set (then all): of the small synthB (whose rows
// of 96 send the grid types to IQ4_NL) every type without an importance
// matrix and with the GGUF one, the .dat format for a few; of synthA
// (eight layers of rows of 256, seconds each for the grid types) the mixes
// whose rules differ most and two grid mixes (IQ3_XXS with its IQ2_S and
// IQ3_S tensors, IQ1_M). engine/quant's TestGGMLGolden checks every grid
// quantizer itself.
func checkedCases() (keys []string) {
	all := os.Getenv("RUVLLM_QUANTIZE_ALL") != ""
	pick := map[string]bool{}
	for _, k := range []string{"synthB Q4_K_M dat", "synthB IQ4_XS dat", "synthB Q2_K_S dat", "synthB IQ1_S dat",
		"synthA Q4_K_M none", "synthA Q3_K_M none", "synthA Q2_K none", "synthA Q5_K_S none", "synthA IQ4_XS none",
		"synthA Q4_0 none", "synthA Q4_K_M dat", "synthA IQ4_XS gguf", "synthA Q2_K_S dat", "synthA IQ3_XXS gguf",
		"synthA IQ1_M dat"} {
		pick[k] = true
	}
	for _, k := range goldenCases() {
		if all || pick[k] || strings.HasPrefix(k, "synthB ") && !strings.HasSuffix(k, " dat") {
			keys = append(keys, k)
		}
	}
	return keys
}

func hashFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// TestQuantizeGolden converts the synthetic models to every recorded type
// and checks the files against llama-quantize's.
func TestQuantizeGolden(t *testing.T) {
	raw, err := os.ReadFile(quantizeGoldenFile)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	models := synthFiles(t, dir)
	t.Chdir(dir) // the imatrix paths are recorded in the files as given
	for _, key := range checkedCases() {
		var model, typ, im string
		fmt.Sscan(key, &model, &typ, &im)
		w, ok := want[key]
		if !ok {
			t.Errorf("%s: no golden hash", key)
			continue
		}
		in, err := gguf.Open(models[model])
		if err != nil {
			t.Fatal(err)
		}
		ft, err := ParseFileType(typ)
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Type: ft, Threads: 2}
		if im != "none" {
			o.ImatrixPath = model + ".imatrix." + im
			if o.Imatrix, err = ReadImatrix(o.ImatrixPath); err != nil {
				t.Fatal(err)
			}
		}
		out := filepath.Join(dir, "out.gguf")
		if _, err := File(context.Background(), in, out, o); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		in.Close()
		if got := hashFile(t, out); got != w {
			t.Errorf("%s: output sha256 %s, llama-quantize %s", key, got, w)
		}
	}
}

// TestWriteQuantizeGolden records testdata/quantize_golden.json with the
// llama-quantize named by RUVLLM_LLAMA_QUANTIZE.
func TestWriteQuantizeGolden(t *testing.T) {
	bin := os.Getenv("RUVLLM_LLAMA_QUANTIZE")
	if bin == "" {
		t.Skip("RUVLLM_LLAMA_QUANTIZE is not set (path of llama.cpp's llama-quantize)")
	}
	dir := t.TempDir()
	synthFiles(t, dir)
	out := map[string]string{}
	for _, key := range goldenCases() {
		var model, typ, im string
		fmt.Sscan(key, &model, &typ, &im)
		args := []string{}
		if im != "none" {
			args = append(args, "--imatrix", model+".imatrix."+im)
		}
		args = append(args, model+".gguf", "out.gguf", typ, "2")
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", key, err, b)
		}
		out[key] = hashFile(t, filepath.Join(dir, "out.gguf"))
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(quantizeGoldenFile, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

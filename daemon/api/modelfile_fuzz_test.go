package api

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// FuzzModelfile: any Modelfile text either is refused with an error or
// parses into a model whose Modelfile, as /api/show writes it, parses back
// into the same settings (what `ollama show --modelfile > M; ruvllm create
// -f M` relies on).
func FuzzModelfile(f *testing.F) {
	for _, s := range []string{
		"FROM m.gguf\nPARAMETER temperature 0.5\nPARAMETER stop \"<|im_end|>\"\nSYSTEM \"\"\"You are\nterse.\"\"\"\n",
		"FROM m.gguf\nTEMPLATE \"\"\"{{ .Prompt }}\"\"\"\nMESSAGE user hi\nMESSAGE assistant \"hello there\"\n",
		"\ufeffFROM\tm.gguf\nPARAMETER\tnum_ctx\t4096\nLICENSE MIT\n",
		"FROM m.gguf\nSYSTEM   spaced  \n", "FROM m.gguf\nSYSTEM \"\"\"\"\"\"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		req, _, err := parseModelfile(text)
		if err != nil || req.From == "" {
			return
		}
		man := &ipc.ModelManifest{From: req.From, System: req.System, Template: req.Template, Parameters: req.Parameters, Messages: req.Messages}
		again, _, err := parseModelfile(formatModelfile(man, req.From))
		if err != nil {
			t.Fatalf("the Modelfile written for %q does not parse: %v\n%s", text, err, formatModelfile(man, req.From))
		}
		p1, _ := json.Marshal(req.Parameters)
		p2, _ := json.Marshal(again.Parameters)
		if again.From != req.From || again.System != req.System || again.Template != req.Template || string(p1) != string(p2) ||
			!reflect.DeepEqual(roles(again.Messages), roles(req.Messages)) {
			t.Fatalf("%q parses into %+v, its Modelfile into %+v\n%s", text, req, again, formatModelfile(man, req.From))
		}
	})
}

func roles(ms []ipc.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Role+":"+m.Content)
	}
	return out
}

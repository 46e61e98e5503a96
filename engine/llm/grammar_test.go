package llm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/grammar"
	"github.com/ruvllm/ruvllm/engine/sample"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
	"github.com/ruvllm/ruvllm/internal/testpath"
)

// Schemas whose every value is bounded in size, so that a generation under
// them always finishes within the token budget.
var testSchemas = []string{
	`{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"enum":["a","b","c"]},"maxItems":3}},"required":["name","age"],"additionalProperties":false}`,
	`{"type":"array","items":{"anyOf":[{"type":"boolean"},{"type":"null"},{"type":"number","minimum":-5,"maximum":5}]},"minItems":1,"maxItems":4}`,
	`{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-f0-9]{4}$"},"when":{"type":"string","format":"date"},"score":{"type":"number","exclusiveMinimum":0,"maximum":1},"child":{"$ref":"#/$defs/leaf"}},"required":["id","when","child"],"additionalProperties":false,"$defs":{"leaf":{"type":"object","properties":{"ok":{"type":"boolean"},"note":{"type":"string","minLength":1,"maxLength":8}},"required":["ok"],"additionalProperties":false}}}`,
	`{"oneOf":[{"type":"string","enum":["red","green"]},{"type":"integer","minimum":10,"maximum":99}]}`,
}

// TestGrammarOutputsAlwaysValid generates under JSON Schemas with the
// shared models and random sampling settings (temperature, top-k/p, min-p,
// penalties, biases), and validates every output with an independent JSON
// Schema validator. Finished outputs must be valid; none may stop early
// other than by the grammar's end.
func TestGrammarOutputsAlwaysValid(t *testing.T) {
	models := []string{"ruvllm-test-llama-19m-q8_0.gguf", "ruvllm-test-qwen2-13m-q8_0.gguf"}
	r := rand.New(rand.NewPCG(11, 12))
	for _, name := range models {
		path := testpath.Shared(t, "models/"+name)
		m, err := Load(context.Background(), path, Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		for si, schemaText := range testSchemas {
			c, err := m.Grammar(grammar.Spec{Kind: grammar.KindJSONSchema, Source: schemaText})
			if err != nil {
				t.Fatalf("schema %d: %v", si, err)
			}
			comp := jsonschema.NewCompiler()
			doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(schemaText))
			if err := comp.AddResource("s.json", doc); err != nil {
				t.Fatal(err)
			}
			comp.AssertFormat()
			validator, err := comp.Compile("s.json")
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 6; k++ {
				p := randomSampling(r, m.Info().VocabSize)
				_, text, res := generate(t, m, Request{Prompt: "Here is the data: ", Grammar: c, MaxTokens: 400, Sampling: p})
				if res.FinishReason != FinishStop {
					t.Fatalf("%s schema %d params %+v: finish %s after %q", name, si, p, res.FinishReason, text)
				}
				inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
				if err != nil {
					t.Fatalf("%s schema %d params %+v: not JSON: %q: %v", name, si, p, text, err)
				}
				if err := validator.Validate(inst); err != nil {
					t.Fatalf("%s schema %d params %+v: %q invalid: %v", name, si, p, text, err)
				}
			}
		}
		m.Close()
	}
}

func randomSampling(r *rand.Rand, vocab int) sample.Params {
	p := sample.Params{Temperature: []float32{0, 0.5, 1, 1.5, 3}[r.IntN(5)], Seed: r.Uint64() | 1}
	if r.IntN(2) == 0 {
		p.TopK = 1 + r.IntN(50)
	}
	if r.IntN(2) == 0 {
		p.TopP = 0.3 + 0.7*r.Float32()
	}
	if r.IntN(3) == 0 {
		p.MinP = 0.2 * r.Float32()
	}
	if r.IntN(3) == 0 {
		p.RepeatPenalty, p.PresencePenalty, p.FrequencyPenalty = 1.5, 0.5, 0.3
	}
	if r.IntN(3) == 0 {
		p.LogitBias = map[int32]float32{}
		for i := 0; i < 20; i++ {
			p.LogitBias[int32(r.IntN(vocab))] = []float32{10, -10, float32(math.Inf(-1))}[r.IntN(3)]
		}
	}
	return p
}

// TestGrammarGBNFAndRegex holds generation to a GBNF grammar and a regex.
func TestGrammarGBNFAndRegex(t *testing.T) {
	m, err := Load(context.Background(), testpath.Shared(t, "models/ruvllm-test-qwen2-13m-q8_0.gguf"), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cases := []struct {
		spec grammar.Spec
		re   string
	}{
		{grammar.Spec{Kind: grammar.KindGBNF, Source: "root ::= (\"yes\" | \"no\") \", because \" [a-z ]{1,20} \".\""}, `^(yes|no), because [a-z ]{1,20}\.$`},
		{grammar.Spec{Kind: grammar.KindRegex, Source: `\d{3}-\d{4} [A-Z][a-z]{2,5}`}, `^\d{3}-\d{4} [A-Z][a-z]{2,5}$`},
	}
	r := rand.New(rand.NewPCG(5, 5))
	for _, tc := range cases {
		c, err := m.Grammar(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(tc.re)
		for k := 0; k < 5; k++ {
			p := randomSampling(r, m.Info().VocabSize)
			_, text, res := generate(t, m, Request{Prompt: "Answer: ", Grammar: c, MaxTokens: 200, Sampling: p})
			if res.FinishReason != FinishStop || !re.MatchString(text) {
				t.Fatalf("%s: %q (finish %s)", tc.spec, text, res.FinishReason)
			}
		}
	}
}

// TestGrammarForcedTokensExact checks that appending forced tokens without
// their own forward pass generates exactly what token-by-token sampling
// does (logprobs make Generate take every token through the sampler). A
// special token the grammar asks for is the only token that can spell it,
// so it is forced.
func TestGrammarForcedTokensExact(t *testing.T) {
	m, err := Load(context.Background(), testpath.Shared(t, "models/ruvllm-test-qwen2-13m-q8_0.gguf"), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c, err := m.Grammar(grammar.Spec{Kind: grammar.KindGBNF, Source: `root ::= [a-z]{2,6} <|im_start|> <|im_start|> [a-z ]{2,12} "."`})
	if err != nil {
		t.Fatal(err)
	}
	for _, temp := range []float32{0, 0.9, 2} {
		p := sample.Params{Temperature: temp, Seed: 7, TopK: 40}
		fast, ftext, fres := generate(t, m, Request{Prompt: "Status: ", Grammar: c, MaxTokens: 100, Sampling: p})
		slow, stext, sres := generate(t, m, Request{Prompt: "Status: ", Grammar: c, MaxTokens: 100, Sampling: p, Logprobs: true})
		if fmt.Sprint(fast) != fmt.Sprint(slow) || ftext != stext {
			t.Fatalf("temperature %v: forced tokens changed the output:\n%v %q\n%v %q", temp, fast, ftext, slow, stext)
		}
		if fres.ForcedTokens < 2 || sres.ForcedTokens != 0 {
			t.Errorf("temperature %v: forced %d (fast) and %d (with logprobs)", temp, fres.ForcedTokens, sres.ForcedTokens)
		}
		if !regexp.MustCompile(`^[a-z]{2,6}[a-z ]{2,12}\.$`).MatchString(ftext) {
			t.Fatalf("output %q", ftext)
		}
	}
}

// TestGrammarVocabMismatch refuses a constraint made for another model.
func TestGrammarVocabMismatch(t *testing.T) {
	a, err := Load(context.Background(), testpath.Shared(t, "models/ruvllm-test-llama-19m-q8_0.gguf"), Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Load(context.Background(), testpath.Shared(t, "models/ruvllm-test-qwen2-13m-q8_0.gguf"), Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := a.Grammar(grammar.Spec{Kind: grammar.KindJSON})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Generate(context.Background(), Request{Prompt: "x", Grammar: c, MaxTokens: 4}, func(Token) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "vocabulary") {
		t.Fatalf("error %v", err)
	}
}

// TestGrammarIgnoresTurnStops: the chat template's stop strings (the
// llama file's "[INST]": a model running on into the next turn) do not cut
// constrained text short, which must end where its grammar ends; a lazy
// grammar's text is constrained from its trigger on. (A soak found JSON
// objects ending inside a string with finish "stop", where the model had
// copied "[INST]" from its prompt.)
func TestGrammarIgnoresTurnStops(t *testing.T) {
	m, err := Load(context.Background(), testpath.Shared(t, "models/ruvllm-test-llama-19m-f16.gguf"), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !slices.Contains(m.tmpl.StopStrings(), "[INST]") {
		t.Fatalf("the llama file's template stops at %q, not at [INST]", m.tmpl.StopStrings())
	}
	turn := []chat.Message{{Role: "user", Content: "Say something."}}
	c, err := m.Grammar(grammar.Spec{Kind: grammar.KindGBNF, Source: `root ::= "\"[INST] ok\""`})
	if err != nil {
		t.Fatal(err)
	}
	_, text, res := generate(t, m, Request{Messages: turn, Grammar: c, MaxTokens: 30})
	if text != `"[INST] ok"` || res.FinishReason != FinishStop {
		t.Errorf("constrained: %q (finish %s), want the grammar's whole text", text, res.FinishReason)
	}
	// Lazy: free text until "ure", which a bias makes the first token.
	ure := m.tok.Encode("Sure", tokenizer.EncodeOptions{})
	if len(ure) != 2 || m.tok.Piece(ure[1]) != "ure" {
		t.Fatalf("tokens of Sure: %v", ure)
	}
	lazy, err := m.Grammar(grammar.Spec{Kind: grammar.KindGBNF, Source: `root ::= "ure[INST] ok"`})
	if err != nil {
		t.Fatal(err)
	}
	p := sample.Params{LogitBias: map[int32]float32{ure[1]: 100}}
	_, text, res = generate(t, m, Request{Messages: turn, Grammar: lazy, GrammarTriggers: []string{"ure"}, MaxTokens: 30, Sampling: p})
	if text != "ure[INST] ok" || res.FinishReason != FinishStop {
		t.Errorf("lazy, after its trigger: %q (finish %s), want %q", text, res.FinishReason, "ure[INST] ok")
	}
}

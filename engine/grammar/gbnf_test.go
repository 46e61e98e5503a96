package grammar

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// matches reports whether the whole of text is in g's language.
func matches(g *Grammar, text string) bool {
	p := newParser(g)
	return p.feed([]byte(text)) && p.accepting()
}

func TestGBNFLanguages(t *testing.T) {
	tests := []struct {
		name, src string
		yes, no   []string
	}{
		{"literal", `root ::= "hi"`, []string{"hi"}, []string{"", "h", "hii"}},
		{"alternatives and groups", `root ::= ("a" | "bc")+ "!"`, []string{"a!", "bca!", "aaa!"}, []string{"!", "b!", "a"}},
		{"classes", `root ::= [a-c0-9]{2,3} [^x]`, []string{"a1z", "abcq", "00é"}, []string{"a1", "a1x", "abcdq"}},
		{"any and optional", `root ::= . "?"?`, []string{"x", "é?", "??"}, []string{"", "ab"}},
		{"escapes", `root ::= "\x41\u00e9\n\"" [\]\-]`, []string{"Aé\n\"]", "Aé\n\"-"}, []string{"Aé\n\"x"}},
		{"recursion", `root ::= "(" root ")" | ""`, []string{"", "()", "((()))"}, []string{"(", "())"}},
		{"left recursion", `root ::= root "a" | "b"`, []string{"b", "baaa"}, []string{"", "ab"}},
		{"ambiguous", "root ::= x x\nx ::= [a-z]+", []string{"ab", "abc"}, []string{"a", ""}},
		{"continued lines", "root ::= \"a\"\n  | \"b\" # comment\nother ::= \"c\"", []string{"a", "b"}, []string{"c"}},
		{"repetition bounds", `root ::= ("ab"){0,2} "c"{1,}`, []string{"c", "ababccc"}, []string{"abababc", "ab"}},
		{"nested repetition", `root ::= (("a" | item)* ";")+` + "\nitem ::= \"[\" root? \"]\"", []string{"a;", "[a;];", "[[;];]a;"}, []string{"", "[", "a"}},
		{"special token", `root ::= <|tool|> "x"`, []string{"\xff<|tool|>x"}, []string{"<|tool|>x"}},
	}
	for _, tc := range tests {
		g, err := CompileGBNF(tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, s := range tc.yes {
			if !matches(g, s) {
				t.Errorf("%s: %q rejected\n%s", tc.name, s, g.dump())
			}
		}
		for _, s := range tc.no {
			if matches(g, s) {
				t.Errorf("%s: %q accepted", tc.name, s)
			}
		}
	}
}

func TestGBNFErrors(t *testing.T) {
	for _, src := range []string{
		``, `root ::= missing`, `root ::= "a`, `root ::= [a`, `root ::= (a`, `root = "a"`, `root ::= "\q"`,
		`root ::= "a"{3,1}`, `root ::= *`, `x ::= "a"`, "root ::= \"a\"\nroot ::= \"b\"", `root ::= <[12]>`, `root ::= !<a>`,
		`root ::= "a"{5000}`, "root ::= \"\xff\"",
	} {
		if _, err := CompileGBNF(src); err == nil || !errors.Is(err, ErrGBNF) && !errors.Is(err, ErrEmpty) {
			t.Errorf("%q: error %v", src, err)
		}
	}
}

// TestGBNFErrorsSay: errors say what is wrong where a reader would look; a
// repetition count of ten digits or more said "expected a number".
func TestGBNFErrorsSay(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`root ::= "a"{99999999999999999999}`, "repetition over 2000"},
		{`root ::= "a"{1,1234567890}`, "repetition over 2000"},
		{`root ::= "a"{2001}`, "repetition over 2000"},
		{`root ::= "a"{,3}`, "expected a number"},
	} {
		_, err := CompileGBNF(tc.src)
		if !errors.Is(err, ErrGBNF) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.src, err, tc.want)
		}
	}
}

// TestNodeLlamaCppGrammars compiles the GBNF grammars shipped with
// node-llama-cpp (MIT; read where they are installed, not copied here)
// and checks texts each must accept and refuse.
func TestNodeLlamaCppGrammars(t *testing.T) {
	dir := "/work/cache/node_modules/node-llama-cpp/llama/grammars"
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("node-llama-cpp grammars not found at %s", dir)
	}
	cases := map[string]struct{ yes, no []string }{
		"arithmetic.gbnf": {[]string{"1+2=3\n", "(x +2) *y=z \n"}, []string{"1+2\n", "=3\n"}},
		"c.gbnf":          {[]string{"int main(){return 0;}", "float f(int x){x = x*2;if(x<3){return x;}}"}, []string{"int main(", "main(){}"}},
		"chess.gbnf":      {[]string{"1. e4 e5\n2. Nf3 Nc6\n", "1. O-O-O Qxd8+\n10. exd5 a8=Q#\n"}, []string{"1. e4 e5\n", "1. e9 e5\n2. a3 a4\n"}},
		"english.gbnf":    {[]string{"Hello, world!", "a\tb"}, []string{"", "héllo", "a  b"}},
		"japanese.gbnf":   {[]string{"こんにちは", "日本語 テスト"}, []string{"", "hello"}},
		"json.gbnf":       {[]string{`{"a": [1, 2.5e3, "x"], "b": {"c": null}}`, "{}", "{\n  \"k\": true}"}, []string{`[]`, `{"a"}`, `{"a": 01}`, `{"a": "\x"}`}},
		"json_arr.gbnf":   {[]string{"[\n{\"a\": 1},\n\"x\"]", "[\n]"}, []string{"[]", "{}"}},
		"list.gbnf":       {[]string{"- one\n- two\n"}, []string{"- one", "* one\n"}},
	}
	for name, tc := range cases {
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		g, err := CompileGBNF(string(src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, s := range tc.yes {
			if !matches(g, s) {
				t.Errorf("%s: %q rejected", name, s)
			}
		}
		for _, s := range tc.no {
			if matches(g, s) {
				t.Errorf("%s: %q accepted", name, s)
			}
		}
	}
}

func TestGBNFMasks(t *testing.T) {
	g, err := CompileGBNF(`root ::= "[" (item ("," item)*)? "]"
item ::= root | "a"+ | [0-9] [0-9]?`)
	if err != nil {
		t.Fatal(err)
	}
	checkMasks(t, NewConstraint(g, toyVocab(t, `a1[],"`)), 3, 10)
}

func FuzzGBNF(f *testing.F) {
	for _, s := range []string{`root ::= "a" [b-c]* x`, "root ::= (\"x\" | y){2,3}\ny ::= [^a]", `root ::= . "\u00e9"?`} {
		f.Add(s, "abc")
	}
	f.Fuzz(func(t *testing.T, src, text string) {
		if len(src) > 500 {
			return
		}
		g, err := CompileGBNF(src)
		if err != nil {
			return
		}
		matches(g, text)
	})
}

// TestGBNFSpecialTokenInVocab: a GBNF grammar that names a special token
// the vocabulary lacks is refused when its constraint is made, naming the
// token; no token could ever match it, so the output used to stop short of
// the grammar with an ordinary stop. End-of-generation tokens count as
// the vocabulary's too.
func TestGBNFSpecialTokenInVocab(t *testing.T) {
	v, err := NewVocab([]Token{{Bytes: []byte("a")}, {Bytes: []byte("b")},
		{Bytes: []byte("<think>"), Special: true}, {Bytes: []byte("</s>"), EOG: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		src, missing string
	}{
		{`root ::= <think> "a"`, ""},
		{`root ::= "a" </s>`, ""},
		{`root ::= "a" <nope> "b"`, "<nope>"},
		{"root ::= \"a\" | x\nx ::= (\"b\" <|eot_id|>)+", "<|eot_id|>"},
		{"root ::= \"a\"\nunused ::= <nope>", ""}, // not reachable from root
	} {
		_, err := v.Constraint(Spec{Kind: KindGBNF, Source: tc.src})
		switch {
		case tc.missing == "" && err != nil:
			t.Errorf("%q: %v", tc.src, err)
		case tc.missing != "" && (!errors.Is(err, ErrGBNF) || !strings.Contains(err.Error(), tc.missing)):
			t.Errorf("%q: error %v, want one naming %s", tc.src, err, tc.missing)
		}
	}
}

// TestGBNFEscapesOfNoCharacter: an escape past U+10FFFF, or a surrogate in
// a string, names no character: both are refused where they stand. They
// compiled into U+FFFD, so the output held the replacement character where
// the grammar wrote something else.
func TestGBNFEscapesOfNoCharacter(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`root ::= "\U0011FFFF"`, `\U0011FFFF is beyond U+10FFFF`},
		{`root ::= [\U00110000-\U0011FFFF]`, `\U00110000 is beyond U+10FFFF`},
		{`root ::= "a\uD800"`, "U+D800 in a string is a surrogate"},
		{`root ::= "\uDFFF"`, "U+DFFF in a string is a surrogate"},
	} {
		_, err := CompileGBNF(tc.src)
		if !errors.Is(err, ErrGBNF) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.src, err, tc.want)
		}
	}
	// Classes may still name any code point, surrogates included.
	for _, src := range []string{`root ::= [^\uD800-\uDFFF]`, `root ::= [\x00-\U0010FFFF]`, `root ::= "\U0010FFFF"`} {
		if _, err := CompileGBNF(src); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}

package tokenizer

import (
	"fmt"
	"testing"
)

// spmVocab is a small hand-built SentencePiece vocabulary: <unk>, <s>,
// </s>, the 256 byte pieces (ids 3..258), then scored pieces.
func spmVocab() Vocab {
	v := Vocab{Model: "llama", BOS: 1, EOS: 2, EOT: -1, EOM: -1, PAD: -1, UNK: 0, AddBOS: true, AddSpacePrefix: true}
	add := func(s string, score float32, ty TokenType) {
		v.Tokens = append(v.Tokens, s)
		v.Scores = append(v.Scores, score)
		v.Types = append(v.Types, ty)
	}
	add("<unk>", 0, TypeUnknown)
	add("<s>", 0, TypeControl)
	add("</s>", 0, TypeControl)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), 0, TypeByte)
	}
	for _, p := range []struct {
		s     string
		score float32
	}{
		{"▁", -1}, {"a", -1}, {"b", -1}, {"c", -1}, {"x", -1}, // 259..263
		{"ab", -2}, {"bc", -1.5}, {"abc", -2.5}, {"▁a", -3}, {"xx", -1}, // 264..268
		{"▁x", -0.5}, {"<user>", 0}, // 269, 270
	} {
		add(p.s, p.score, TypeNormal)
	}
	v.Types[270] = TypeUserDefined
	return v
}

// bpeVocab is a small byte-level BPE vocabulary: the 256 GPT-2 alphabet
// characters (id = byte), merges building "hello" and " world", and
// ChatML-style special tokens.
func bpeVocab(pre string) Vocab {
	v := Vocab{Model: "gpt2", Pre: pre, BOS: -1, EOS: -1, EOT: -1, EOM: -1, PAD: -1, UNK: -1}
	for b := 0; b < 256; b++ {
		v.Tokens = append(v.Tokens, string(byteToRune[b]))
	}
	v.Merges = []string{"h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld"}
	for _, m := range []string{"he", "ll", "hell", "hello", "Ġw", "or", "Ġwor", "ld", "Ġworld"} { // 256..264
		v.Tokens = append(v.Tokens, m)
	}
	v.Tokens = append(v.Tokens, "<|endoftext|>", "<|im_start|>", "<|im_end|>") // 265..267
	v.Types = make([]TokenType, len(v.Tokens))
	for i := range v.Types {
		v.Types[i] = TypeNormal
	}
	v.Types[265], v.Types[266] = TypeControl, TypeControl
	v.Types[267] = TypeUserDefined // llama.cpp promotes it to control by its text
	v.EOS = 265
	return v
}

func mustNew(t testing.TB, v Vocab) *Tokenizer {
	t.Helper()
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestSPMEncode(t *testing.T) {
	tok := mustNew(t, spmVocab())
	noPrefix := spmVocab()
	noPrefix.AddSpacePrefix = false
	tokNP := mustNew(t, noPrefix)
	byteID := func(b byte) int32 { return 3 + int32(b) }
	for _, tc := range []struct {
		name string
		tok  *Tokenizer
		text string
		o    EncodeOptions
		want []int32
	}{
		{"empty", tok, "", EncodeOptions{}, []int32{}},
		{"empty with BOS", tok, "", EncodeOptions{AddSpecial: true}, []int32{1}},
		// ▁ a b c: bc (-1.5) beats ab (-2) and ▁a (-3); then a+bc = abc
		// (-2.5); ▁+abc is no token.
		{"score order", tok, "abc", EncodeOptions{}, []int32{259, 266}},
		{"prefix merges first", tok, "x", EncodeOptions{}, []int32{269}},
		// Equal scores: the leftmost pair merges first.
		{"tie leftmost", tokNP, "xxx", EncodeOptions{}, []int32{268, 263}},
		{"no prefix", tokNP, "ab", EncodeOptions{}, []int32{264}},
		{"byte fallback", tok, "é", EncodeOptions{}, []int32{259, byteID(0xC3), byteID(0xA9)}},
		{"spaces", tok, "a  b", EncodeOptions{}, []int32{267, 259, 259, 261}},
		{"BOS", tok, "a", EncodeOptions{AddSpecial: true}, []int32{1, 267}},
		{"control as text", tok, "<s>a", EncodeOptions{}, []int32{259, byteID('<'), byteID('s'), byteID('>'), 260}},
		// After a special token the next fragment gets a space prefix.
		{"control parsed", tok, "<s>a", EncodeOptions{ParseSpecial: true}, []int32{1, 267}},
		{"unknown only when parsing", tok, "<unk>", EncodeOptions{ParseSpecial: true}, []int32{0}},
		// User-defined tokens are matched even without ParseSpecial.
		{"user-defined", tok, "a<user>a", EncodeOptions{}, []int32{267, 270, 267}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.tok.Encode(tc.text, tc.o)
			if !equal(got, tc.want) {
				t.Errorf("Encode(%q, %+v) = %v, want %v", tc.text, tc.o, got, tc.want)
			}
		})
	}
	v := spmVocab()
	v.AddEOS = true
	if got := mustNew(t, v).Encode("a", EncodeOptions{AddSpecial: true}); !equal(got, []int32{1, 267, 2}) {
		t.Errorf("with add_eos: %v", got)
	}
}

func TestSPMDecode(t *testing.T) {
	tok := mustNew(t, spmVocab())
	for _, tc := range []struct {
		ids     []int32
		special bool
		want    string
	}{
		{[]int32{267, 259, 259, 261}, false, "a  b"},
		{[]int32{259, 3 + 0xC3, 3 + 0xA9}, false, "é"},
		// llama.cpp strips the space of the first token only: after a BOS
		// (which renders as nothing) the space stays.
		{[]int32{1, 267}, false, " a"},
		{[]int32{1, 267, 2}, true, "<s> a</s>"},
		{[]int32{0, 267}, false, " a"},
		{[]int32{0}, true, "<unk>"},
		{[]int32{270}, false, "<user>"},
		{[]int32{-5, 9999}, false, ""},
	} {
		if got := tok.Decode(tc.ids, DecodeOptions{Special: tc.special}); got != tc.want {
			t.Errorf("Decode(%v, special=%v) = %q, want %q", tc.ids, tc.special, got, tc.want)
		}
	}
}

func TestBPEEncodeDecode(t *testing.T) {
	tok := mustNew(t, bpeVocab("gpt-2"))
	for _, tc := range []struct {
		text string
		o    EncodeOptions
		want []int32
	}{
		{"hello world", EncodeOptions{}, []int32{259, 264}},
		{"hello", EncodeOptions{AddSpecial: true}, []int32{259}}, // gpt-2 adds no BOS
		{"hel", EncodeOptions{}, []int32{256, 'l'}},
		{"<|im_start|>hello", EncodeOptions{ParseSpecial: true}, []int32{266, 259}},
		{"<|endoftext|>", EncodeOptions{ParseSpecial: true}, []int32{265}},
		// <|im_end|> was user-defined in the file; llama.cpp makes it a
		// control token, so it is text unless special tokens are parsed.
		{"<|im_end|>", EncodeOptions{}, []int32{'<', '|', 'i', 'm', '_', 'e', 'n', 'd', '|', '>'}},
		{"<|im_end|>", EncodeOptions{ParseSpecial: true}, []int32{267}},
		{"\xff", EncodeOptions{}, []int32{0xEF, 0xBF, 0xBD}}, // invalid UTF-8 becomes U+FFFD
	} {
		got := tok.Encode(tc.text, tc.o)
		if !equal(got, tc.want) {
			t.Errorf("Encode(%q, %+v) = %v, want %v", tc.text, tc.o, got, tc.want)
		}
	}
	for _, tc := range []struct {
		ids     []int32
		special bool
		want    string
	}{
		{[]int32{259, 264}, false, "hello world"},
		{[]int32{266, 259, 267}, false, "hello"},
		{[]int32{266, 259, 267}, true, "<|im_start|>hello<|im_end|>"},
		// clean_spaces: " ." → ".", " ' " → "'", " 's" → "'s", " 't" stays.
		{[]int32{'a', ' ', '.', ' ', '\'', ' ', 'b', ' ', '\'', 's', ' ', '\'', 't'}, false, "a.'b's 't"},
	} {
		if got := tok.Decode(tc.ids, DecodeOptions{Special: tc.special}); got != tc.want {
			t.Errorf("Decode(%v) = %q, want %q", tc.ids, got, tc.want)
		}
	}
	// qwen2 keeps spaces as they are.
	q := mustNew(t, bpeVocab("qwen2"))
	if got := q.Decode([]int32{'a', ' ', '.'}, DecodeOptions{}); got != "a ." {
		t.Errorf("qwen2 Decode = %q, want %q", got, "a .")
	}
}

func TestSpecialTokens(t *testing.T) {
	tok := mustNew(t, bpeVocab("llama-bpe"))
	if !tok.IsEOG(265) || !tok.IsEOG(267) || tok.IsEOG(266) || tok.IsEOG(259) {
		t.Errorf("IsEOG: endoftext %v im_end %v im_start %v hello %v", tok.IsEOG(265), tok.IsEOG(267), tok.IsEOG(266), tok.IsEOG(259))
	}
	if !tok.IsControl(267) || tok.Type(267) != TypeControl {
		t.Errorf("<|im_end|> not promoted to control: %v", tok.Type(267))
	}
	// EOT is found by text when the file names none: the first of
	// llama.cpp's list that exists.
	if tok.EOT() != 267 {
		t.Errorf("EOT = %d, want 267 (<|im_end|>)", tok.EOT())
	}
	if id, ok := tok.TokenID("<|im_end|>"); !ok || id != 267 {
		t.Errorf("TokenID(<|im_end|>) = %d, %v", id, ok)
	}
	if _, ok := tok.TokenID("nope"); ok {
		t.Error("TokenID found a missing piece")
	}
	if tok.Piece(259) != "hello" || tok.Piece(-1) != "" || tok.Piece(1<<20) != "" {
		t.Errorf("Piece: %q %q", tok.Piece(259), tok.Piece(-1))
	}
	if tok.VocabSize() != 268 || tok.BOS() != -1 || tok.EOS() != 265 || tok.AddBOS() {
		t.Errorf("VocabSize %d BOS %d EOS %d AddBOS %v", tok.VocabSize(), tok.BOS(), tok.EOS(), tok.AddBOS())
	}
	// Longest special token first.
	v := bpeVocab("gpt-2")
	v.Tokens = append(v.Tokens, "<|im", "<|im_start|>x")
	v.Types = append(v.Types, TypeControl, TypeControl)
	long := mustNew(t, v)
	if got := long.Encode("<|im_start|>x<|im_start|>", EncodeOptions{ParseSpecial: true}); !equal(got, []int32{269, 266}) {
		t.Errorf("longest match: %v", got)
	}
}

func TestNewErrors(t *testing.T) {
	bad := func(mut func(*Vocab)) Vocab { v := bpeVocab("gpt-2"); mut(&v); return v }
	for _, tc := range []struct {
		name string
		v    Vocab
		want error
		msg  string
	}{
		{"unknown pre", bad(func(v *Vocab) { v.Pre = "bogus-pre" }), ErrUnsupported, `"bogus-pre"`},
		{"unknown model", bad(func(v *Vocab) { v.Model = "t5" }), ErrUnsupported, `"t5"`},
		{"empty", Vocab{Model: "gpt2"}, ErrInvalidVocab, "no tokens"},
		{"types length", bad(func(v *Vocab) { v.Types = v.Types[:3] }), ErrInvalidVocab, "token types"},
		{"id range", bad(func(v *Vocab) { v.EOS = 100000 }), ErrInvalidVocab, "out of range"},
		{"spm without scores", Vocab{Model: "llama", Tokens: []string{"a"}, BOS: -1, EOS: -1, EOT: -1, EOM: -1, PAD: -1, UNK: -1}, ErrInvalidVocab, "scores"},
	} {
		_, err := New(tc.v)
		if !errorsIs(err, tc.want) || !contains(err, tc.msg) {
			t.Errorf("%s: err = %v, want %v mentioning %s", tc.name, err, tc.want, tc.msg)
		}
	}
}

func TestPhi3StripsAfterSpecialTokens(t *testing.T) {
	v := bpeVocab("gpt-2")
	v.Tokens = append(v.Tokens, "<|end|>", "<|user|>") // 268, 269
	v.Types = append(v.Types, TypeControl, TypeControl)
	v.Name = "Phi-3 mini"
	phi := mustNew(t, v)
	// <|endoftext|> keeps the whitespace after it; <|end|>/<|user|> eat it.
	if got := phi.Encode("<|user|>\nhello<|end|>\n \t<|endoftext|> hello", EncodeOptions{ParseSpecial: true}); !equal(got, []int32{269, 259, 268, 265, 32, 259}) {
		t.Errorf("phi-3 rstrip: %v", got)
	}
	v.Name = "other"
	if got := mustNew(t, v).Encode("<|end|>\nhello", EncodeOptions{ParseSpecial: true}); !equal(got, []int32{268, 10, 259}) {
		t.Errorf("no rstrip: %v", got)
	}
}

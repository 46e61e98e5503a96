// Command diff compares engine/tokenizer with llama.cpp's tokenizer on
// many generated strings per vocabulary: llama.cpp's side is lltok (built
// from ../lltok.cpp against libllama by ../run.sh), fed length-prefixed strings
// on stdin. For each ggml-vocab-*.gguf in -vocab it prints how many
// strings gave the same ids (tokenize with add_special and parse_special
// off, or with -special on) and the same detokenized text, and the first
// differences.
//
//	bench/tokdiff/run.sh [-n 20000] [-seed 1] [-only qwen35] [-special]
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ruvllm/ruvllm/engine/gguf"
	"github.com/ruvllm/ruvllm/engine/tokenizer"
)

func main() {
	lltok := flag.String("lltok", "", "path of the lltok binary (llama.cpp side)")
	dir := flag.String("vocab", "../shared/vocab", "directory of ggml-vocab-*.gguf files")
	n := flag.Int("n", 5000, "generated strings per vocabulary")
	seed := flag.Uint64("seed", 1, "random seed")
	only := flag.String("only", "", "only vocabularies whose file name contains this")
	show := flag.Int("show", 3, "differences to print per vocabulary")
	special := flag.Bool("special", false, "tokenize with add_special and parse_special, detokenize special tokens as text")
	record := flag.String("record", "", "append the generated strings (not the .inp ones) and llama.cpp's ids to this JSONL file (engine/tokenizer/testdata/llamacpp-vectors.jsonl)")
	invalid := flag.Bool("invalid", false, "also generate invalid UTF-8 (llama.cpp decodes overlong forms and surrogates, ruvllm does not)")
	flag.Parse()
	if *lltok == "" {
		fmt.Fprintln(os.Stderr, "tokdiff: -lltok is required (run.sh builds it)")
		os.Exit(2)
	}
	files, _ := filepath.Glob(filepath.Join(*dir, "ggml-vocab-*.gguf"))
	if len(files) == 0 {
		fmt.Fprintf(os.Stderr, "tokdiff: no ggml-vocab-*.gguf in %s\n", *dir)
		os.Exit(2)
	}
	failed := false
	for _, path := range files {
		if *only != "" && !strings.Contains(filepath.Base(path), *only) {
			continue
		}
		ok, err := compare(*lltok, path, generate(path, *n, *seed, *invalid), *show, *special, *record)
		if err != nil {
			fmt.Fprintf(os.Stderr, "tokdiff: %s: %v\n", filepath.Base(path), err)
			failed = true
			continue
		}
		failed = failed || !ok
	}
	if failed {
		os.Exit(1)
	}
}

// compare runs one vocabulary; ok is false when anything differed.
func compare(lltok, path string, inputs []string, show int, special bool, record string) (ok bool, err error) {
	var rec *os.File
	if record != "" {
		if rec, err = os.OpenFile(record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err != nil {
			return false, err
		}
		defer rec.Close()
	}
	f, err := gguf.Open(path)
	if err != nil {
		return false, err
	}
	tok, err := tokenizer.FromGGUF(f)
	f.Close()
	if err != nil {
		return false, err
	}

	mode := "plain"
	if special {
		mode = "special"
	}
	cmd := exec.Command(lltok, path, mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return false, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return false, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return false, err
	}
	go func() {
		w := bufio.NewWriter(stdin)
		for _, s := range inputs {
			binary.Write(w, binary.LittleEndian, uint32(len(s)))
			w.WriteString(s)
		}
		w.Flush()
		stdin.Close()
	}()
	r := bufio.NewReaderSize(stdout, 1<<20)
	idsSame, textSame, shown := 0, 0, 0
	tests := len(testStrings(path))
	for i, s := range inputs {
		want, text, err := readResult(r)
		if err != nil {
			cmd.Process.Kill()
			return false, fmt.Errorf("reading llama.cpp's answer: %w", err)
		}
		if rec != nil && i >= tests {
			if err := writeVector(rec, filepath.Base(path), s, special, want); err != nil {
				return false, err
			}
		}
		got := tok.Encode(s, tokenizer.EncodeOptions{AddSpecial: special, ParseSpecial: special})
		dec := tok.Decode(want, tokenizer.DecodeOptions{Special: special})
		if slices.Equal(got, want) {
			idsSame++
		} else if shown < show {
			shown++
			fmt.Printf("  ids  %q\n       ruvllm    %v\n       llama.cpp %v\n", s, got, want)
		}
		if dec == text {
			textSame++
		} else if shown < show {
			shown++
			fmt.Printf("  text %v\n       ruvllm    %q\n       llama.cpp %q\n", want, dec, text)
		}
	}
	if err := cmd.Wait(); err != nil {
		return false, err
	}
	fmt.Printf("%-32s ids %d/%d  text %d/%d\n", filepath.Base(path), idsSame, len(inputs), textSame, len(inputs))
	return idsSame == len(inputs) && textSame == len(inputs), nil
}

// readResult reads one answer of lltok: a line of ids, then the
// detokenized text as a little-endian u32 length, the bytes and a newline.
func readResult(r *bufio.Reader) ([]int32, string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, "", err
	}
	ids := []int32{}
	for _, f := range strings.Fields(line) {
		id, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, "", err
		}
		ids = append(ids, int32(id))
	}
	var n uint32
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return nil, "", err
	}
	b := make([]byte, n+1)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, "", err
	}
	return ids, string(b[:n]), nil
}

// pieces are what generated strings are made of: the characters where
// pre-tokenizers differ (every kind of space and line break, letters of
// several scripts, combining marks, digits of several systems,
// punctuation and symbols, CJK, emoji, unassigned and private-use code
// points, SentencePiece's ▁) and words that exercise merges.
var pieces = []string{
	" ", " ", " ", "  ", "   ", "\t", "\n", "\n", "\n\n", "\r\n", "\r", "\v", "\f", "\u0085", "\u00a0", "\u1680",
	"\u2002", "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u200b", "\ufeff", "\u2581", "▁▁",
	"a", "e", "s", "t", "Hello", "world", " the", "The", "HTTP", "don't", "I'm", "we'll", "they're", "'s", "'S", "'ll", "'",
	"0", "1", "7", "12", "123", "1234", "2024", "٣", "४", "½", "²", "Ⅻ", "①", "𝟙",
	".", ",", "!", "?", ";", ":", "...", "-", "--", "_", "(", ")", "[", "]", "{", "}", "<", ">", "=", "==", "+=", "$", "^",
	"~", "|", "`", "```", "@", "#", "%", "&", "*", "/", "\\", "\"", "“", "”", "‘", "’", "—", "…", "·", "•", "€", "£", "©", "™",
	"é", "e\u0301", "\u0301", "\u0308", "\u0300\u0301", "ñ", "Ä", "ß", "ø", "œ", "ſ", "Ǆ", "ǅ", "ʔ", "ƻ", "µ", "K", "Ω",
	"α", "Ω", "ς", "д", "Ж", "ԥ", "Ա", "ა", "Ꭰ", "ᏸ", "Ⰰ", "ⲁ", "Ꙁ", "ꭰ", "ﬀ", "Ａ", "ｚ", "！", "／", "：", "～", "、", "。",
	"日本", "語", "中文", "汉字", "한국어", "가", "ㄱ", "ひらがな", "カタカナ", "ｶﾀｶﾅ", "ไทย", "हिन्दी", "বাংলা", "العربية", "עברית",
	"ក", "ា", "ន់", "𐐀", "𐑏", "𞤀", "𠀀", "𪛖", "\U0002EBF0", "\u2ffc", "\u31ef", "\U000E0001", "\ue000", "\U0010FFFD",
	"\u0378", "\U0001F999", "🦙", "😀", "👍🏽", "👨‍👩‍👧", "🇩🇪", "\x00", "\x01", "\x1c", "\x7f", "<s>", "</s>", "<|endoftext|>",
	"<|im_start|>", "<unk>", "[INST]", "<eos>", "<bos>", "<start_of_turn>", "<|turn>", "<turn|>", "<|tool_response>",
	"<|channel|>", "<|end|>", "<mask>", "<pad>", "<0x41>", "<|fim_prefix|>", "<fim_middle>", "<|file_sep|>",
}

// malformed are invalid UTF-8 sequences that llama.cpp decodes anyway:
// overlong forms and surrogates (but nothing above U+10FFFF, which makes
// llama.cpp abort).
var malformed = []string{"\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xE0\x9F\xBF", "\xED\xA0\x80", "\xED\xBF\xBF",
	"\xF0\x80\x80\x80", "\xF0\x8F\xBF\xBF", "\xC2", "\xE2\x82", "\xF0\x9F\x98"}

// generate returns n strings for one vocabulary: its .inp test strings,
// then random concatenations of pieces (and, now and then, random valid
// code points and pieces of the test strings, and with invalid stray
// bytes).
func generate(path string, n int, seed uint64, invalid bool) []string {
	tests := testStrings(path)
	rng := rand.New(rand.NewPCG(seed, 0x70c))
	out := append([]string(nil), tests...)
	for len(out) < n {
		var b strings.Builder
		k := 1 + rng.IntN(12)
		if rng.IntN(10) == 0 {
			k = 50 + rng.IntN(150) // long words and lines: the merge heap's side
		}
		for ; k > 0; k-- {
			switch x := rng.IntN(20); {
			case x == 0 && len(tests) > 0:
				t := []rune(tests[rng.IntN(len(tests))])
				i := rng.IntN(len(t) + 1)
				b.WriteString(string(t[i:min(len(t), i+rng.IntN(16))]))
			case x == 2 && invalid:
				b.WriteByte(byte(0x80 + rng.IntN(0x75))) // continuation and lead bytes up to 0xF4
			case x == 3 && invalid:
				b.WriteString(malformed[rng.IntN(len(malformed))])
			case x == 1:
				c := rune(rng.IntN(0x30000))
				if c >= 0xD800 && c < 0xE000 {
					c = 'x'
				}
				b.WriteRune(c)
			default:
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
		}
		out = append(out, b.String())
	}
	return out
}

// testStrings returns the strings of the vocabulary's .inp file.
func testStrings(path string) []string {
	b, err := os.ReadFile(path + ".inp")
	if err != nil {
		return nil
	}
	tests := strings.Split(string(b), "\n__ggml_vocab_test__\n")
	return tests[:len(tests)-1]
}

// vector is one line of the recorded JSONL: the text (or, when it is not
// valid UTF-8, its bytes in hex), whether special tokens were parsed and
// added, and llama.cpp's ids.
type vector struct {
	Vocab   string  `json:"vocab"`
	Text    string  `json:"text,omitempty"`
	TextHex string  `json:"text_hex,omitempty"`
	Special bool    `json:"special,omitempty"`
	IDs     []int32 `json:"ids"`
}

func writeVector(w io.Writer, vocab, s string, special bool, ids []int32) error {
	v := vector{Vocab: vocab, Special: special, IDs: ids}
	if utf8.ValidString(s) {
		v.Text = s
	} else {
		v.TextHex = hex.EncodeToString([]byte(s))
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

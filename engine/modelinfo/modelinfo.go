// Package modelinfo summarises a GGUF model file for people and tools:
// architecture, parameter count, quantization mix, hyperparameters,
// tokenizer, chat template, remaining metadata and the tensor table. It
// backs `ruvllm inspect`.
package modelinfo

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/ruvllm/ruvllm/engine/chat"
	"github.com/ruvllm/ruvllm/engine/gguf"
)

// Summary is everything inspect reports; its JSON form is `inspect --json`.
// ChatFormat says which chat template chat requests use: the file's own
// (size, hash, variants), a built-in fallback, or why there is none.
type Summary struct {
	Path         string         `json:"path,omitempty"`
	FileSize     int64          `json:"file_size"`
	Version      uint32         `json:"gguf_version"`
	Architecture string         `json:"architecture"`
	Name         string         `json:"name,omitempty"`
	Parameters   uint64         `json:"parameters"`
	Alignment    uint64         `json:"alignment"`
	DataOffset   int64          `json:"data_offset"`
	QuantMix     []TypeUsage    `json:"quant_mix"`
	Hyper        []Entry        `json:"hyperparameters"`
	Tokenizer    Tokenizer      `json:"tokenizer"`
	ChatTemplate string         `json:"chat_template,omitempty"`
	ChatFormat   string         `json:"chat_format"`
	Metadata     []Entry        `json:"metadata"`
	Tensors      []TensorRecord `json:"tensors"`
}

// TypeUsage is how many tensors, elements and bytes use one element type.
type TypeUsage struct {
	Type    string `json:"type"`
	Tensors int    `json:"tensors"`
	Params  uint64 `json:"parameters"`
	Bytes   int64  `json:"bytes"`
}

// Entry is one metadata key with its value in a JSON-friendly form: scalars
// as themselves, arrays of more than MaxArray elements abbreviated to their
// first elements (Len gives the full length).
type Entry struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Len   int    `json:"len,omitempty"` // array length
	Value any    `json:"value"`
}

// Tokenizer is the tokenizer's description from tokenizer.* metadata.
type Tokenizer struct {
	Model     string           `json:"model,omitempty"`
	Pre       string           `json:"pre,omitempty"`
	VocabSize int              `json:"vocab_size"`
	Merges    int              `json:"merges,omitempty"`
	Special   map[string]int64 `json:"special_ids,omitempty"` // bos, eos, unknown, padding, ...
	// SpecialText maps the special ids to their token text.
	SpecialText map[string]string `json:"special_tokens,omitempty"`
	AddBOS      *bool             `json:"add_bos,omitempty"`
	AddEOS      *bool             `json:"add_eos,omitempty"`
}

// TensorRecord is one row of the tensor table.
type TensorRecord struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Shape  []uint64 `json:"shape"`
	Offset uint64   `json:"offset"`
	Bytes  int64    `json:"bytes"`
}

// MaxArray is how many array elements an Entry keeps.
const MaxArray = 8

// hyperKeys are the <arch>.* keys shown as hyperparameters, in display order.
var hyperKeys = []string{
	"context_length", "embedding_length", "block_count", "feed_forward_length",
	"attention.head_count", "attention.head_count_kv", "attention.key_length", "attention.value_length",
	"attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon", "attention.sliding_window",
	"rope.dimension_count", "rope.freq_base", "rope.scaling.type", "rope.scaling.factor",
	"rope.scaling.original_context_length", "attn_logit_softcapping", "final_logit_softcapping",
	"expert_count", "expert_used_count", "vocab_size",
}

// specialKeys name tokenizer.ggml.<name>_token_id keys.
var specialKeys = []string{"bos", "eos", "unknown", "padding", "separator", "mask", "eot", "eom"}

// Describe summarises f. path is only recorded.
func Describe(f *gguf.File, path string) Summary {
	s := Summary{
		Path: path, FileSize: f.Size, Version: f.Version, Architecture: f.Architecture(),
		Alignment: f.Alignment, DataOffset: f.DataOffset,
	}
	s.Name, _ = f.String("general.name")
	shown := map[string]bool{"general.architecture": true, "general.name": true, "tokenizer.chat_template": true}

	mix := map[string]*TypeUsage{}
	for _, t := range f.Tensors {
		n := t.Elements()
		s.Parameters += n
		u := mix[t.Type.String()]
		if u == nil {
			u = &TypeUsage{Type: t.Type.String()}
			mix[u.Type] = u
		}
		u.Tensors++
		u.Params += n
		u.Bytes += t.Size
		s.Tensors = append(s.Tensors, TensorRecord{Name: t.Name, Type: t.Type.String(), Shape: t.Shape, Offset: t.Offset, Bytes: t.Size})
	}
	for _, u := range mix {
		s.QuantMix = append(s.QuantMix, *u)
	}
	slices.SortFunc(s.QuantMix, func(a, b TypeUsage) int { return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Type, b.Type)) })

	for _, k := range hyperKeys {
		key := s.Architecture + "." + k
		if v, ok := f.Get(key); ok {
			s.Hyper = append(s.Hyper, entry(key, v))
			shown[key] = true
		}
	}

	tk := &s.Tokenizer
	tk.Model, _ = f.String("tokenizer.ggml.model")
	tk.Pre, _ = f.String("tokenizer.ggml.pre")
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	tk.VocabSize = len(tokens)
	if v, ok := f.Get("tokenizer.ggml.merges"); ok {
		tk.Merges = v.Len()
	}
	for _, name := range specialKeys {
		key := "tokenizer.ggml." + name + "_token_id"
		if id, ok := f.Int(key); ok {
			if tk.Special == nil {
				tk.Special, tk.SpecialText = map[string]int64{}, map[string]string{}
			}
			tk.Special[name] = id
			if id >= 0 && id < int64(len(tokens)) {
				tk.SpecialText[name] = tokens[id]
			}
			shown[key] = true
		}
	}
	if b, ok := f.Bool("tokenizer.ggml.add_bos_token"); ok {
		tk.AddBOS = &b
		shown["tokenizer.ggml.add_bos_token"] = true
	}
	if b, ok := f.Bool("tokenizer.ggml.add_eos_token"); ok {
		tk.AddEOS = &b
		shown["tokenizer.ggml.add_eos_token"] = true
	}
	for _, k := range []string{"model", "pre"} {
		shown["tokenizer.ggml."+k] = true
	}
	s.ChatTemplate, _ = f.String("tokenizer.chat_template")
	s.ChatFormat = chatFormat(f, s.Architecture)
	for _, kv := range f.KV {
		if strings.HasPrefix(kv.Key, chat.TemplateKey+".") {
			shown[kv.Key] = true // named variants: ChatFormat lists them
		}
	}

	for _, kv := range f.KV {
		if !shown[kv.Key] {
			s.Metadata = append(s.Metadata, entry(kv.Key, kv.Value))
		}
	}
	return s
}

// chatFormat describes the chat template a model's chat requests use.
func chatFormat(f *gguf.File, arch string) string {
	src, variants := chat.TemplatesFromGGUF(f)
	t, err := chat.ForModel(src, variants, arch, chat.SpecialTokensFromGGUF(f))
	switch {
	case err == nil:
		return t.Describe()
	case strings.TrimSpace(src) != "":
		return "unusable: " + err.Error()
	}
	return "none: the file has no chat template and no built-in family fits its architecture"
}

func entry(key string, v gguf.Value) Entry {
	e := Entry{Key: key, Type: v.Type().String()}
	if !v.IsArray() {
		e.Value = JSONSafe(v.Interface())
		return e
	}
	e.Type = "array[" + v.ElemType().String() + "]"
	e.Len = v.Len()
	vals := make([]any, 0, min(e.Len, MaxArray))
	for i := 0; i < e.Len && i < MaxArray; i++ {
		x, _ := v.Index(i)
		if x.IsArray() {
			vals = append(vals, x.Format(MaxArray))
		} else {
			vals = append(vals, JSONSafe(x.Interface()))
		}
	}
	e.Value = vals
	return e
}

// JSONSafe turns non-finite floats, which JSON cannot carry, into strings
// ("NaN", "+Inf", "-Inf"), in a metadata value or the elements of an
// array value (recursively); other values are returned as they are. A
// model file's metadata may hold any float, and encoding one of these
// failed the whole response.
func JSONSafe(x any) any {
	var f float64
	switch v := x.(type) {
	case float32:
		f = float64(v)
	case float64:
		f = v
	case []any:
		for i, e := range v {
			v[i] = JSONSafe(e)
		}
		return v
	case []float32:
		return safeFloats(v)
	case []float64:
		return safeFloats(v)
	default:
		return x
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	return x
}

// safeFloats returns v as is when every element is finite, else as []any
// with the non-finite ones as strings.
func safeFloats[F float32 | float64](v []F) any {
	for _, e := range v {
		if math.IsNaN(float64(e)) || math.IsInf(float64(e), 0) {
			out := make([]any, len(v))
			for j, e := range v {
				out[j] = JSONSafe(e)
			}
			return out
		}
	}
	return v
}

// HumanCount renders a count like 18.9M or 1.2B.
func HumanCount(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// HumanBytes renders a byte size in binary units.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// templateLines is how much of the chat template the text form shows.
const templateLines = 6

// WriteText prints the summary for people.
func (s Summary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	if s.Path != "" {
		p("file:\t%s\n", printable(s.Path, false))
	}
	p("architecture:\t%s\n", printable(s.Architecture, false))
	if s.Name != "" {
		p("name:\t%s\n", printable(s.Name, false))
	}
	p("parameters:\t%s (%d)\n", HumanCount(s.Parameters), s.Parameters)
	p("file size:\t%s (%d bytes)\n", HumanBytes(s.FileSize), s.FileSize)
	p("gguf:\tv%d, alignment %d, data at %d, %d tensors\n", s.Version, s.Alignment, s.DataOffset, len(s.Tensors))
	p("\nquant mix:\n")
	for _, u := range s.QuantMix {
		p("  %s\t%d tensors\t%s params\t%s\n", u.Type, u.Tensors, HumanCount(u.Params), HumanBytes(u.Bytes))
	}
	if len(s.Hyper) > 0 {
		p("\nhyperparameters:\n")
		for _, e := range s.Hyper {
			p("  %s\t%s\n", printable(strings.TrimPrefix(e.Key, s.Architecture+"."), false), printable(fmt.Sprint(e.Value), false))
		}
	}
	t := s.Tokenizer
	p("\ntokenizer:\n")
	p("  model\t%s\n", printable(orDash(t.Model), false))
	p("  pre\t%s\n", printable(orDash(t.Pre), false))
	p("  vocab size\t%d\n", t.VocabSize)
	if t.Merges > 0 {
		p("  merges\t%d\n", t.Merges)
	}
	for _, name := range specialKeys {
		if id, ok := t.Special[name]; ok {
			p("  %s id\t%d %q\n", name, id, t.SpecialText[name])
		}
	}
	if t.AddBOS != nil {
		p("  add bos\t%v\n", *t.AddBOS)
	}
	if t.AddEOS != nil {
		p("  add eos\t%v\n", *t.AddEOS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nchat format: %s\n", s.ChatFormat)
	if s.ChatTemplate != "" {
		lines := strings.Split(s.ChatTemplate, "\n")
		fmt.Fprintf(w, "\nchat template (%s, %d bytes):\n", plural(len(lines), "line"), len(s.ChatTemplate))
		for i, l := range lines {
			if i == templateLines {
				fmt.Fprintf(w, "  … (%d more lines)\n", len(lines)-templateLines)
				break
			}
			if len(l) > 160 {
				l = l[:160] + "…"
			}
			fmt.Fprintf(w, "  %s\n", printable(l, true))
		}
	}
	if len(s.Metadata) > 0 {
		fmt.Fprintf(w, "\nmetadata:\n")
		for _, e := range s.Metadata {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", printable(e.Key, false), e.Type, formatEntry(e))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\ntensors:\n")
	fmt.Fprintf(tw, "  name\ttype\tshape\toffset\tbytes\n")
	for _, r := range s.Tensors {
		fmt.Fprintf(tw, "  %s\t%s\t%v\t%d\t%d\n", printable(r.Name, false), r.Type, r.Shape, r.Offset, r.Bytes)
	}
	return tw.Flush()
}

func formatEntry(e Entry) string {
	if e.Len == 0 && !strings.HasPrefix(e.Type, "array") {
		if s, ok := e.Value.(string); ok {
			if len(s) > 120 {
				s = s[:120] + "…"
			}
			return fmt.Sprintf("%q", s)
		}
		return fmt.Sprint(e.Value)
	}
	vals := e.Value.([]any)
	parts := make([]string, len(vals))
	for i, v := range vals {
		if s, ok := v.(string); ok {
			parts[i] = fmt.Sprintf("%q", s)
		} else {
			parts[i] = fmt.Sprint(v)
		}
	}
	more := ""
	if e.Len > len(vals) {
		more = fmt.Sprintf(", … (%d total)", e.Len)
	}
	return "[" + strings.Join(parts, ", ") + more + "]"
}

// printable escapes the control characters of a string from the file (a
// tab too unless keepTab), so that a model's name, keys or template cannot
// send escape sequences to the terminal (clear it, retitle it, hide text)
// nor break the table's columns.
func printable(s string, keepTab bool) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && !(keepTab && r == '\t') }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) && !(keepTab && r == '\t') {
			q := strconv.QuoteRune(r) // '\x1b', '\n'
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// fileTypeNames are llama.cpp's general.file_type values (enum llama_ftype).
var fileTypeNames = map[uint64]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0",
}

// FileTypeName is the name of a general.file_type value ("Q4_K_M"), or ""
// for one llama.cpp does not define.
func FileTypeName(ft uint64) string { return fileTypeNames[ft] }

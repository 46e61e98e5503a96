package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ruvllm/ruvllm/engine/grammar"
)

// xmlCalls is a call format that writes each argument as a tagged value
// instead of one JSON object: a string argument as its raw text, any other
// value as JSON. Three families write calls this way, each with its own
// tags (the layouts below): Qwen3-Coder and Qwen3.5, NVIDIA Nemotron 3 and
// StepFun 3.5
//
//	<tool_call>
//	<function=get_weather>
//	<parameter=city>
//	Oslo
//	</parameter>
//	</function>
//	</tool_call>
//
// GLM 4.5–4.7 and Laguna
//
//	<tool_call>get_weather
//	<arg_key>city</arg_key>
//	<arg_value>Oslo</arg_value>
//	</tool_call>
//
// ByteDance Seed-OSS (as Qwen3-Coder, in <seed:tool_call>, values
// without the newlines around them), and MiniMax M2
//
//	<minimax:tool_call>
//	<invoke name="get_weather">
//	<parameter name="city">Oslo</parameter>
//	</invoke>
//	</minimax:tool_call>
//
// Their templates render calls back the same way, and they were trained to
// write them so: the Hermes JSON inside <tool_call> held them to a format
// they never saw. Whether an argument's text is a string or JSON depends
// on its tool's schema, so Bind gives the format the tools before Parse.
type xmlCalls struct {
	xmlLayout
	// params is each bound tool's parameters in schema order.
	params map[string][]xmlParam
}

// xmlLayout is the text one family writes around a call's parts.
type xmlLayout struct {
	name string
	// blockOpen and blockClose surround all of a reply's calls (MiniMax);
	// empty where each call has its own tags only.
	blockOpen, blockClose string
	callOpen              string // before the function's name
	nameStop              string // ends the name
	nameEnd               string // the rest of the text after the name
	paramOpen             string // before an argument's name
	keyStop               string // ends the argument's name
	keyEnd                string // the rest of the text before the value
	endTag                string // ends the value (the value never holds it)
	valueEnd              string // the text after the value, endTag within it
	callClose             string // after the arguments
	// specials are the tags that are control tokens in the family's
	// vocabulary (the grammar takes either the token or the same text).
	specials []string
	// looseNewlines lets the grammar write none, one or two for each of
	// the layout's newlines: the family's templates differ in them (GLM
	// 4.6 writes a newline between tags, Laguna and Spark none, Ling 3.0
	// two after the name of a call without arguments).
	looseNewlines bool
}

var (
	qwen3CoderLayout = xmlLayout{name: "qwen3-coder",
		callOpen: "<tool_call>\n<function=", nameStop: ">", nameEnd: ">\n",
		paramOpen: "<parameter=", keyStop: ">", keyEnd: ">\n",
		endTag: "</parameter>", valueEnd: "\n</parameter>\n",
		callClose: "</function>\n</tool_call>",
		specials:  []string{"<tool_call>", "</tool_call>"}}
	glmLayout = xmlLayout{name: "glm",
		callOpen: "<tool_call>", nameStop: "\n", nameEnd: "\n",
		paramOpen: "<arg_key>", keyStop: "</arg_key>", keyEnd: "</arg_key>\n<arg_value>",
		endTag: "</arg_value>", valueEnd: "</arg_value>\n",
		callClose:     "</tool_call>",
		specials:      []string{"<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"},
		looseNewlines: true}
	seedLayout = xmlLayout{name: "seed",
		callOpen: "<seed:tool_call>\n<function=", nameStop: ">", nameEnd: ">\n",
		paramOpen: "<parameter=", keyStop: ">", keyEnd: ">",
		endTag: "</parameter>", valueEnd: "</parameter>\n",
		callClose: "</function>\n</seed:tool_call>",
		specials:  []string{"<seed:tool_call>", "</seed:tool_call>"}}
	minimaxLayout = xmlLayout{name: "minimax",
		blockOpen: "<minimax:tool_call>\n", blockClose: "</minimax:tool_call>",
		callOpen: `<invoke name="`, nameStop: `"`, nameEnd: "\">\n",
		paramOpen: `<parameter name="`, keyStop: `"`, keyEnd: `">`,
		endTag: "</parameter>", valueEnd: "</parameter>\n",
		callClose: "</invoke>\n",
		specials:  []string{"<minimax:tool_call>", "</minimax:tool_call>"}}
)

// xmlParam is one parameter of a tool: its name, its schema (with the
// tool's definitions, so that its references resolve on its own), whether
// a call must give it, and whether its value is written as raw text.
type xmlParam struct {
	name     string
	schema   json.RawMessage
	required bool
	text     bool
}

// Name implements Format.
func (x xmlCalls) Name() string { return x.name }

// Native implements Format: the templates render tools and calls.
func (xmlCalls) Native() bool { return true }

// Triggers implements Format.
func (x xmlCalls) Triggers() []string { return []string{x.trigger()} }

func (x xmlCalls) trigger() string {
	if x.blockOpen != "" {
		return strings.TrimSpace(x.blockOpen)
	}
	first, _, _ := strings.Cut(x.callOpen, "\n")
	return first
}

// bind returns the format with tools' parameters, for Parse.
func (x xmlCalls) bind(tools []Tool) Format {
	x.params = map[string][]xmlParam{}
	for _, t := range tools {
		x.params[t.Name] = xmlParams(t)
	}
	return x
}

// xmlParams lists t's parameters in the order its schema gives them. A
// schema whose top level has no properties (a bare object, or a
// combination the arguments cannot be read from one by one) has none:
// such a tool is called without arguments. A property written twice is
// one parameter, its last schema read as a JSON decoder reads it (the
// grammar would otherwise ask for it twice, and Parse refuses that).
func xmlParams(t Tool) []xmlParam {
	var top map[string]json.RawMessage
	if json.Unmarshal(t.Parameters, &top) != nil {
		return nil
	}
	var required []string
	json.Unmarshal(top["required"], &required)
	isRequired := make(map[string]bool, len(required)) // a set: a schema may list 100,000
	for _, r := range required {
		isRequired[r] = true
	}
	names, schemas := orderedObject(top["properties"])
	var ps []xmlParam
	at := map[string]int{}
	for i, name := range names {
		p := xmlParam{name: name, schema: withDefs(schemas[i], top), required: isRequired[name]}
		p.text = textValued(p.schema)
		if j, ok := at[name]; ok {
			ps[j] = p
			continue
		}
		at[name] = len(ps)
		ps = append(ps, p)
	}
	return ps
}

// orderedObject returns the keys and values of a JSON object in the order
// they are written.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil
	}
	var keys []string
	var values []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return nil, nil
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, nil
		}
		keys, values = append(keys, key), append(values, v)
	}
	return keys, values
}

// withDefs is a parameter's schema with the tool schema's $defs and
// definitions beside it, so that its "#/$defs/..." references name them
// when the parameter is compiled as a schema of its own; a schema that
// holds no reference (mayRefer) is left as it is.
func withDefs(schema json.RawMessage, top map[string]json.RawMessage) json.RawMessage {
	s := bytes.TrimSpace(schema)
	if len(s) < 2 || s[0] != '{' || !mayRefer(s) {
		return schema // true/false schemas, schemas without a reference
	}
	var own map[string]json.RawMessage
	if json.Unmarshal(s, &own) != nil {
		return schema
	}
	head := ""
	for _, k := range []string{"$defs", "definitions"} {
		if top[k] != nil && own[k] == nil {
			head += fmt.Sprintf("%q:%s,", k, top[k])
		}
	}
	if head == "" {
		return schema
	}
	rest := bytes.TrimSpace(s[1:])
	if rest[0] == '}' {
		return json.RawMessage("{" + strings.TrimSuffix(head, ",") + "}")
	}
	return json.RawMessage("{" + head + string(rest))
}

// mayRefer reports whether a schema's text may hold a "$ref" key (written
// as it is or with its "$" escaped).
func mayRefer(schema []byte) bool {
	return bytes.Contains(schema, []byte(`"$ref"`)) || bytes.Contains(schema, []byte(`\u0024`))
}

// maxCopiedDefs bounds the bytes of definitions an XML format's grammar
// copies into its parameters' schemas (withDefs: each parameter that may
// refer to them is compiled as a schema of its own): a tool of a few
// megabytes of $defs and thousands of parameters that refer to them stood
// for gigabytes of copies.
const maxCopiedDefs = 32 << 20

// checkCopiedDefs refuses a tool whose definitions withDefs would copy
// into its parameters past maxCopiedDefs bytes.
func checkCopiedDefs(t Tool) error {
	var top map[string]json.RawMessage
	if json.Unmarshal(t.Parameters, &top) != nil {
		return nil
	}
	defs := len(top["$defs"]) + len(top["definitions"])
	if defs == 0 {
		return nil
	}
	_, schemas := orderedObject(top["properties"])
	referring := 0
	for _, p := range schemas {
		if mayRefer(p) {
			referring++
		}
	}
	if defs*referring > maxCopiedDefs {
		return fmt.Errorf("%w: tool %q: its definitions (%d bytes) would be copied into each of the %d parameters that refer to them, more than the %d bytes a call's grammar in this model's format takes",
			ErrBadTool, t.Name, defs, referring, maxCopiedDefs)
	}
	return nil
}

// maxRefHops bounds the references followed to read one schema's type
// (a definition may name itself).
const maxRefHops = 32

// maxSchemaVisits bounds the subschemas textValued reads for one
// parameter: definitions that are anyOf of references to others share
// their branches, and a few of them, nested, stood for billions of
// branches to read (a schema beyond the bound is read as text).
const maxSchemaVisits = 1024

// textValued reports whether a parameter's value is written as raw text:
// a schema that allows strings (or gives no type), through its "$ref" to
// the tool's definitions (which withDefs put beside it) and the branches
// of its anyOf or oneOf (text when one of them is: Optional[int], an
// anyOf of an integer and null, is JSON). Values of every other type are
// JSON.
func textValued(schema json.RawMessage) bool {
	budget := maxSchemaVisits
	return textValuedIn(schema, localDefs(schema), &budget)
}

// textValuedIn is textValued of schema, its references resolved in defs
// (localDefs), reading at most *budget more subschemas.
func textValuedIn(schema json.RawMessage, defs map[string]json.RawMessage, budget *int) bool {
	if *budget <= 0 {
		return true
	}
	*budget--
	var s struct {
		Type  json.RawMessage   `json:"type"`
		Const json.RawMessage   `json:"const"`
		Enum  []json.RawMessage `json:"enum"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
	}
	schema, resolved := resolveRefs(schema, defs)
	if !resolved || json.Unmarshal(schema, &s) != nil {
		return true
	}
	if branches := append(s.AnyOf, s.OneOf...); len(s.Type) == 0 && len(branches) > 0 {
		for _, b := range branches {
			if textValuedIn(b, defs, budget) {
				return true
			}
		}
		return false
	}
	var one string
	var many []string
	switch {
	case json.Unmarshal(s.Type, &one) == nil:
		return one == "string"
	case json.Unmarshal(s.Type, &many) == nil:
		for _, t := range many {
			if t == "string" {
				return true
			}
		}
		return false
	}
	for _, v := range append(s.Enum, s.Const) {
		if len(v) > 0 && v[0] != '"' {
			return false // an untyped enum of numbers, say: JSON
		}
	}
	return true
}

// resolveRefs follows schema's references (a schema that gives a "$ref"
// and no type) to the definitions they name in defs (localDefs), at most
// maxRefHops of them: the schema it ends at, and false where a reference
// names nothing or the chain does not end (the schema it stopped at,
// then).
func resolveRefs(schema json.RawMessage, defs map[string]json.RawMessage) (json.RawMessage, bool) {
	for range maxRefHops {
		var r struct {
			Type json.RawMessage `json:"type"`
			Ref  string          `json:"$ref"`
		}
		if json.Unmarshal(schema, &r) != nil || len(r.Type) > 0 || r.Ref == "" {
			return schema, true
		}
		def, ok := defs[r.Ref]
		if !ok {
			return schema, false
		}
		schema = def
	}
	return schema, false
}

// localDefs reads the definitions a schema's local references name, by
// the reference ("#/$defs/NAME" and "#/definitions/NAME", the name
// escaped as a JSON pointer escapes it), once: resolving a reference
// parsed the whole schema again at every hop.
func localDefs(root json.RawMessage) map[string]json.RawMessage {
	var top map[string]json.RawMessage
	if json.Unmarshal(root, &top) != nil {
		return nil
	}
	escape := strings.NewReplacer("~", "~0", "/", "~1")
	out := map[string]json.RawMessage{}
	for _, k := range []string{"$defs", "definitions"} {
		var defs map[string]json.RawMessage
		if json.Unmarshal(top[k], &defs) != nil {
			continue
		}
		for name, d := range defs {
			out["#/"+k+"/"+escape.Replace(name)] = d
		}
	}
	return out
}

// marks is text with the family's control tokens matched as specials.
func (x xmlCalls) marks(text string) grammar.Part {
	var parts []grammar.Part
	for text != "" {
		at, which := len(text), ""
		for _, s := range x.specials {
			if i := strings.Index(text, s); i >= 0 && i < at {
				at, which = i, s
			}
		}
		if at > 0 {
			parts = append(parts, x.lit(text[:at]))
		}
		if which == "" {
			break
		}
		parts = append(parts, grammar.Special(which))
		text = text[at+len(which):]
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return grammar.Seq(parts...)
}

// lit is literal layout text; with loose newlines, each newline in it may
// be left out.
func (x xmlCalls) lit(text string) grammar.Part {
	if !x.looseNewlines || !strings.Contains(text, "\n") {
		return grammar.Lit(text)
	}
	var parts []grammar.Part
	for i, piece := range strings.Split(text, "\n") {
		if i > 0 {
			// None, one or two: Ling 3.0 writes a call without
			// arguments as name, two newlines, </tool_call>.
			parts = append(parts, grammar.Repeat(grammar.Lit("\n"), 0, 2))
		}
		if piece != "" {
			parts = append(parts, grammar.Lit(piece))
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return grammar.Seq(parts...)
}

// value is the grammar of one parameter's value: JSON under its schema,
// or, for text, any text without the tag that ends it (an enum or const
// of strings, typed "string" or untyped: exactly those strings).
func (x xmlCalls) value(p xmlParam) grammar.Part {
	if !p.text {
		return grammar.JSONValue(p.schema, grammar.JSONOptions{})
	}
	schema, _ := resolveRefs(p.schema, localDefs(p.schema)) // a reference to a string enum: its words
	var s struct {
		Type  json.RawMessage   `json:"type"`
		Const *string           `json:"const"`
		Enum  []json.RawMessage `json:"enum"`
	}
	json.Unmarshal(schema, &s)
	var words []string
	if s.Const != nil {
		words = []string{*s.Const}
	}
	for _, e := range s.Enum {
		var w string
		if json.Unmarshal(e, &w) != nil {
			words = nil // an enum of mixed values: any text
			break
		}
		words = append(words, w)
	}
	if len(words) > 0 && (len(s.Type) == 0 || string(s.Type) == `"string"`) {
		var alts []grammar.Part
		for _, w := range words {
			if !strings.Contains(w, x.endTag) {
				alts = append(alts, grammar.Lit(w))
			}
		}
		if len(alts) > 0 {
			return grammar.Choice(alts...)
		}
	}
	return grammar.Without(x.endTag)
}

// Grammar implements Format: each call names one of the tools and gives
// its parameters in their schema's order, the required ones always.
func (x xmlCalls) Grammar(tools []Tool, required, parallel bool) (grammar.Part, []string) {
	var alts []grammar.Part
	for _, t := range tools {
		seq := []grammar.Part{grammar.Lit(t.Name), x.marks(x.nameEnd)}
		params, bound := x.params[t.Name]
		if !bound {
			params = xmlParams(t)
		}
		for _, p := range params {
			arg := grammar.Seq(x.marks(x.paramOpen), grammar.Lit(p.name), x.marks(x.keyEnd), x.value(p), x.marks(x.valueEnd))
			if !p.required {
				arg = grammar.Opt(arg)
			}
			seq = append(seq, arg)
		}
		alts = append(alts, grammar.Seq(seq...))
	}
	one := grammar.Seq(x.marks(x.callOpen), grammar.Choice(alts...), x.marks(x.callClose))
	max := -1
	if !parallel {
		max = 1
	}
	// The separator may be left out (StepFun's template writes none).
	calls := grammar.Repeat(one, 1, max, grammar.Opt(x.marks("\n")))
	if x.blockOpen != "" {
		calls = grammar.Seq(x.marks(x.blockOpen), calls, x.marks(x.blockClose))
	}
	return calls, x.Triggers()
}

// Parse implements Format. It reads the tags leniently (white space
// between them may differ from the layout's); a value is the text up to
// its end tag, less the one newline the layout puts on either side. A
// call the length limit cut short is dropped with an error, the complete
// ones before it kept.
func (x xmlCalls) Parse(text string) (string, []Call, error) {
	i := strings.Index(text, x.trigger())
	if i < 0 {
		return text, nil, nil
	}
	content := strings.TrimRight(text[:i], " \t\r\n")
	rest := text[i:]
	var calls []Call
	inBlock := false
	for {
		rest = strings.TrimLeft(rest, " \t\r\n")
		if x.blockOpen != "" {
			if r, ok := cutTags(rest, x.blockClose); ok && inBlock {
				rest, inBlock = r, false
				continue
			}
			if r, ok := cutTags(rest, x.blockOpen); ok && !inBlock {
				rest, inBlock = r, true
				continue
			}
		}
		if rest == "" {
			if inBlock {
				return content, calls, errors.New("tool calls end without " + x.blockClose)
			}
			return content, calls, nil
		}
		c, r, err := x.parseCall(rest)
		if err != nil {
			return content, calls, err
		}
		calls, rest = append(calls, c), r
	}
}

// parseCall reads one call from the start of text.
func (x xmlCalls) parseCall(text string) (Call, string, error) {
	r, ok := cutTags(text, x.callOpen)
	if !ok {
		return Call{}, "", fmt.Errorf("text after the tool calls: %q", truncate(text, 20))
	}
	// The name ends at its stop or at the next tag (GLM's call without
	// arguments: <tool_call>name</tool_call>).
	end, skip := strings.Index(r, x.nameStop), len(x.nameStop)
	if lt := strings.IndexByte(r, '<'); lt >= 0 && (end < 0 || lt < end) {
		end, skip = lt, 0
	}
	if end < 0 || strings.TrimSpace(r[:end]) == "" {
		return Call{}, "", errors.New("tool call has no name")
	}
	name, r := strings.TrimSpace(r[:end]), r[end+skip:]
	if r, ok = cutTags(r, x.nameEnd[len(x.nameStop):]); !ok {
		return Call{}, "", fmt.Errorf("tool call %s: its name is not closed", name)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	seen := map[string]bool{}
	for {
		if after, ok := cutTags(r, x.callClose); ok {
			b.WriteByte('}')
			return Call{Name: name, Arguments: json.RawMessage(b.Bytes())}, after, nil
		}
		if r, ok = cutTags(r, x.paramOpen); !ok {
			return Call{}, "", fmt.Errorf("tool call %s: neither an argument nor its end", name)
		}
		var key string
		if key, r, ok = x.cutKey(name, r); !ok {
			return Call{}, "", fmt.Errorf("tool call %s: an argument without a name", name)
		}
		if r, ok = cutTags(r, x.keyEnd[len(x.keyStop):]); !ok {
			return Call{}, "", fmt.Errorf("tool call %s: argument %s: its name is not closed", name, key)
		}
		var raw string
		if raw, r, ok = x.cutValue(name, key, r); !ok {
			return Call{}, "", fmt.Errorf("tool call %s: argument %s has no end", name, key)
		}
		if strings.HasSuffix(x.keyEnd, "\n") {
			raw = strings.TrimPrefix(raw, "\n")
		}
		if strings.HasPrefix(x.valueEnd, "\n") {
			raw = strings.TrimSuffix(raw, "\n")
		}
		if seen[key] {
			return Call{}, "", fmt.Errorf("tool call %s: argument %s is given twice", name, key)
		}
		seen[key] = true
		if len(seen) > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(x.argument(name, key, raw))
	}
}

// cutValue splits the text after an argument's name into its value's
// text and the text after its end tag. A value its tool's schema writes
// as JSON is read as JSON first: a string inside it may hold the end tag
// (the grammar lets it, as JSON), which does not end the value there.
func (x xmlCalls) cutValue(tool, key, text string) (raw, rest string, ok bool) {
	if x.jsonValued(tool, key) {
		t := strings.TrimLeft(text, " \t\r\n")
		dec := json.NewDecoder(strings.NewReader(t))
		var v json.RawMessage
		if dec.Decode(&v) == nil {
			n := int(dec.InputOffset())
			if after, found := cutTags(t[n:], x.endTag); found {
				return t[:n], after, true
			}
		}
	}
	return strings.Cut(text, x.endTag)
}

// jsonValued reports whether a bound tool's parameter is written as JSON
// (not raw text).
func (x xmlCalls) jsonValued(tool, key string) bool {
	for _, p := range x.params[tool] {
		if p.name == key {
			return !p.text
		}
	}
	return false
}

// cutKey splits the text after an argument's opening tag into the
// argument's name and the text after the name's stop. A bound tool's
// parameter names are matched first, the longest that the stop follows:
// the grammar writes them as they are, so a name may hold the stop itself
// (a property "a>b" in <parameter=a>b>), be empty or have white space
// around it. Other names end at the first stop, white space trimmed.
func (x xmlCalls) cutKey(tool, text string) (key, rest string, ok bool) {
	best := -1
	for i, p := range x.params[tool] {
		if after, found := strings.CutPrefix(text, p.name); found && strings.HasPrefix(after, x.keyStop) &&
			(best < 0 || len(p.name) > len(x.params[tool][best].name)) {
			best = i
		}
	}
	if best >= 0 {
		key = x.params[tool][best].name
		return key, text[len(key)+len(x.keyStop):], true
	}
	key, rest, ok = strings.Cut(text, x.keyStop)
	key = strings.TrimSpace(key)
	return key, rest, ok && key != ""
}

// argument is one argument's value as JSON: the text as a string where
// the tool's schema lets the parameter be text (or does not know it),
// else the JSON it holds (text that is no JSON stays a string).
func (x xmlCalls) argument(tool, key, raw string) []byte {
	text := true
	for _, p := range x.params[tool] {
		if p.name == key {
			text = p.text
		}
	}
	t := strings.TrimSpace(raw)
	_, known := x.params[tool]
	// Unbound (no schema), JSON objects and arrays are read as JSON, as
	// the templates write them.
	if !text || !known && len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		var b bytes.Buffer
		if json.Compact(&b, []byte(t)) == nil {
			return b.Bytes()
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<" stays "<", as the model wrote it
	enc.Encode(raw)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// cutTags removes tags from the start of text, its pieces (split at white
// space) each after any white space: the tags as a model writes them,
// newlines or not.
func cutTags(text, tags string) (string, bool) {
	for _, piece := range strings.Fields(tags) {
		text = strings.TrimLeft(text, " \t\r\n")
		var ok bool
		if text, ok = strings.CutPrefix(text, piece); !ok {
			return "", false
		}
	}
	return text, true
}

// CheckSchemas returns the first error in tools' parameters that f's
// grammar does not find itself: a tagged-argument format compiles a
// parameter's schema only where its value is JSON (a string argument is
// raw text), so an invalid schema ("properties" that is no object, a
// text parameter's "pattern" that is no regular expression, a "$ref" to
// nowhere) passed unnoticed there, while every JSON format refuses it.
// Other formats compile the whole parameters in their grammar: nil. A
// tool whose definitions the format would copy into its parameters past
// maxCopiedDefs bytes is refused too.
func CheckSchemas(f Format, tools []Tool) error {
	if _, ok := f.(xmlCalls); !ok {
		return nil
	}
	for _, t := range tools {
		if err := checkCopiedDefs(t); err != nil {
			return err
		}
	}
	return CheckParameters(tools)
}

// Bind gives f the tools a request offers, for a format that needs their
// schemas to read calls (the XML formats: whether an argument is a string
// or JSON); other formats are returned as they are.
func Bind(f Format, tools []Tool) Format {
	if b, ok := f.(interface{ bind([]Tool) Format }); ok {
		return b.bind(tools)
	}
	return f
}

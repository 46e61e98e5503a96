// Package grammar is constrained decoding: it holds generated text to a
// JSON Schema, any JSON value, a GBNF grammar, a regular expression, or a
// grammar composed of such parts (tool calls), by giving, before each token,
// the set of tokens that keep the text completable — a bit mask over the
// vocabulary — and advancing on the token sampled.
//
// # Using it
//
// A Grammar is compiled once from its source and does not depend on a
// vocabulary; a Constraint binds it to one (a Vocab, built once per model
// from its tokenizer) and caches what masks it has computed; a Matcher
// follows one generation. engine/llm wraps this: Model.Grammar compiles a
// Spec for the model (cached by spec, so a schema sent again is not
// compiled again) and Request.Grammar holds a request to it:
//
//	c, err := m.Grammar(grammar.Spec{Kind: grammar.KindJSONSchema, Source: schema})
//	// err: *grammar.UnsupportedError names a keyword that cannot be enforced,
//	// errors.Is(err, grammar.ErrSchema / ErrGBNF / rx.ErrSyntax) a bad source.
//	res, err := m.Generate(ctx, llm.Request{Messages: msgs, Grammar: c}, onToken)
//	// res.FinishReason is "stop" once the value is complete.
//
// The kinds map to the APIs: OpenAI's response_format json_object is
// KindJSONObject, json_schema is KindJSONSchema with the schema as Source
// (strict or not: the output always matches the schema), Ollama's
// format "json" is KindJSONObject too (Ollama's JSON grammar starts with
// an object) and format <schema> is KindJSONSchema; native
// grammar and regex fields are KindGBNF and KindRegex.
//
// # Tool calls
//
// Compose builds a grammar from parts (Lit, Special, JSONValue, Regex,
// GBNF, Seq, Choice, Repeat, Opt). A tool call is a model's wrapper around
// a JSON object whose "arguments" follow the chosen tool's parameters
// schema, so a call schema is an anyOf over the tools:
//
//	{"anyOf":[{"type":"object","properties":{"name":{"const":"get_weather"},
//	  "arguments":<parameters of get_weather>},"required":["name","arguments"],
//	  "additionalProperties":false}, ...]}
//
// and the formats are parts around it (use Model.ComposedGrammar; a named
// tool_choice is the anyOf of one tool; parallel_tool_calls false is a
// Repeat of 1..1):
//
//	Hermes, Qwen:  Repeat(Seq(Special("<tool_call>"), Lit("\n"), JSONValue(call, o), Lit("\n"),
//	                   Special("</tool_call>")), 1, -1, Lit("\n"))
//	Llama 3.1:     Seq(Opt(Special("<|python_tag|>")), JSONValue(callWithParameters, o))
//	               (its call object names the arguments "parameters")
//	Mistral:       Seq(Special("[TOOL_CALLS]"), JSONValue(arrayOfCalls, o))
//
// Special matches a control token by its name (and the same text where a
// vocabulary has it as plain text); control tokens are otherwise never
// allowed under a constraint, not even inside a JSON string. With
// tool_choice "required" the request uses the grammar as it is. With
// "auto", Request.GrammarTriggers (or Constraint.NewLazyMatcher) makes it
// lazy: the model writes freely until a trigger (the wrapper's opening,
// e.g. "<tool_call>") appears, and from the trigger's first byte on the
// text follows the grammar; a token that would complete a trigger and go on
// with text the grammar refuses is masked out. Matcher.Triggered tells
// whether the structured part began.
//
// # How masks are computed
//
// A grammar is a context-free grammar whose terminals are lexemes: regular
// languages over bytes (package rx: hash-consed terms, lazily built
// derivative automata, intersection and complement). Front ends choose the
// lexemes: JSON Schema makes keys ("name":), strings, numbers and literals
// lexemes; GBNF turns every rule that does not recurse into one. The parser
// is an Earley parser over bytes whose terminals are those automata
// (parser.go): it makes a row only where a lexeme ends, and keeps every
// lexeme that may end or go on, so it accepts exactly the grammar's
// language, ambiguities included, with no lexer committing ahead. The
// vocabulary is a trie of token byte strings. A mask is the union of what
// the lexemes in progress allow alone — cached per lexeme state, computed
// by one walk of the trie with the lexeme's automaton, skipping subtrees
// the automaton loops over — and of the tokens that end a lexeme inside
// them, whose remainders are walked with the parser (mask.go). Lexeme
// entries are shared by all grammars over one Vocab. A token that is the
// only one allowed is "forced": engine/llm appends it without sampling and
// without a forward pass of its own.
//
// # JSON Schema coverage
//
// Drafts 4 to 2020-12: type (lists, nullable), enum, const, properties,
// required, additionalProperties, patternProperties (up to 4 patterns per
// object), propertyNames, min/maxProperties, items, prefixItems,
// additionalItems, min/maxItems, minLength, maxLength, pattern (ECMAScript,
// with lookaheads at the start), format (date, time, date-time, duration,
// email, hostname, ipv4, ipv6, uri, uri-reference, iri, uuid, json-pointer;
// unknown formats are annotations, as the specification says, unless
// JSONOptions.StrictFormats), minimum, maximum and both kinds of exclusive
// bounds for integers and decimals, $ref (JSON pointers, $id, $anchor,
// recursion), $defs/definitions, allOf (merged), anyOf, oneOf (as anyOf
// where the alternatives cannot overlap, else each alternative and not the
// others), not (of types, values, patterns and one required property). Output is compact JSON with properties in
// the order the schema lists them. uniqueItems, contains, dependencies,
// if/then/else, multipleOf and unevaluated* are compile errors naming the
// keyword: nothing that changes what is valid is ignored.
package grammar

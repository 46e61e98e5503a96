package jinja

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a lexer token.
type tokKind uint8

const (
	tEOF        tokKind = iota
	tText               // template text between tags
	tVarBegin           // {{
	tVarEnd             // }}
	tBlockBegin         // {%
	tBlockEnd           // %}
	tName               // identifier or keyword
	tString             // string literal, already unescaped
	tInt                // integer literal
	tFloat              // float literal
	tOp                 // operator or punctuation
)

// token is one lexed token; val holds the text, the unescaped string or
// the operator.
type token struct {
	kind tokKind
	val  string
	line int
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of template"
	case tText:
		return "template text"
	case tVarBegin:
		return "'{{'"
	case tVarEnd:
		return "'}}'"
	case tBlockBegin:
		return "'{%'"
	case tBlockEnd:
		return "'%}'"
	case tString:
		return "string " + strconv.Quote(t.val)
	}
	return "'" + t.val + "'"
}

// operators, longest first so that "//" wins over "/".
var operators = []string{
	"//", "**", "==", "!=", "<=", ">=",
	"+", "-", "*", "/", "%", "~", "<", ">", "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", ";",
}

// lexer turns template source into tokens the way jinja2's lexer does with
// trim_blocks and lstrip_blocks on (as Hugging Face configures it): newlines
// normalised to "\n", one trailing newline dropped, "-" on a tag strips the
// whitespace beside it, "+" keeps it.
type lexer struct {
	src          string
	pos          int
	line         int
	toks         []token
	lineStarting bool // the text before the next tag starts a line
	maxTokens    int
}

// lex tokenizes src. maxTokens bounds the number of tokens (a template is
// untrusted input).
func lex(src string, maxTokens int) ([]token, error) {
	l := &lexer{src: normalizeNewlines(src), line: 1, lineStarting: true, maxTokens: maxTokens}
	if err := l.run(); err != nil {
		return nil, err
	}
	l.toks = append(l.toks, token{kind: tEOF, line: l.line})
	return l.toks, nil
}

// normalizeNewlines turns \r\n and \r into \n and drops one trailing
// newline (jinja2's keep_trailing_newline=False).
func normalizeNewlines(s string) string {
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	return strings.TrimSuffix(s, "\n")
}

func (l *lexer) errorf(format string, args ...any) error {
	return &Error{Line: l.line, Msg: fmt.Sprintf(format, args...)}
}

func (l *lexer) emit(kind tokKind, val string) error {
	if len(l.toks) >= l.maxTokens {
		return l.errorf("template too large: more than %d tokens", l.maxTokens)
	}
	l.toks = append(l.toks, token{kind: kind, val: val, line: l.line})
	return nil
}

// advance moves pos to p, counting lines.
func (l *lexer) advance(p int) {
	l.line += strings.Count(l.src[l.pos:p], "\n")
	l.pos = p
}

// nextTag finds the next "{{", "{%" or "{#" at or after pos.
func (l *lexer) nextTag() int {
	for i := l.pos; ; {
		j := strings.IndexByte(l.src[i:], '{')
		if j < 0 || i+j+1 >= len(l.src) {
			return -1
		}
		i += j
		switch l.src[i+1] {
		case '{', '%', '#':
			return i
		}
		i++
	}
}

func (l *lexer) run() error {
	for l.pos < len(l.src) {
		at := l.nextTag()
		if at < 0 {
			return l.emitText(l.src[l.pos:], len(l.src))
		}
		kind := l.src[at+1]
		sign := byte(0)
		body := at + 2
		if body < len(l.src) && (l.src[body] == '-' || l.src[body] == '+') {
			sign = l.src[body]
			body++
		}
		text := l.src[l.pos:at]
		if sign == '-' {
			text = rstripSpace(text)
		} else if sign != '+' && kind != '{' {
			// lstrip_blocks: a block or comment tag alone on its line
			// takes the indentation before it away.
			lpos := strings.LastIndexByte(text, '\n') + 1
			if lpos > 0 || l.lineStarting {
				if rest := text[lpos:]; rest != "" && allSpace(rest) {
					text = text[:lpos]
				}
			}
		}
		if err := l.emitText(text, at); err != nil {
			return err
		}
		switch kind {
		case '#':
			if err := l.comment(body); err != nil {
				return err
			}
		case '%':
			if ok, err := l.raw(body); ok || err != nil {
				if err != nil {
					return err
				}
				continue
			}
			if err := l.tag(body, true); err != nil {
				return err
			}
		default:
			if err := l.tag(body, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// emitText emits text (if any) and moves pos to end.
func (l *lexer) emitText(text string, end int) error {
	if text != "" {
		if err := l.emit(tText, text); err != nil {
			return err
		}
	}
	l.advance(end)
	return nil
}

// endTag consumes what follows a closing delimiter that ends at p: all
// whitespace after "-", one newline after a block or comment tag
// (trim_blocks) unless "+" keeps it.
func (l *lexer) endTag(p int, sign byte, block bool) {
	switch {
	case sign == '-':
		for p < len(l.src) {
			r, n := utf8.DecodeRuneInString(l.src[p:])
			if !isSpace(r) {
				break
			}
			p += n
		}
	case sign != '+' && block && p < len(l.src) && l.src[p] == '\n':
		p++
	}
	l.lineStarting = p > 0 && l.src[p-1] == '\n'
	l.advance(p)
}

// comment skips a {# ... #} comment whose body starts at p.
func (l *lexer) comment(p int) error {
	end := strings.Index(l.src[p:], "#}")
	if end < 0 {
		return l.errorf("unclosed comment")
	}
	end += p
	sign := byte(0)
	if end > p && (l.src[end-1] == '-' || l.src[end-1] == '+') {
		sign = l.src[end-1]
	}
	l.endTag(end+2, sign, true)
	return nil
}

// raw handles {% raw %}...{% endraw %} whose tag body starts at p: the
// text between is emitted unchanged. It reports false when the tag is not
// raw.
func (l *lexer) raw(p int) (bool, error) {
	q := skipSpace(l.src, p)
	if !strings.HasPrefix(l.src[q:], "raw") {
		return false, nil
	}
	q = skipSpace(l.src, q+3)
	sign := byte(0)
	if q < len(l.src) && (l.src[q] == '-' || l.src[q] == '+') {
		sign = l.src[q]
		q++
	}
	if !strings.HasPrefix(l.src[q:], "%}") {
		return false, nil
	}
	l.endTag(q+2, sign, true)
	start := l.pos
	for i := start; ; {
		j := strings.Index(l.src[i:], "{%")
		if j < 0 {
			return true, l.errorf("missing endraw")
		}
		i += j
		k := i + 2
		closeSign := byte(0)
		if k < len(l.src) && (l.src[k] == '-' || l.src[k] == '+') {
			closeSign = l.src[k]
			k++
		}
		k = skipSpace(l.src, k)
		if !strings.HasPrefix(l.src[k:], "endraw") {
			i += 2
			continue
		}
		k = skipSpace(l.src, k+6)
		endSign := byte(0)
		if k < len(l.src) && (l.src[k] == '-' || l.src[k] == '+') {
			endSign = l.src[k]
			k++
		}
		if !strings.HasPrefix(l.src[k:], "%}") {
			return true, l.errorf("malformed endraw tag")
		}
		text := l.src[start:i]
		if closeSign == '-' {
			text = rstripSpace(text)
		}
		if err := l.emitText(text, i); err != nil {
			return true, err
		}
		l.endTag(k+2, endSign, true)
		return true, nil
	}
}

// tag lexes the expression tokens of a {{ }} or {% %} tag whose body starts
// at p, up to and including its closing delimiter.
func (l *lexer) tag(p int, block bool) error {
	begin, end := tVarBegin, tVarEnd
	closing := "}}"
	if block {
		begin, end, closing = tBlockBegin, tBlockEnd, "%}"
	}
	l.advance(p)
	if err := l.emit(begin, ""); err != nil {
		return err
	}
	depth := 0 // open brackets: a closing delimiter inside them is not one
	for {
		p = skipSpace(l.src, l.pos)
		l.advance(p)
		if p >= len(l.src) {
			return l.errorf("unclosed tag: missing %q", closing)
		}
		if depth == 0 {
			for _, sign := range []byte{'-', '+', 0} {
				q := p
				if sign != 0 {
					if l.src[q] != sign {
						continue
					}
					q++
				}
				if strings.HasPrefix(l.src[q:], closing) {
					if err := l.emit(end, ""); err != nil {
						return err
					}
					l.endTag(q+2, sign, block)
					return nil
				}
			}
		}
		c := l.src[p]
		r, _ := utf8.DecodeRuneInString(l.src[p:])
		switch {
		case c == '\'' || c == '"':
			s, n, err := unquote(l.src[p:])
			if err != nil {
				return l.errorf("%v", err)
			}
			if err := l.emit(tString, s); err != nil {
				return err
			}
			l.advance(p + n)
		case c >= '0' && c <= '9':
			kind, n := lexNumber(l.src[p:])
			if err := l.emit(kind, strings.ReplaceAll(l.src[p:p+n], "_", "")); err != nil {
				return err
			}
			l.advance(p + n)
		case c == '_' || unicode.IsLetter(r):
			q := p
			for q < len(l.src) {
				r, n := utf8.DecodeRuneInString(l.src[q:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				q += n
			}
			if err := l.emit(tName, l.src[p:q]); err != nil {
				return err
			}
			l.advance(q)
		default:
			op := ""
			for _, o := range operators {
				if strings.HasPrefix(l.src[p:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return l.errorf("unexpected character %q", r)
			}
			switch op {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth > 0 {
					depth--
				}
			}
			if err := l.emit(tOp, op); err != nil {
				return err
			}
			l.advance(p + len(op))
		}
	}
}

// lexNumber returns the kind and length of the number at the start of s:
// digits (with "_" separators), an optional fraction and exponent.
func lexNumber(s string) (tokKind, int) {
	digits := func(i int) int {
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '_' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9') {
			i++
		}
		return i
	}
	n := digits(0)
	kind := tInt
	if n+1 < len(s) && s[n] == '.' && s[n+1] >= '0' && s[n+1] <= '9' {
		n = digits(n + 1)
		kind = tFloat
	}
	if n < len(s) && (s[n] == 'e' || s[n] == 'E') {
		q := n + 1
		if q < len(s) && (s[q] == '+' || s[q] == '-') {
			q++
		}
		if q < len(s) && s[q] >= '0' && s[q] <= '9' {
			n = digits(q)
			kind = tFloat
		}
	}
	return kind, n
}

// unquote decodes the quoted string literal at the start of s with
// Python's escapes, returning the value and the literal's length.
func unquote(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch {
		case c == q:
			return b.String(), i + 1, nil
		case c != '\\':
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		e := s[i+1]
		i += 2
		switch e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'a':
			b.WriteByte('\a')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(e - '0')
			for k := 0; k < 2 && i < len(s) && s[i] >= '0' && s[i] <= '7'; k++ {
				v = v*8 + int(s[i]-'0')
				i++
			}
			b.WriteRune(rune(v))
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n > len(s) {
				return "", 0, fmt.Errorf("truncated \\%c escape in string literal", e)
			}
			v, err := strconv.ParseUint(s[i:i+n], 16, 32)
			if err != nil || v > unicode.MaxRune {
				return "", 0, fmt.Errorf("bad \\%c escape in string literal", e)
			}
			b.WriteRune(rune(v))
			i += n
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", 0, fmt.Errorf("unterminated string literal")
}

// skipSpace returns the index of the first non-whitespace rune at or after p.
func skipSpace(s string, p int) int {
	for p < len(s) {
		r, n := utf8.DecodeRuneInString(s[p:])
		if !isSpace(r) {
			break
		}
		p += n
	}
	return p
}

// isSpace is Python's str.isspace for one rune (and the \s of its re).
func isSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

func allSpace(s string) bool {
	for _, r := range s {
		if !isSpace(r) {
			return false
		}
	}
	return true
}

func rstripSpace(s string) string { return strings.TrimRightFunc(s, isSpace) }

package toolcall

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Stream filters a generation's text as it streams: it passes the content
// on and keeps back everything that is, or may become, a tool call, so a
// client never sees half a call marker as text. Feed every piece to Push
// and the end to Close; Parse the whole text for the calls afterwards.
type Stream struct {
	f       Format
	held    string // text that may begin a trigger
	inCalls bool   // a trigger appeared: the rest is calls
	// The generic format's reply is one JSON object: its response string,
	// decoded, is the content.
	generic bool
	raw     strings.Builder // the generic reply so far
	strAt   int             // where the response string's body begins (-1: not known yet)
	emitted int             // bytes of the body already decoded and passed on
	done    bool
	// openings, for a reply that is either calls or text in a format of
	// the request's own (NewEitherStream), are how calls begin; until the
	// text shows which it is, it is held, and text that is no call
	// passes as it is (plain).
	openings []string
	plain    bool
}

// NewEitherStream filters the text of a reply that is either tool calls
// in format f, of tools, or a reply in a format the request gives (a JSON
// Schema beside the tools): it holds the text back until its start shows
// which, then passes a reply on as it comes and keeps calls back.
func NewEitherStream(f Format, tools []Tool) *Stream {
	s := NewStream(f)
	switch f.(type) {
	case Generic:
		s.openings = []string{`{"tool_calls"`}
	case llama3:
		s.openings = []string{"<|python_tag|>"}
		for _, t := range tools {
			name, _ := json.Marshal(t.Name)
			s.openings = append(s.openings, `{"name":`+string(name))
		}
	default:
		s.openings = f.Triggers()
	}
	return s
}

// NewCallsStream filters the text of a reply that is calls from its first
// byte (tool_choice required or a named tool): none of it is content, not
// even the start of a call marker that the length limit cut short.
func NewCallsStream(f Format) *Stream {
	s := NewStream(f)
	s.inCalls, s.generic = true, false
	return s
}

// NewStream filters the text of a generation in format f.
func NewStream(f Format) *Stream {
	_, generic := f.(Generic)
	return &Stream{f: f, generic: generic, strAt: -1}
}

// InCalls reports whether the text has reached tool calls.
func (s *Stream) InCalls() bool { return s.inCalls }

// Push takes the next piece of text and returns the content it makes safe
// to show.
func (s *Stream) Push(text string) string {
	if s.plain {
		return text
	}
	if s.openings != nil {
		buf := s.held + text
		t := strings.TrimLeft(buf, " \t\r\n")
		for _, o := range s.openings {
			if strings.HasPrefix(t, o) { // calls
				s.openings, s.held = nil, ""
				return s.Push(buf)
			}
		}
		for _, o := range s.openings {
			if strings.HasPrefix(o, t) { // may still become a call
				s.held = buf
				return ""
			}
		}
		s.openings, s.held, s.plain = nil, "", true
		return buf
	}
	if s.generic {
		return s.pushGeneric(text)
	}
	if s.inCalls {
		return ""
	}
	buf := s.held + text
	at := -1
	for _, t := range s.f.Triggers() {
		if i := strings.Index(buf, t); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at >= 0 {
		s.inCalls, s.held = true, ""
		return buf[:at]
	}
	hold := 0
	for _, t := range s.f.Triggers() {
		for n := min(len(t)-1, len(buf)); n > hold; n-- {
			if strings.HasSuffix(buf, t[:n]) {
				hold = n
				break
			}
		}
	}
	s.held = buf[len(buf)-hold:]
	return buf[:len(buf)-hold]
}

// Close returns the content still held back at the end of the text.
func (s *Stream) Close() string {
	if s.openings != nil { // never showed a call's start: a reply
		h := s.held
		s.held, s.openings = "", nil
		return h
	}
	if s.plain || s.generic || s.inCalls {
		return ""
	}
	h := s.held
	s.held = ""
	return h
}

const responsePrefix = `{"response":"`

// pushGeneric passes on the decoded body of {"response":"...", as it comes.
func (s *Stream) pushGeneric(text string) string {
	if s.done {
		return ""
	}
	s.raw.WriteString(text)
	all := s.raw.String()
	if s.strAt < 0 {
		t := strings.TrimLeft(all, " \n\t")
		switch {
		case strings.HasPrefix(t, responsePrefix):
			s.strAt = len(all) - len(t) + len(responsePrefix)
		case len(t) >= len(responsePrefix) || !strings.HasPrefix(responsePrefix, t):
			// {"tool_calls"... (or not JSON at all): nothing to show.
			s.inCalls = strings.HasPrefix(t, "{")
			if !s.inCalls {
				s.generic = false // plain text after all
				return s.Push(all)
			}
			s.done = true
			return ""
		default:
			return "" // still ambiguous
		}
	}
	out, n, end := decodeJSONString(all[s.strAt+s.emitted:])
	s.emitted += n
	if end {
		s.done = true
	}
	return out
}

// decodeJSONString decodes the longest complete prefix of the body of a
// JSON string (without its opening quote): it returns the text, how many
// bytes it consumed and whether the closing quote was reached. An escape
// or a UTF-8 sequence cut at the end waits for more.
func decodeJSONString(s string) (string, int, bool) {
	var b strings.Builder
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), i + 1, true
		case c == '\\':
			if i+1 >= len(s) {
				return b.String(), i, false
			}
			switch s[i+1] {
			case 'u':
				if i+6 > len(s) {
					return b.String(), i, false
				}
				r, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
				if err != nil {
					return b.String(), i, true // not JSON: stop
				}
				n := 6
				if utf16.IsSurrogate(rune(r)) {
					if i+12 > len(s) {
						return b.String(), i, false
					}
					if s[i+6] == '\\' && s[i+7] == 'u' {
						if lo, err := strconv.ParseUint(s[i+8:i+12], 16, 32); err == nil {
							r = uint64(utf16.DecodeRune(rune(r), rune(lo)))
							n = 12
						}
					}
				}
				b.WriteRune(rune(r))
				i += n
				continue
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
			default: // \" \\ \/
				b.WriteByte(s[i+1])
			}
			i += 2
		default:
			if c >= utf8.RuneSelf && !utf8.FullRuneInString(s[i:]) {
				return b.String(), i, false
			}
			_, size := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return b.String(), i, false
}

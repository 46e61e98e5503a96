package api

import (
	"testing"

	"github.com/ruvllm/ruvllm/ipc"
)

// TestModelfileQuotesRoundTrip: /api/show's Modelfile reads back as the
// model it shows whatever its texts hold: triple quotes, a quote at either
// end, an empty message. Triple quotes end at the first """ in the text,
// so these were written in a form that parseModelfile refused ("text after
// the closing """") or read back changed.
func TestModelfileQuotesRoundTrip(t *testing.T) {
	for _, s := range []string{
		`has """ triple quotes`,
		`ends with a quote"`,
		`"starts with a quote`,
		`"quoted"`,
		`"""`,
		`back\slash \"""`,
		"x\"\"\"\n\"\"\"y",
		"multi\nline\n",
		"  edge spaces  ",
		"unicode ü 🙂 \u2028 and\ttab",
		"plain",
	} {
		m := &ipc.ModelManifest{
			System:   s,
			Template: s,
			License:  []string{s},
			Messages: []ipc.Message{{Role: "user", Content: s}, {Role: "assistant", Content: ""}},
		}
		text := formatModelfile(m, "/models/base.gguf")
		back, _, err := parseModelfile(text)
		if err != nil {
			t.Errorf("%q: the Modelfile does not read back: %v\n%s", s, err, text)
			continue
		}
		lic, _ := back.License.([]string)
		if back.System != s || back.Template != s || len(lic) != 1 || lic[0] != s ||
			len(back.Messages) != 2 || back.Messages[0].Content != s || back.Messages[1].Content != "" {
			t.Errorf("%q read back as system %q template %q license %q messages %+v\n%s",
				s, back.System, back.Template, back.License, back.Messages, text)
		}
	}
}

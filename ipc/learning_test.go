package ipc

import (
	"encoding/json"
	"testing"
)

func TestAdapterRefsForms(t *testing.T) {
	for _, c := range []struct {
		in, mode, out string
		n             int
		bad           bool
	}{
		{in: `"auto"`, mode: AdaptersAuto, out: `"auto"`, n: 1},
		{in: `"none"`, mode: AdaptersNone, out: `"none"`, n: 1},
		{in: `[{"name":"a","scale":0.5},{"name":"b"}]`, out: `[{"name":"a","scale":0.5},{"name":"b"}]`, n: 2},
		{in: `[]`, out: `[]`},
		{in: `[{"name":"@auto"}]`, mode: AdaptersAuto, out: `"auto"`, n: 1}, // the encoding of "auto", as sent
		{in: `"best"`, bad: true},
		{in: `{"name":"a"}`, bad: true},
		{in: `7`, bad: true},
	} {
		var r AdapterRefs
		err := json.Unmarshal([]byte(c.in), &r)
		if (err != nil) != c.bad {
			t.Errorf("%s: err %v", c.in, err)
			continue
		}
		if c.bad {
			continue
		}
		b, _ := json.Marshal(r)
		if r.Mode() != c.mode || len(r) != c.n || string(b) != c.out {
			t.Errorf("%s: mode %q, %d refs, encodes %s; want %q, %d, %s", c.in, r.Mode(), len(r), b, c.mode, c.n, c.out)
		}
	}
	// In a request body the field keeps both forms.
	var req ChatCompletionRequest
	if err := json.Unmarshal([]byte(`{"model":"m","messages":[],"adapters":"auto"}`), &req); err != nil || req.Adapters.Mode() != AdaptersAuto {
		t.Fatalf("request: %+v %v", req.Adapters, err)
	}
	var o OllamaOptions
	if err := json.Unmarshal([]byte(`{"adapters":"none"}`), &o); err != nil || o.Adapters.Mode() != AdaptersNone {
		t.Fatalf("ollama options: %+v %v", o.Adapters, err)
	}
}

func TestAutoNumber(t *testing.T) {
	for _, c := range []struct {
		in   string
		want AutoNumber
		out  string
		bad  bool
	}{
		{`"auto"`, AutoNumber{Auto: true}, `"auto"`, false},
		{`3`, AutoNumber{Value: 3}, `3`, false},
		{`0.25`, AutoNumber{Value: 0.25}, `0.25`, false},
		{`"3"`, AutoNumber{}, ``, true},
		{`[1]`, AutoNumber{}, ``, true},
	} {
		var n AutoNumber
		err := json.Unmarshal([]byte(c.in), &n)
		if (err != nil) != c.bad || (!c.bad && n != c.want) {
			t.Errorf("%s: %+v %v", c.in, n, err)
			continue
		}
		if !c.bad {
			if b, _ := json.Marshal(n); string(b) != c.out {
				t.Errorf("%s encodes as %s", c.in, b)
			}
		}
	}
}

// FuzzAdapterRefs: any JSON value decodes to an error or to refs that
// encode and decode to the same refs.
func FuzzAdapterRefs(f *testing.F) {
	for _, s := range []string{`"auto"`, `"none"`, `[{"name":"a","scale":2}]`, `[]`, `null`, `"x"`, `[{"name":"@none"}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r AdapterRefs
		if json.Unmarshal(b, &r) != nil {
			return
		}
		enc, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%q: encode: %v", b, err)
		}
		var back AdapterRefs
		if err := json.Unmarshal(enc, &back); err != nil || back.Mode() != r.Mode() || len(back) != len(r) {
			t.Fatalf("%q -> %s -> %+v (%v), from %+v", b, enc, back, err, r)
		}
	})
}

// FuzzAutoNumber: a hyperparameter decodes to an error, "auto" or a
// number, never a panic.
func FuzzAutoNumber(f *testing.F) {
	for _, s := range []string{`"auto"`, `1`, `1e309`, `-0`, `null`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var n AutoNumber
		if json.Unmarshal(b, &n) == nil && n.Auto && n.Value != 0 {
			t.Fatalf("%q: auto with a value %v", b, n.Value)
		}
	})
}

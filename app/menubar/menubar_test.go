package menubar

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"runtime"
	"slices"
	"testing"
	"time"
)

// recorder is a backend that records the calls the MenuBar makes.
type recorder struct {
	calls []string
	fail  error
}

func (r *recorder) record(s string) error {
	r.calls = append(r.calls, s)
	return r.fail
}

func (r *recorder) setModelLabel(label string) error { return r.record("model " + label) }
func (r *recorder) setTitle(title string) error      { return r.record("title " + title) }
func (r *recorder) setDockIconVisible(v bool) error {
	if v {
		return r.record("dock shown")
	}
	return r.record("dock hidden")
}
func (r *recorder) close() error { return r.record("close") }

func newRecorded(t *testing.T, opts Options) (*MenuBar, *recorder) {
	t.Helper()
	m, err := newMenuBar(opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	m.b = r
	return m, r
}

func TestModelLabel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "Model: none"},
		{"llama-3.2-1b-q8_0", "Model: llama-3.2-1b-q8_0"},
	} {
		if got := modelLabel(tc.in); got != tc.want {
			t.Errorf("modelLabel(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSettersReachTheBackendOnlyOnChange(t *testing.T) {
	m, r := newRecorded(t, Options{Model: "a"})
	steps := []struct {
		name string
		do   func() error
	}{
		{"same model", func() error { return m.SetModel("a") }},
		{"new model", func() error { return m.SetModel("b") }},
		{"no model", func() error { return m.SetModel("") }},
		{"default title", func() error { return m.SetTitle("ruvllm") }},
		{"new title", func() error { return m.SetTitle("ruvllm: busy") }},
		{"hide dock", func() error { return m.SetDockIconVisible(false) }},
		{"show dock", func() error { return m.SetDockIconVisible(true) }},
		{"close", m.Close},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	want := []string{"model Model: b", "model Model: none", "title ruvllm: busy", "dock hidden", "dock shown", "close"}
	if !slices.Equal(r.calls, want) {
		t.Errorf("backend calls\n got %q\nwant %q", r.calls, want)
	}

	for name, fn := range map[string]func() error{
		"SetModel":           func() error { return m.SetModel("c") },
		"SetTitle":           func() error { return m.SetTitle("x") },
		"SetDockIconVisible": func() error { return m.SetDockIconVisible(true) },
	} {
		if err := fn(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v, want nil (idempotent)", err)
	}
	if len(r.calls) != len(want) {
		t.Errorf("backend called after Close: %q", r.calls[len(want):])
	}
}

func TestBackendErrorKeepsState(t *testing.T) {
	m, r := newRecorded(t, Options{Model: "a"})
	r.fail = errors.New("main thread gone")
	if err := m.SetModel("b"); !errors.Is(err, r.fail) {
		t.Fatalf("SetModel: %v, want the backend's error wrapped", err)
	}
	r.fail = nil
	// The failed change was not recorded as done, so it is sent again.
	if err := m.SetModel("b"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"model Model: b", "model Model: b"}; !slices.Equal(r.calls, want) {
		t.Errorf("backend calls %q, want %q", r.calls, want)
	}
}

func TestDispatchRunsCallbacksOffTheCaller(t *testing.T) {
	toggled := make(chan struct{}, 2)
	quit := make(chan struct{}, 1)
	var m *MenuBar
	m, _ = newRecorded(t, Options{
		// A callback that calls back into the MenuBar must not deadlock the
		// thread that delivered the click.
		OnToggle: func() { m.SetModel("from callback"); toggled <- struct{}{} },
		OnQuit:   func() { quit <- struct{}{} },
	})
	m.dispatch(actToggle)
	m.dispatch(actQuit)
	for name, c := range map[string]chan struct{}{"toggle": toggled, "quit": quit} {
		select {
		case <-c:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s callback not called", name)
		}
	}
	if m.model != "from callback" {
		t.Errorf("model %q after the callback's SetModel", m.model)
	}

	// Nil callbacks are fine; after Close nothing is delivered.
	bare, _ := newRecorded(t, Options{})
	bare.dispatch(actToggle)
	bare.dispatch(actQuit)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m.dispatch(actToggle)
	select {
	case <-toggled:
		t.Fatal("toggle delivered after Close")
	case <-time.After(50 * time.Millisecond):
	}
}

func TestIcons(t *testing.T) {
	cfg, err := png.DecodeConfig(bytes.NewReader(templateIcon))
	if err != nil {
		t.Fatalf("embedded template icon: %v", err)
	}
	if cfg.Width != 36 || cfg.Height != 36 {
		t.Errorf("embedded template icon is %dx%d, want 36x36 (18 pt @2x)", cfg.Width, cfg.Height)
	}
	img, _ := png.Decode(bytes.NewReader(templateIcon))
	if _, _, _, a := img.At(0, 0).RGBA(); a != 0 {
		t.Errorf("template icon corner alpha %d, want transparent", a)
	}

	if _, err := newMenuBar(Options{Icon: []byte("not a png")}); err == nil {
		t.Error("newMenuBar accepted a non-PNG icon")
	}
	var buf bytes.Buffer
	png.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, 16, 16)))
	m, err := newMenuBar(Options{Icon: buf.Bytes()})
	if err != nil {
		t.Fatalf("valid PNG icon: %v", err)
	}
	if !bytes.Equal(m.opts.Icon, buf.Bytes()) || m.title != "ruvllm" {
		t.Errorf("options not kept: title %q", m.title)
	}
}

func TestNewUnsupportedOffMacOS(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("darwin has a menu bar")
	}
	m, err := New(context.Background(), Options{})
	if !errors.Is(err, ErrUnsupported) || m != nil {
		t.Fatalf("New on %s: %v, %v; want nil, ErrUnsupported", runtime.GOOS, m, err)
	}
	if _, err := New(context.Background(), Options{Icon: []byte("x")}); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("a bad icon must be reported before ErrUnsupported, got %v", err)
	}
}

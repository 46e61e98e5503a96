package metal

import (
	"errors"
	"runtime"
	"testing"
)

func TestProbe(t *testing.T) {
	name, err := Probe()
	switch {
	case runtime.GOOS != "darwin":
		if !errors.Is(err, ErrUnavailable) || name != "" {
			t.Fatalf("Probe on %s = %q, %v; want ErrUnavailable", runtime.GOOS, name, err)
		}
	case errors.Is(err, ErrNoDevice):
		t.Skip("no Metal device")
	case err != nil || name == "":
		t.Fatalf("Probe = %q, %v", name, err)
	}
}

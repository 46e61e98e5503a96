package serve

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestDurationFlagsPositive: --shutdown-grace and --learning-interval of 0
// or less are refused, naming the flag; Options read them as unset, and the
// daemon ran with 10 s and 2 min instead.
func TestDurationFlagsPositive(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    time.Duration // the grace
		wantErr string        // or the flag the error names
	}{
		{args: nil, want: 10 * time.Second},
		{args: []string{"--shutdown-grace", "3s", "--learning-interval", "1m"}, want: 3 * time.Second},
		{args: []string{"--shutdown-grace", "0"}, wantErr: "--shutdown-grace"},
		{args: []string{"--shutdown-grace", "-1s"}, wantErr: "--shutdown-grace"},
		{args: []string{"--learning-interval", "0"}, wantErr: "--learning-interval"},
		{args: []string{"--learning-interval", "-1s"}, wantErr: "--learning-interval"},
	} {
		var o Options
		fs := pflag.NewFlagSet("ruvllmd", pflag.ContinueOnError)
		RegisterFlags(&o, fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := FinishFlags(&o, fs)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || o.Grace != tc.want {
			t.Errorf("%v: grace %s, %v; want %s", tc.args, o.Grace, err, tc.want)
		}
	}
}

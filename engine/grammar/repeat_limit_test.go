package grammar

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
)

// TestHugeRepetitionFailsCheaply compiles schemas whose item counts pass
// the grammar's size limit: each must be ErrTooLarge, found before the
// repetition is built. A tool's parameters with "minItems": 1e9 made the
// daemon build a right-hand side of two billion symbols and be killed for
// memory (soak P); the counts here are small enough that the old code only
// allocated some hundred megabytes on its way to the same error.
func TestHugeRepetitionFailsCheaply(t *testing.T) {
	for _, tc := range []struct{ name, schema string }{
		{"minItems", `{"type":"array","minItems":4194304}`},
		{"minItems of objects", `{"type":"array","items":{"type":"object","properties":{"a":{"type":"integer"}}},"minItems":8388608}`},
		{"min and maxItems", `{"type":"array","minItems":4194304,"maxItems":4194304}`},
		{"maxItems", `{"type":"array","items":{"type":"integer"},"maxItems":8388608}`},
		{"tuple then rest", `{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"},"minItems":4194304}`},
		{"in a tool's parameters", `{"type":"object","properties":{"a":{"type":"array","minItems":8388608}},"required":["a"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := CompileJSONSchema([]byte(tc.schema), JSONOptions{})
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v, want ErrTooLarge", err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("allocated %s on the way to %v", fmt.Sprintf("%d MiB", alloc>>20), err)
			}
		})
	}
}

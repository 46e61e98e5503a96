package grammar

import (
	"fmt"
	"testing"
)

// TestConstraintCacheBoundedBySize fills a vocabulary's constraint cache
// with grammars of a few hundred symbols each under a budget of a few
// thousand: the cache drops its oldest entries to stay within the budget
// (it counted entries only, so 64 schemas of "maxItems": 200000, a few
// hundred bytes each, held gigabytes; soak P), keeps the newest even when
// that alone is over it, and its account of the cached symbols stays
// exact.
func TestConstraintCacheBoundedBySize(t *testing.T) {
	var toks []Token
	for b := 0x20; b < 0x7f; b++ {
		toks = append(toks, Token{Bytes: []byte{byte(b)}})
	}
	v, err := NewVocab(append(toks, Token{EOG: true}))
	if err != nil {
		t.Fatal(err)
	}
	v.cacheBudget = 3000
	check := func(after string) {
		t.Helper()
		sum := 0
		for _, k := range v.order {
			sum += len(v.cache[k].g.flat)
		}
		if sum != v.cachedSymbols || len(v.cache) != len(v.order) {
			t.Fatalf("after %s: %d symbols counted, %d cached in %d entries (%d keys)", after, v.cachedSymbols, sum, len(v.cache), len(v.order))
		}
		if v.cachedSymbols > v.cacheBudget && len(v.order) > 1 {
			t.Fatalf("after %s: %d symbols cached in %d entries, over the budget of %d", after, v.cachedSymbols, len(v.order), v.cacheBudget)
		}
	}
	for i := range 20 {
		spec := Spec{Kind: KindJSONSchema, Source: fmt.Sprintf(`{"type":"array","items":{"type":"integer"},"maxItems":%d}`, 100+i)}
		if _, err := v.Constraint(spec); err != nil {
			t.Fatal(err)
		}
		check(spec.Source)
	}
	if len(v.order) >= 20 {
		t.Fatalf("all %d grammars stayed cached", len(v.order))
	}
	big := Spec{Kind: KindJSONSchema, Source: `{"type":"array","items":{"type":"integer"},"maxItems":5000}`}
	c, err := v.Constraint(big)
	if err != nil {
		t.Fatal(err)
	}
	check("a grammar over the budget")
	if len(v.order) != 1 || v.cache[v.order[0]] != c {
		t.Fatalf("the newest grammar was not kept alone: %d entries", len(v.order))
	}
}

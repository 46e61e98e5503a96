package learning

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestScopeOfIsACheckedScope: with per-app learning, every scope a
// request's X-Ruvllm-Client header leads to is one CheckScope accepts,
// so the control endpoints can name it. A 300-byte or unprintable client
// name made a scope that was learned in and stored but that GET
// /v1/learning, pause, reset, undo and export refused as a bad scope.
func TestScopeOfIsACheckedScope(t *testing.T) {
	s := New(Options{PerApp: true})
	for _, tc := range []struct{ app, want string }{
		{"editor", "app:editor"},
		{strings.Repeat("x", 300), "app:" + strings.Repeat("x", MaxScopeBytes-len(appPrefix))},
		{strings.Repeat("é", 200), "app:" + strings.Repeat("é", (MaxScopeBytes-len(appPrefix))/2)},
		{"a\tb", "app:a_b"},
		{"a\x01b", "app:a_b"},
		{"bad\xffutf8", "app:bad\uFFFDutf8"},
	} {
		got := s.ScopeOf(tc.app)
		if got != tc.want {
			t.Errorf("ScopeOf(%q) = %q, want %q", tc.app, got, tc.want)
		}
		if err := CheckScope(got); err != nil || !utf8.ValidString(got) {
			t.Errorf("ScopeOf(%.20q) = %.30q, which CheckScope refuses: %v", tc.app, got, err)
		}
	}
	if got := New(Options{}).ScopeOf(strings.Repeat("x", 300)); got != UserScope {
		t.Errorf("without per-app scopes: %q", got)
	}
}

// TestServingScopes: without per-app learning the background loop works
// on the scopes requests use, not on app scopes an earlier per-app run
// left (they were consolidated first, tens of seconds of CPU each).
func TestServingScopes(t *testing.T) {
	for _, perApp := range []bool{false, true} {
		ms := &modelState{svc: &Service{o: Options{PerApp: perApp}}, scopes: map[string]*scopeState{}}
		for _, n := range []string{"user", appPrefix + "editor", appPrefix + "mail"} {
			ms.scopes[n] = &scopeState{ms: ms, name: n}
		}
		var got []string
		for _, sc := range ms.servingScopes() {
			got = append(got, sc.name)
		}
		want := "user"
		if perApp {
			want = "app:editor app:mail user"
		}
		if strings.Join(got, " ") != want {
			t.Errorf("per-app %v: %v, want %s", perApp, got, want)
		}
	}
}

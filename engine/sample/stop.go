package sample

import "strings"

// StopMatcher finds stop strings in streamed text. Text that might be the
// start of a stop string is held back until it is known either to complete
// the stop (the stop and everything after it is dropped) or not to (it is
// released), so a client never sees part of a stop string.
//
// Matching is on bytes; with valid UTF-8 input and stop strings the emitted
// pieces never split a rune, because a held-back suffix always begins where a
// stop string (and therefore a rune) begins.
type StopMatcher struct {
	stops   []string
	pending string
	stopped bool
	matched string
}

// NewStopMatcher returns a matcher for stops; empty strings are ignored.
func NewStopMatcher(stops []string) *StopMatcher {
	m := &StopMatcher{}
	m.SetStops(stops)
	return m
}

// Push adds the next piece of generated text. It returns the text that is now
// safe to emit. When a stop string completes, emit is the text before it
// (which may be empty) and stopped is true; the stop string and anything
// after it are discarded, and later calls return "", true.
func (m *StopMatcher) Push(text string) (emit string, stopped bool) {
	if m.stopped {
		return "", true
	}
	buf := m.pending + text
	// The earliest completed stop wins; with equal starts the shorter one.
	at := -1
	for _, s := range m.stops {
		if i := strings.Index(buf, s); i >= 0 && (at < 0 || i < at) {
			at, m.matched = i, s
		}
	}
	if at >= 0 {
		m.stopped = true
		m.pending = ""
		return buf[:at], true
	}
	hold := m.heldSuffix(buf)
	m.pending = buf[len(buf)-hold:]
	return buf[:len(buf)-hold], false
}

// heldSuffix returns the length of the longest suffix of buf that is a
// proper prefix of some stop string.
func (m *StopMatcher) heldSuffix(buf string) int {
	best := 0
	for _, s := range m.stops {
		// Only suffixes shorter than s can be proper prefixes of it.
		for n := min(len(s)-1, len(buf)); n > best; n-- {
			if strings.HasPrefix(s, buf[len(buf)-n:]) {
				best = n
				break
			}
		}
	}
	return best
}

// Flush returns the held-back text at the end of generation (it did not turn
// into a stop string) and resets the hold. It returns "" after a stop.
func (m *StopMatcher) Flush() string {
	out := m.pending
	m.pending = ""
	return out
}

// SetStops replaces the stop strings from here on. Text held back as the
// start of a stop string that is no longer one is released by the next
// Push or Flush; text already let through is not looked at again.
func (m *StopMatcher) SetStops(stops []string) {
	m.stops = m.stops[:0]
	for _, s := range stops {
		if s != "" {
			m.stops = append(m.stops, s)
		}
	}
}

// Stopped reports whether a stop string has been seen.
func (m *StopMatcher) Stopped() bool { return m.stopped }

// Matched is the stop string that ended the text ("" until one has).
func (m *StopMatcher) Matched() string { return m.matched }

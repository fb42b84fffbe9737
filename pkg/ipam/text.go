package ipam

import (
	"fmt"
	"unicode/utf8"
)

// MaxEcho bounds how much of a value read from an object an error repeats: enough to recognise
// the value, never a wall of text in a condition or an Event, whatever length reached us.
const MaxEcho = 256

// Clip shortens s to at most MaxEcho bytes, cut at a rune boundary, with an ellipsis when
// something was cut.
func Clip(s string) string {
	if head, cut := clip(s); cut {
		return head + "…"
	}
	return s
}

// Quote quotes s for a message, shortened like Clip.
func Quote(s string) string {
	if head, cut := clip(s); cut {
		return fmt.Sprintf("%q…", head)
	}
	return fmt.Sprintf("%q", s)
}

func clip(s string) (string, bool) {
	if len(s) <= MaxEcho {
		return s, false
	}
	n := MaxEcho
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// cause renders the error of a parser for a message: its text may repeat the whole input.
func cause(err error) string { return Clip(err.Error()) }

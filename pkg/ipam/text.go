package ipam

import (
	"fmt"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// maxEcho bounds how much of a value read from an object an error repeats: enough to recognise
// the value, never a wall of text in a condition or an Event, whatever length reached us.
const maxEcho = 256

// Clip shortens s to at most maxEcho bytes, cut at a rune boundary, with an ellipsis when
// something was cut.
func Clip(s string) string { return redact.Shorten(s, maxEcho, "…") }

// Quote quotes s for a message, shortened like Clip.
func Quote(s string) string {
	if len(s) <= maxEcho {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…", redact.Shorten(s, maxEcho, ""))
}

// cause renders the error of a parser for a message: its text may repeat the whole input.
func cause(err error) string { return Clip(err.Error()) }

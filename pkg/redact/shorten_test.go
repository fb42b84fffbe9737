package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestShortenAndQuoteMarkACutWithTheEllipsis: a value within the bound comes back as it is; a
// longer one is cut on a character boundary, to at most n bytes, and ends with Ellipsis.
func TestShortenAndQuoteMarkACutWithTheEllipsis(t *testing.T) {
	t.Parallel()
	if got := Shorten("vlan10", 6); got != "vlan10" {
		t.Errorf("Shorten within the bound = %q", got)
	}
	if got := Shorten("vlan100", 6); got != "vlan10"+Ellipsis {
		t.Errorf("Shorten past the bound = %q", got)
	}
	// "é" is two bytes: a cut at an odd byte keeps the whole characters before it.
	if got := Shorten("ééé", 3); got != "é"+Ellipsis || !utf8.ValidString(got) {
		t.Errorf("Shorten inside a character = %q", got)
	}
	if got := Quote("a\"b", 8); got != `"a\"b"` {
		t.Errorf("Quote within the bound = %s", got)
	}
	if got := Quote(strings.Repeat("x", 10), 4); got != `"xxxx"`+Ellipsis {
		t.Errorf("Quote past the bound = %s", got)
	}
	if got := Cap(strings.Repeat("x", 40), 20); len(got) != 20 || !strings.HasSuffix(got, Ellipsis+" (truncated)") {
		t.Errorf("Cap = %q (%d bytes)", got, len(got))
	}
}

func TestNamesCountsWhatItLeavesOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		items []string
		want  string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a", "b", "c"}, "a, b, c"},
		{[]string{"a", "b", "c", "d", "e"}, "a, b, c and 2 more"},
	} {
		if got := Names(tc.items, 3); got != tc.want {
			t.Errorf("Names(%q, 3) = %q, want %q", tc.items, got, tc.want)
		}
	}
}

package chartvalues

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// badRune reports a rune no value may hold: control characters (Cc, which includes NEL, U+0085),
// format characters (Cf: zero-width and bidirectional marks, the byte-order mark) and the line and
// paragraph separators (Zl, Zp). YAML breaks lines at NEL, U+2028 and U+2029 as it does at \n, so a
// chart that prints a value unquoted would start new YAML there; the others hide what a person
// reads in a message or a diff. A byte that is not valid UTF-8 reads as utf8.RuneError, which no
// value may hold either.
func badRune(r rune) bool {
	return r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// dirtyString returns the path of the first key or string value in v that is not clean, or "".
// Paths read as the values do: env.vip_interface, tolerations[0].key; a key that is itself not
// clean shows as <a key>.
func dirtyString(v interface{}, at string) string {
	switch t := v.(type) {
	case string:
		if strings.ContainsFunc(t, badRune) {
			return at
		}
	case map[string]interface{}:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if strings.ContainsFunc(k, badRune) {
				return JoinPath(at, "<a key>")
			}
			if found := dirtyString(t[k], JoinPath(at, k)); found != "" {
				return found
			}
		}
	case []interface{}:
		for i, x := range t {
			if found := dirtyString(x, fmt.Sprintf("%s[%d]", at, i)); found != "" {
				return found
			}
		}
	}
	return ""
}

// JoinPath appends key to a dotted path of values or object fields.
func JoinPath(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// everyPattern is Text's masking with every pattern run, whatever needsOf says.
func everyPattern(s string) string {
	s = pemBlock.ReplaceAllString(s, Mask)
	s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	s = queryCredential.ReplaceAllString(s, "${1}"+Mask)
	s = authorization.ReplaceAllStringFunc(s, maskAuthorization)
	return keyValue.ReplaceAllString(s, "${1}"+Mask)
}

// TestSkippedPatternsCouldNotMatch holds the shortcut to its promise: on texts built from the
// pieces the patterns look for, in every case and order, with ASCII and beyond, Text masks exactly
// what running every pattern masks.
func TestSkippedPatternsCouldNotMatch(t *testing.T) {
	pieces := []string{"https://", "user", ":", "pw", "@", "host", "/", "?", "&", "token", "=", "x1y2z3w4",
		"Authorization", "BEARER ", "abcdefgh12345678", "password", "PassWD", "client-key-data", "private_key",
		"api-key", "Credentials", "secret", "-----BEGIN RSA PRIVATE KEY-----", "MIIB", "-----END RSA PRIVATE KEY-----",
		" ", "\"", "'", ",", "cluster c-m-1 is still provisioning", "to\u212Aen", "\u017Fecret", "é", "\n"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for j := rng.IntN(12); j >= 0; j-- {
			p := pieces[rng.IntN(len(pieces))]
			switch rng.IntN(3) {
			case 0:
				p = strings.ToUpper(p)
			case 1:
				p = strings.ToLower(p)
			}
			b.WriteString(p)
		}
		s := b.String()
		if got, want := Text(s), Cap(everyPattern(s), MaxMessage); got != want {
			t.Fatalf("Text(%q) = %q; every pattern gives %q", s, got, want)
		}
	}
}

// TestEveryPatternOnAnyNonASCIIText: case folding beyond ASCII (the Kelvin sign for k, the long s
// for s) is left to the patterns themselves.
func TestEveryPatternOnAnyNonASCIIText(t *testing.T) {
	for _, s := range []string{"to\u212Aen: abc", "\u017Fecret=abc", "é"} {
		if n := needsOf(s); n != (needs{true, true, true, true, true}) {
			t.Errorf("needsOf(%q) = %+v, want every pattern", s, n)
		}
	}
	if got := Text("to\u212Aen: abcdef"); strings.Contains(got, "abcdef") {
		t.Errorf("a key spelt with the Kelvin sign kept its value: %q", got)
	}
}

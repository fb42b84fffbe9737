package config

import (
	"errors"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubefip/kube-fip-operator/pkg/redact"
)

// yamlSyntaxError picks the optional line number and the problem out of a
// sigs.k8s.io/yaml error; the problem is passed on only if it is one of the
// fixed parser messages in knownYAMLProblem.
var yamlSyntaxError = regexp.MustCompile(`(?s)^(?:error converting YAML to JSON: )?yaml: (?:line ([0-9]+): )?(.*)$`)

// repeatedKey picks the line out of the strict parser's error for a key given twice; the key itself,
// which the error quotes, is not repeated.
var repeatedKey = regexp.MustCompile(`line ([0-9]+): key .* already set in map`)

// parseValues decodes chart values. A key given twice in one mapping is refused rather than read
// as the last one: whoever reads the text should see what is installed. Its errors never contain
// any of the input, because values may hold secrets and errors end up in logs and events.
func parseValues(s string) (map[string]interface{}, error) {
	var v interface{}
	if err := yaml.UnmarshalStrict([]byte(s), &v); err != nil {
		return nil, sanitizeYAMLError(err)
	}
	switch t := v.(type) {
	case nil:
		return map[string]interface{}{}, nil
	case map[string]interface{}:
		return t, nil
	case []interface{}:
		return nil, errors.New("must be a YAML mapping of chart values, not a list")
	default:
		return nil, errors.New("must be a YAML mapping of chart values, not a single scalar")
	}
}

// sanitizeYAMLError rebuilds a parser error from parts known to be free of
// content. A whitelist is needed because several YAML and YAML-to-JSON errors
// quote the document (unknown anchors, unsupported map keys, bad scalars).
func sanitizeYAMLError(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "json: unsupported value") {
		return errors.New("invalid YAML: NaN and infinite numbers cannot be chart values")
	}
	out := "invalid YAML"
	if m := repeatedKey.FindStringSubmatch(msg); m != nil {
		return errors.New(out + " at line " + m[1] + ": a key is given twice in one mapping")
	}
	if m := yamlSyntaxError.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			out += " at line " + m[1]
		}
		switch p := m[2]; {
		case knownYAMLProblem(p):
			out += ": " + p
		// These two quote the document, so only their gist is kept.
		case strings.HasPrefix(p, "unknown anchor "):
			out += ": alias refers to an unknown anchor"
		case strings.HasPrefix(p, "invalid map key: "):
			out += ": a mapping key is itself a list or mapping"
		}
	}
	return errors.New(out)
}

// knownYAMLProblem lists the constant problem texts of the YAML scanner and
// parser that users actually hit.
func knownYAMLProblem(s string) bool {
	switch s {
	case "mapping values are not allowed in this context",
		"block sequence entries are not allowed in this context",
		"could not find expected ':'",
		"did not find expected key",
		"did not find expected node content",
		"did not find expected '-' indicator",
		"did not find expected ',' or ']'",
		"did not find expected ',' or '}'",
		"did not find expected <document start>",
		"did not find expected comment or line break",
		"found character that cannot start any token",
		"found unexpected end of stream",
		"found unexpected document indicator",
		"found unknown escape character",
		"found a tab character that violates indentation",
		"found a tab character where an indentation space is expected",
		"found an incorrect leading UTF-8 octet",
		"found an incorrect trailing UTF-8 octet",
		"found undefined tag handle",
		"document contains excessive aliasing":
		return true
	}
	return false
}

// maxEcho bounds how much of a bad value a KeyProblem repeats: enough to
// recognise it, not enough to flood a log line or an event.
const maxEcho = 100

// echo prepares a rejected value for a KeyProblem.
func echo(v string) string {
	return redact.Shorten(redactURL(strings.TrimSpace(v)), maxEcho)
}

// redactURL masks the user-info part and the query of anything that looks
// like a URL. It masks everything between the scheme and the last '@' rather
// than trusting a URL parser, because a password containing '/' or '?' makes a
// parser place the '@' in the path and the password would show. The user name
// is masked too, since tokens are often passed as the user name. An '@' that
// really is in the path gets masked along with the host, which only costs
// readability. The query and the fragment go because tokens are passed there as
// well.
func redactURL(s string) string {
	scheme := strings.Index(s, "://")
	if scheme < 0 {
		return s
	}
	if at := strings.LastIndex(s, "@"); at > scheme {
		s = s[:scheme+3] + "xxxxx" + s[at:]
	}
	if q := strings.Index(s, "?"); q > scheme {
		s = s[:q+1] + "xxxxx"
	} else if f := strings.Index(s, "#"); f > scheme {
		s = s[:f+1] + "xxxxx"
	}
	return s
}

// suggest names the known key an unknown key most likely means: the same
// key in another case, or failing that the nearest key within a few typos.
func suggest(key string, opts []option) string {
	const maxDistance = 3
	if len(key) > 64 {
		return "" // no known key is anywhere near that long
	}
	lk := strings.ToLower(key)
	best, bestDist := "", maxDistance+1
	for _, o := range opts {
		d := editDistance(lk, strings.ToLower(o.key))
		if d < bestDist {
			best, bestDist = o.key, d
		}
	}
	if bestDist > 0 && 2*bestDist >= len(key) {
		return "" // a short key a few edits from anything is no evidence
	}
	return best
}

// editDistance is the Levenshtein distance over bytes, which is enough for
// the ASCII key names it compares against.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Package redact removes credentials from text that leaves the operator: Event messages,
// condition messages and log lines. Errors from Helm, from HTTP clients and from the Kubernetes
// client quote URLs, headers and values as they were given, so any text built from such an error
// goes through Text (or Error) before anyone can read it.
package redact

import (
	"cmp"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Mask replaces every credential that is removed.
const Mask = "REDACTED"

// MaxMessage caps a message built from an error: conditions and Events are read by people, and
// an error that echoes its input can be of any size.
const MaxMessage = 1024

// MinSecret is the shortest known secret that is replaced wherever it appears: a shorter one would
// mask ordinary words.
const MinSecret = 4

// Ellipsis ends every value or text the operator cut short: the one mark of a cut.
const Ellipsis = "…"

// MaxValue bounds how much of a value read from an object (a range, an address, an annotation, an
// allocation's key) a message or a metric label repeats: enough to recognise it, never a wall of
// text in a condition or an Event, whatever length reached the operator.
const MaxValue = 256

// truncated ends a text that was cut.
const truncated = Ellipsis + " (truncated)"

var (
	// userinfo is the user:password@ part of a URL with a scheme, quoted or not. The authority
	// ends at the first '/', '?', '#' or space, and a password may itself hold an '@', so the match
	// runs to the last '@' before that end.
	userinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s"'<>]*@`)
	// queryCredential is a credential carried in a query parameter.
	queryCredential = regexp.MustCompile(`(?i)([?&](?:access_token|token|password|passwd|secret|signature|sig|x-amz-signature|x-amz-credential|api[_-]?key|auth)=)[^&\s"'#]*`)
	// authorization is an HTTP Authorization header value or a bearer token in text.
	authorization = regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*["']?)(?:bearer|basic|token)?\s*[A-Za-z0-9\-._~+/:]+=*|\bbearer\s+[A-Za-z0-9\-._~+/:]{8,}=*`)
	// keyValue is a key naming a credential followed by its value, as YAML, JSON, flags or
	// key=value text quote it: "password: x", "token=x", `"clientSecret":"x"`, "client-key-data: x".
	keyValue = regexp.MustCompile(`(?i)(["']?\b[\w.\-]*(?:password|passwd|token|secret|apikey|api[_-]key|credentials?|client-key-data|private[_-]?key)["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s"',;}&]+)`)
	// pemBlock is a PEM block of any kind: keys first of all, and certificates, which are no
	// secret but have no place in a message either.
	pemBlock = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]+-----[\s\S]*?(?:-----END [A-Z0-9 ]+-----|$)`)
)

// Text is s as it may be shown: every credential in URLs (user:password@, credential query
// parameters), Authorization headers, bearer tokens, key/value pairs naming a credential and PEM
// blocks is replaced by Mask, as is every occurrence of each of known (the token of a kubeconfig,
// a repository password); the result is capped to MaxMessage bytes.
func Text(s string, known ...string) string {
	// Cut far beyond the cap first, so that a huge input costs little: whatever a first cut
	// splits lies past MaxMessage and is cut again below.
	s = Cap(s, 16*MaxMessage)
	s = Secrets(s, known...)
	// Each pattern runs only on a text that holds what every match of it holds (see needs): the
	// guest passes redact every message they write, and most hold none of it.
	n := needsOf(s)
	if n.pem {
		s = pemBlock.ReplaceAllString(s, Mask)
	}
	if n.userinfo {
		s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	}
	if n.query {
		s = queryCredential.ReplaceAllString(s, "${1}"+Mask)
	}
	if n.authorization {
		s = authorization.ReplaceAllStringFunc(s, maskAuthorization)
	}
	if n.keyValue {
		s = keyValue.ReplaceAllString(s, "${1}"+Mask)
	}
	return Cap(s, MaxMessage)
}

// needs says which patterns may match a text: each is false only where the text lacks something
// every match of that pattern contains — "-----BEGIN " for a PEM block, "://" and "@" for user
// information, "=" after "?" or "&" for a query credential, "authorization" or "bearer" for a
// header, ":" or "=" and a credential word for a key and value. The patterns match without regard
// to case, and Unicode case folding reaches beyond ASCII (the Kelvin sign folds to k), so a text
// with any byte beyond ASCII may match every pattern.
type needs struct{ pem, userinfo, query, authorization, keyValue bool }

func needsOf(s string) needs {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return needs{true, true, true, true, true}
		}
	}
	lower := strings.ToLower(s)
	n := needs{
		pem:           strings.Contains(s, "-----BEGIN "),
		userinfo:      strings.Contains(s, "://") && strings.Contains(s, "@"),
		query:         strings.Contains(s, "=") && strings.ContainsAny(s, "?&"),
		authorization: strings.Contains(lower, "authorization") || strings.Contains(lower, "bearer"),
	}
	n.keyValue = strings.ContainsAny(s, ":=") && namesCredential(lower)
	return n
}

// namesCredential tells whether lower, a text in lower case, holds a word every key the keyValue
// pattern masks contains.
func namesCredential(lower string) bool {
	return slices.ContainsFunc([]string{"pass", "token", "secret", "apikey", "api_key", "api-key", "credential", "client-key-data", "private"},
		func(w string) bool { return strings.Contains(lower, w) })
}

// Error is Text of err's message; "" for a nil error.
func Error(err error, known ...string) string {
	if err == nil {
		return ""
	}
	return Text(err.Error(), known...)
}

// Secrets replaces every occurrence of each of known in s by Mask, and nothing else. Secrets
// shorter than MinSecret are skipped; longer ones are replaced first, so that a secret containing
// another is masked as a whole.
func Secrets(s string, known ...string) string {
	list := slices.DeleteFunc(slices.Clone(known), func(k string) bool { return len(k) < MinSecret })
	if len(list) == 0 {
		return s
	}
	// Longest first: strings.NewReplacer picks the first match in argument order at each position.
	slices.SortStableFunc(list, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(list))
	for _, k := range list {
		pairs = append(pairs, k, Mask)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// URL is raw without its user information, query and fragment, for a message that names a
// server or repository. Text that does not parse as a URL is returned through Text.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return Text(raw)
	}
	if u.User != nil {
		u.User = url.User(Mask)
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	return Cap(u.String(), 256)
}

// Cap cuts s to at most n bytes, on a character boundary, and says that it was cut.
func Cap(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cut(s, max(n-len(truncated), 0)) + truncated
}

// Shorten cuts s to at most n bytes, on a character boundary, and appends Ellipsis when it cut:
// the one way every message of the operator bounds a value it repeats.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cut(s, n) + Ellipsis
}

// Names joins items for a message, at most n of them and then how many more: "a, b, c and 2 more".
func Names(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + " and " + strconv.Itoa(len(items)-n) + " more"
}

// Quote quotes s for a message, Go-quoted, with at most n bytes of it inside the quotes and
// Ellipsis after them when it was cut.
func Quote(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return strconv.Quote(cut(s, n)) + Ellipsis
}

// cut is the first n bytes of s, or fewer so as not to split a character; s is longer than n.
func cut(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// maskAuthorization keeps the header name of an Authorization match and masks the rest.
func maskAuthorization(m string) string {
	if sub := authorization.FindStringSubmatch(m); sub != nil && sub[1] != "" {
		return sub[1] + Mask
	}
	return Mask
}

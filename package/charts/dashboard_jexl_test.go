package charts

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// This file models the part of Jexl that Rancher's dashboard uses to decide whether a question of
// questions.yaml is shown: Jexl 2.2.2 (dashboard v2.8.x) and 2.3.0 (v2.9.0 to v2.14.x), whose lexer
// (lib/Lexer.js), grammar (lib/grammar.js) and parser states (lib/parser/states.js) agree on it.
// It covers literals, identifiers with dotted access, parentheses, the unary "!", and the binary
// "==", "!=" (precedence 20), "&&" and "||" (both precedence 10, left-associative), with
// JavaScript's loose equality and truthiness. Anything else Jexl accepts is reported as
// errUnmodelled, so a condition outside this model fails the chart test instead of being guessed.

// errJexl is an expression Jexl refuses: the dashboard catches it and shows the question.
var errJexl = errors.New("jexl error")

// errUnmodelled is valid Jexl this model does not evaluate.
var errUnmodelled = errors.New("outside the modelled Jexl subset")

type jexlToken struct {
	kind  string // literal, identifier, unaryOp, binaryOp, dot, openParen, closeParen, or unmodelled
	text  string
	value interface{}
}

// jexlElements are Jexl's grammar elements, longest first, as the lexer's split expression orders them.
func jexlElements() []struct{ text, kind string } {
	return []struct{ text, kind string }{
		{"//", "unmodelled"}, {"==", "binaryOp"}, {"!=", "binaryOp"}, {">=", "unmodelled"}, {"<=", "unmodelled"},
		{"&&", "binaryOp"}, {"||", "binaryOp"}, {"in", "unmodelled"},
		{".", "dot"}, {"[", "unmodelled"}, {"]", "unmodelled"}, {"|", "unmodelled"}, {"{", "unmodelled"},
		{"}", "unmodelled"}, {":", "unmodelled"}, {",", "unmodelled"}, {"(", "openParen"}, {")", "closeParen"},
		{"?", "unmodelled"}, {"+", "unmodelled"}, {"-", "unmodelled"}, {"*", "unmodelled"}, {"/", "unmodelled"},
		{"%", "unmodelled"}, {"^", "unmodelled"}, {">", "unmodelled"}, {"<", "unmodelled"}, {"!", "unaryOp"},
	}
}

func isJSWordChar(r byte) bool {
	return r == '_' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')
}

// isJexlIdentRune: Jexl's identifier characters (ASCII letters, _, $, Cyrillic а-я/А-Я, Latin-1 letters).
func isJexlIdentRune(r rune, first bool) bool {
	switch {
	case r == '_' || r == '$' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z'):
		return true
	case !first && '0' <= r && r <= '9':
		return true
	case 'а' <= r && r <= 'я', 'А' <= r && r <= 'Я':
		return true
	case (0xC0 <= r && r <= 0xD6) || (0xD8 <= r && r <= 0xF6) || (0xF8 <= r && r <= 0xFF):
		return true
	}
	return false
}

// wordAt reports whether s[i:] starts with word as a whole word (JavaScript's \bword\b).
func wordAt(s string, i int, word string) bool {
	if !strings.HasPrefix(s[i:], word) {
		return false
	}
	end := i + len(word)
	return (i == 0 || !isJSWordChar(s[i-1])) && (end == len(s) || !isJSWordChar(s[end]))
}

// jexlTokenize splits an expression the way Jexl's Lexer does: at each position the first of
// strings, whitespace, true/false, grammar elements, identifiers and numbers that matches.
func jexlTokenize(s string) ([]jexlToken, error) {
	var out []jexlToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'':
			// '(?:(?:\\')|[^'])*' : an escaped quote is taken whole; with no closing quote left,
			// backtracking closes the string at the last escaped quote.
			j, lastEscaped := i+1, -1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' && j+1 < len(s) && s[j+1] == c {
					lastEscaped = j + 1
					j++
				}
				j++
			}
			if j >= len(s) {
				if lastEscaped < 0 {
					return nil, fmt.Errorf("%w: invalid expression token %s", errJexl, s[i:])
				}
				j = lastEscaped
			}
			raw := s[i+1 : j]
			raw = strings.ReplaceAll(raw, `\`+string(c), string(c))
			raw = strings.Replace(raw, `\\`, `\`, 1)
			out = append(out, jexlToken{kind: "literal", text: s[i : j+1], value: raw})
			i = j + 1
			continue
		case unicode.IsSpace(rune(c)):
			i++
			continue
		case wordAt(s, i, "true"), wordAt(s, i, "false"):
			word := "true"
			if c == 'f' {
				word = "false"
			}
			out = append(out, jexlToken{kind: "literal", text: word, value: word == "true"})
			i += len(word)
			continue
		}
		matched := false
		for _, e := range jexlElements() {
			if e.text == "in" && !wordAt(s, i, "in") || !strings.HasPrefix(s[i:], e.text) {
				continue
			}
			out = append(out, jexlToken{kind: e.kind, text: e.text})
			i += len(e.text)
			matched = true
			break
		}
		if matched {
			continue
		}
		if r := []rune(s[i:])[0]; isJexlIdentRune(r, true) {
			j := i
			for _, r := range s[i:] {
				if !isJexlIdentRune(r, false) {
					break
				}
				j += len(string(r))
			}
			out = append(out, jexlToken{kind: "identifier", text: s[i:j]})
			i = j
			continue
		}
		if j := numberEnd(s, i); j > i {
			f, _ := strconv.ParseFloat(s[i:j], 64)
			out = append(out, jexlToken{kind: "literal", text: s[i:j], value: f})
			i = j
			continue
		}
		return nil, fmt.Errorf("%w: invalid expression token %q", errJexl, s[i:])
	}
	return out, nil
}

// numberEnd matches Jexl's (?:[0-9]*\.[0-9]+)|[0-9]+ at i and returns where it ends (i: no match).
func numberEnd(s string, i int) int {
	j := i
	for j < len(s) && '0' <= s[j] && s[j] <= '9' {
		j++
	}
	if j < len(s) && s[j] == '.' && j+1 < len(s) && '0' <= s[j+1] && s[j+1] <= '9' {
		j++
		for j < len(s) && '0' <= s[j] && s[j] <= '9' {
			j++
		}
	}
	return j
}

type jexlNode struct {
	op          string // "literal", "identifier", "!", or a binary operator
	value       interface{}
	name        string
	from        *jexlNode
	left, right *jexlNode
}

type jexlParser struct {
	tokens []jexlToken
	pos    int
}

// jexlCompile parses an expression as Jexl.compile does, within the modelled subset.
func jexlCompile(expr string) (*jexlNode, error) {
	tokens, err := jexlTokenize(expr)
	if err != nil {
		return nil, err
	}
	for _, t := range tokens {
		if t.kind == "unmodelled" {
			return nil, fmt.Errorf("%w: token %q in %q", errUnmodelled, t.text, expr)
		}
	}
	if len(tokens) == 0 {
		return nil, nil // Jexl compiles an empty expression to an empty tree, which evaluates to undefined.
	}
	p := &jexlParser{tokens: tokens}
	n, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.tokens) {
		return nil, fmt.Errorf("%w: token %s unexpected in expression: %s", errJexl, p.tokens[p.pos].text, expr)
	}
	return n, nil
}

func jexlPrecedence(op string) int {
	if op == "==" || op == "!=" {
		return 20
	}
	return 10
}

// binary parses operands joined by binary operators of at least the given precedence, left to right.
func (p *jexlParser) binary(min int) (*jexlNode, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.pos < len(p.tokens) && p.tokens[p.pos].kind == "binaryOp" && jexlPrecedence(p.tokens[p.pos].text) >= min {
		op := p.tokens[p.pos].text
		p.pos++
		right, err := p.binary(jexlPrecedence(op) + 1)
		if err != nil {
			return nil, err
		}
		left = &jexlNode{op: op, left: left, right: right}
	}
	return left, nil
}

func (p *jexlParser) unary() (*jexlNode, error) {
	if p.pos >= len(p.tokens) {
		return nil, fmt.Errorf("%w: unexpected end of expression", errJexl)
	}
	t := p.tokens[p.pos]
	p.pos++
	var n *jexlNode
	switch t.kind {
	case "unaryOp":
		operand, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &jexlNode{op: "!", right: operand}, nil
	case "literal":
		n = &jexlNode{op: "literal", value: t.value}
	case "identifier":
		n = &jexlNode{op: "identifier", name: t.text}
	case "openParen":
		inner, err := p.binary(0)
		if err != nil {
			return nil, err
		}
		if p.pos >= len(p.tokens) || p.tokens[p.pos].kind != "closeParen" {
			return nil, fmt.Errorf("%w: unclosed parenthesis", errJexl)
		}
		p.pos++
		n = inner
	case "dot":
		return nil, fmt.Errorf("%w: a relative identifier", errUnmodelled)
	default:
		return nil, fmt.Errorf("%w: token %s unexpected in expression", errJexl, t.text)
	}
	for p.pos < len(p.tokens) && p.tokens[p.pos].kind == "dot" {
		p.pos++
		if p.pos >= len(p.tokens) || p.tokens[p.pos].kind != "identifier" {
			return nil, fmt.Errorf("%w: expected an identifier after a dot", errJexl)
		}
		n = &jexlNode{op: "identifier", name: p.tokens[p.pos].text, from: n}
		p.pos++
	}
	return n, nil
}

// jexlEval evaluates a compiled expression against the chart's values, as Jexl.evalSync does.
func jexlEval(n *jexlNode, context map[string]interface{}) (interface{}, error) {
	if n == nil {
		return nil, nil
	}
	switch n.op {
	case "literal":
		return n.value, nil
	case "identifier":
		if n.from == nil {
			return context[n.name], nil
		}
		from, err := jexlEval(n.from, context)
		if err != nil {
			return nil, err
		}
		if list, ok := from.([]interface{}); ok {
			if len(list) == 0 {
				return nil, nil
			}
			from = list[0]
		}
		switch v := from.(type) {
		case nil:
			return nil, nil
		case map[string]interface{}:
			return v[n.name], nil
		default:
			return nil, fmt.Errorf("%w: property %s of a %T", errUnmodelled, n.name, from)
		}
	case "!":
		v, err := jexlEval(n.right, context)
		return !jsTruthy(v), err
	}
	left, err := jexlEval(n.left, context)
	if err != nil {
		return nil, err
	}
	switch n.op {
	case "&&":
		if !jsTruthy(left) {
			return left, nil
		}
		return jexlEval(n.right, context)
	case "||":
		if jsTruthy(left) {
			return left, nil
		}
		return jexlEval(n.right, context)
	}
	right, err := jexlEval(n.right, context)
	if err != nil {
		return nil, err
	}
	if n.op == "==" {
		return jsLooseEqual(left, right), nil
	}
	return !jsLooseEqual(left, right), nil
}

// jsNormalize turns the numbers of decoded YAML into float64, JavaScript's only number type.
func jsNormalize(v interface{}) interface{} {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case float32:
		return float64(n)
	}
	return v
}

func jsTruthy(v interface{}) bool {
	switch x := jsNormalize(v).(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case float64:
		return x != 0 && !math.IsNaN(x)
	}
	return true
}

// jsString is JavaScript's String(v) for the values a chart's values hold.
func jsString(v interface{}) string {
	switch x := jsNormalize(v).(type) {
	case nil:
		return "" // only inside arrays; a bare undefined is handled by the callers
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		switch {
		case math.IsNaN(x):
			return "NaN"
		case math.IsInf(x, 0):
			return map[bool]string{true: "Infinity", false: "-Infinity"}[x > 0]
		case x != 0 && (math.Abs(x) >= 1e21 || math.Abs(x) < 1e-6):
			return strings.Replace(strconv.FormatFloat(x, 'g', -1, 64), "e-0", "e-", 1)
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []interface{}:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = jsString(e)
		}
		return strings.Join(parts, ",")
	}
	return "[object Object]"
}

// jsNumber is JavaScript's Number(v) for strings and booleans.
func jsNumber(v interface{}) float64 {
	switch x := jsNormalize(v).(type) {
	case float64:
		return x
	case bool:
		if x {
			return 1
		}
		return 0
	case string:
		s := strings.TrimSpace(x)
		switch s {
		case "":
			return 0
		case "Infinity", "+Infinity":
			return math.Inf(1)
		case "-Infinity":
			return math.Inf(-1)
		}
		for prefix, base := range map[string]int{"0x": 16, "0X": 16, "0o": 8, "0O": 8, "0b": 2, "0B": 2} {
			if strings.HasPrefix(s, prefix) {
				if n, err := strconv.ParseUint(s[2:], base, 64); err == nil && !strings.Contains(s, "_") {
					return float64(n)
				}
				return math.NaN()
			}
		}
		if strings.ContainsAny(s, "_xXpPiInN") {
			return math.NaN() // ParseFloat reads forms (inf, nan, 1_0, hex floats) JavaScript does not
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
	}
	return math.NaN()
}

// jsLooseEqual is JavaScript's == (the Abstract Equality Comparison) over values of decoded YAML.
func jsLooseEqual(a, b interface{}) bool {
	a, b = jsNormalize(a), jsNormalize(b)
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	isObject := func(v interface{}) bool {
		switch v.(type) {
		case map[string]interface{}, []interface{}:
			return true
		}
		return false
	}
	switch {
	case isObject(a) && isObject(b):
		return false // distinct decoded objects are never the same reference
	case isObject(a):
		return jsLooseEqual(jsString(a), b)
	case isObject(b):
		return jsLooseEqual(a, jsString(b))
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return x == y
		}
	case bool:
		if y, ok := b.(bool); ok {
			return x == y
		}
	case float64:
		if y, ok := b.(float64); ok {
			return x == y
		}
	}
	return jsNumber(a) == jsNumber(b)
}

package config

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParse feeds Parse two values for known keys (picked by index, so the
// fuzzer reaches every validator) and one arbitrary key/value pair.
func FuzzParse(f *testing.F) {
	seeds := []struct {
		k1       uint8
		v1       string
		k2       uint8
		v2       string
		key, val string
		prevKind uint8
	}{
		{0, "debug", 1, "60", "x", "y", 0},
		{2, "abc", 3, "tRuE", "loglevel", "info", 1},
		{5, "sometimes", 7, "Kube-System", "", "", 2},
		{9, "ftp://user:pw@x", 10, "docker.io/foo", "kubevipChartValue", "a: b", 0},
		{11, "v1.2.3-rc.1", 12, "a: b\n c: d", "metricPort", "1", 1},
		{12, "- a\n- b", 16, "{x: 1}: y", "k", "v", 2},
		{12, "x: *a", 16, ".nan", "kubevipChartRef", "oci://h/p", 0},
		{10, "oci://ghcr.io/kv", 14, "oci://a:b@c/d", "", "", 1},
		{1, "0", 1, "-5", "operateGuestClusterInterval ", "1.5", 2},
		{2, "70000", 8, strings.Repeat("a", 54), strings.Repeat("é", 80), "\xff", 0},
		{16, "a: &x [*x, *x]\nb: *x", 13, "kv.1", "\x00", "\x00", 1},
		{4, "90m", 4, "-1h", "addressRetension", "24h", 2},
		{4, "31536001", 1, "8760h", "addressRetention ", "0", 1},
		{4, "9999999999999999999h", 4, " 0\n", "", "", 0},
	}
	for _, s := range seeds {
		f.Add(s.k1, s.v1, s.k2, s.v2, s.key, s.val, s.prevKind)
	}
	keys := Keys()
	prevs := []Config{Default(), {}, previousConfig(f)}
	f.Fuzz(func(t *testing.T, k1 uint8, v1 string, k2 uint8, v2 string, key, val string, prevKind uint8) {
		data := map[string]string{
			keys[int(k1)%len(keys)]: v1,
			keys[int(k2)%len(keys)]: v2,
			key:                     val,
		}
		prev := prevs[int(prevKind)%len(prevs)]

		got, problems := Parse(data, prev)
		checkValid(t, got)

		again, problems2 := Parse(data, prev)
		if !reflect.DeepEqual(got, again) || !reflect.DeepEqual(problems, problems2) {
			t.Fatalf("Parse is not deterministic")
		}

		for _, p := range problems {
			if p.Warning != (p.Reason != ProblemInvalidValue) {
				t.Errorf("Warning flag disagrees with kind: %+v", p)
			}
			sensitive := strings.HasSuffix(p.Key, "ChartValues") && !p.Warning
			if (sensitive || p.Warning) && p.Value != "" {
				t.Errorf("problem echoes a value it must hide: %v", p)
			}
			if sensitive && !safeValuesMessage(p.Message) {
				t.Errorf("chart values problem has unexpected text: %q", p.Message)
			}
			if len(p.Value) > maxEcho+3 {
				t.Errorf("problem value too long: %d bytes", len(p.Value))
			}
			_ = p.Error()
		}
		_ = got.String()
	})
}

// safeValuesMessage accepts exactly the messages parseValues can build from
// constants, so any text copied from the input fails it.
func safeValuesMessage(msg string) bool {
	rest, ok := strings.CutPrefix(msg, "invalid value (not shown, it may contain secrets): ")
	if !ok {
		return false
	}
	switch rest {
	case "must be a YAML mapping of chart values, not a list",
		"must be a YAML mapping of chart values, not a single scalar",
		"invalid YAML: NaN and infinite numbers cannot be chart values":
		return true
	}
	rest, ok = strings.CutPrefix(rest, "invalid YAML")
	if !ok {
		return false
	}
	if r, ok := strings.CutPrefix(rest, " at line "); ok {
		n := 0
		for n < len(r) && r[n] >= '0' && r[n] <= '9' {
			n++
		}
		if n == 0 {
			return false
		}
		rest = r[n:]
	}
	if rest == "" {
		return true
	}
	problem, ok := strings.CutPrefix(rest, ": ")
	return ok && (knownYAMLProblem(problem) ||
		problem == "alias refers to an unknown anchor" || problem == "a mapping key is itself a list or mapping" ||
		problem == "a key is given twice in one mapping")
}

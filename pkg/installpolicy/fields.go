package installpolicy

import (
	"reflect"
	"sort"
	"strings"
)

// setFields lists the JSON names of the fields of the struct v points to, or is, that are set
// (not their zero value) and not in allowed. Inlined structs (TypeMeta, and the like) count their
// own fields. It is how every allow-list of fields here is held: a field the Kubernetes types gain
// in a later release is refused until it is named.
func setFields(v interface{}, allowed ...string) []string {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	var out []string
	collectSet(reflect.Indirect(reflect.ValueOf(v)), ok, &out)
	sort.Strings(out)
	return out
}

func collectSet(rv reflect.Value, ok map[string]bool, out *[]string) {
	if rv.Kind() != reflect.Struct {
		return
	}
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			collectSet(rv.Field(i), ok, out)
			continue
		}
		if name == "" {
			name = f.Name
		}
		if !ok[name] && !empty(rv.Field(i)) {
			*out = append(*out, name)
		}
	}
}

// empty reports a value that says nothing: a zero value, an empty list or map, or a pointer to
// one (securityContext: {}).
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	case reflect.Pointer:
		return v.IsNil() || empty(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if !empty(v.Field(i)) {
				return false
			}
		}
		return true
	}
	return v.IsZero()
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// providers has the two shapes of table the builds trim: a map keyed by constants and a switch
// over strings, each entry using an import of its own.
const providers = `package factory

import (
	"fmt"

	"example.com/up/apis"
	"example.com/up/provider/aws"
	"example.com/up/provider/rfc2136"
	gcp "example.com/up/provider/google"
)

// providers is the constructor table.
func providers(name string) (func() string, bool) {
	m := map[string]func() string{
		apis.ProviderAWS:     aws.New,
		apis.ProviderRFC2136: rfc2136.New, // kept
		apis.ProviderGoogle:  gcp.New,
	}
	c, ok := m[name]
	return c, ok
}

func byName(name string) (string, error) {
	switch name {
	case "acme-dns", "acmedns":
		return aws.Name(), nil
	case "exec":
		return "exec", nil
	case "route53":
		return gcp.Name(), nil
	default:
		return "", fmt.Errorf("unrecognized DNS provider: %s", name)
	}
}
`

// static has a struct whose fields the aggregator reads through if statements.
const static = `package static

import (
	"example.com/up/provider/docker"
	"example.com/up/provider/file"
)

type Providers struct {
	Docker *docker.Provider ` + "`json:\"docker\"`" + `
	File   *file.Provider   ` + "`json:\"file\"`" + `
}

func (c *Configuration) defaults() {
	if c.Providers.Docker != nil {
		c.Providers.Docker.Timeout = 0
	}
	if c.Providers.File != nil {
		c.Providers.File.Watch = true
	}
}
`

func write(t *testing.T, src string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "x.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func read(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestKeepTrimsTheOneTableAndItsImports(t *testing.T) {
	file := write(t, providers)
	if err := edit(file, func(e *editor) error { return e.keepEntries(set("ProviderRFC2136")) }); err != nil {
		t.Fatal(err)
	}
	got := read(t, file)
	for _, want := range []string{"apis.ProviderRFC2136: rfc2136.New, // kept", `"example.com/up/provider/rfc2136"`, `case "route53":`, "// providers is the constructor table."} {
		if !strings.Contains(got, want) {
			t.Errorf("the trimmed file lost %q:\n%s", want, got)
		}
	}
	for _, gone := range []string{"ProviderAWS", "ProviderGoogle", "gcp.New"} {
		if strings.Contains(got, gone) {
			t.Errorf("the trimmed file still has %q:\n%s", gone, got)
		}
	}
	// aws and gcp are still used by the switch, which holds no name to keep.
	if !strings.Contains(got, `"example.com/up/provider/aws"`) || !strings.Contains(got, `gcp "example.com/up/provider/google"`) {
		t.Errorf("an import still used was dropped:\n%s", got)
	}
}

func TestKeepTrimsASwitchByItsStrings(t *testing.T) {
	file := write(t, providers)
	if err := edit(file, func(e *editor) error { return e.keepEntries(set("exec,acmedns")) }); err != nil {
		t.Fatal(err)
	}
	got := read(t, file)
	if strings.Contains(got, `"route53"`) || !strings.Contains(got, `case "acme-dns", "acmedns":`) || !strings.Contains(got, "default:") {
		t.Errorf("the switch is not trimmed to its kept cases and default:\n%s", got)
	}
	if !strings.Contains(got, `gcp "example.com/up/provider/google"`) {
		t.Errorf("gcp is still used by the map, and its import must stay:\n%s", got)
	}
}

func TestDropRemovesFieldsAndTheirReads(t *testing.T) {
	file := write(t, static)
	if err := edit(file, func(e *editor) error { return e.dropFields("Providers", set("Docker"), set("c.Providers")) }); err != nil {
		t.Fatal(err)
	}
	got := read(t, file)
	if strings.Contains(got, "docker") || !strings.Contains(got, "c.Providers.File.Watch = true") || !strings.Contains(got, `"example.com/up/provider/file"`) {
		t.Errorf("Docker, its read and its import are not all gone, or File went with them:\n%s", got)
	}
}

// A file no longer of the shape named is an error, and is left as it was: the build stops there.
func TestTrimFailsOnAChangedShape(t *testing.T) {
	for name, c := range map[string]struct {
		src    string
		change func(*editor) error
		why    string
	}{
		"a name no table has":       {providers, func(e *editor) error { return e.keepEntries(set("ProviderRFC2136,ProviderNone")) }, "no entry ProviderNone"},
		"names in two tables":       {providers, func(e *editor) error { return e.keepEntries(set("ProviderAWS,exec")) }, "2 tables"},
		"a field the struct lacks":  {static, func(e *editor) error { return e.dropFields("Providers", set("Docker,Nomad"), set("c.Providers")) }, "1 of the 2 fields"},
		"a read left outside an if": {strings.Replace(static, "c.Providers.Docker.Timeout = 0", "c.Providers.Docker.Timeout = 0\n\t}\n\t_ = c.Providers.Docker\n\tif true {", 1), func(e *editor) error { return e.dropFields("Providers", set("Docker"), set("c.Providers")) }, "still read"},
	} {
		t.Run(name, func(t *testing.T) {
			file := write(t, c.src)
			err := edit(file, c.change)
			if err == nil || !strings.Contains(err.Error(), c.why) {
				t.Fatalf("got %v; want an error saying %q", err, c.why)
			}
			if read(t, file) != c.src {
				t.Error("the file was changed")
			}
		})
	}
}

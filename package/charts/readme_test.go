package charts

import (
	"encoding/xml"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChartReadme: the operator chart's README.md, which Rancher shows as the app's README tab,
// describes every tab of the install form (questions.yaml) and links to the project's home.
func TestChartReadme(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir(OperatorChart), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, c.Metadata.Home) {
		t.Errorf("README.md does not link to the chart's home %s", c.Metadata.Home)
	}
	for _, group := range questionGroups() {
		if !strings.Contains(text, "**"+group+"**") {
			t.Errorf("README.md does not describe the form's tab %q", group)
		}
	}
}

// TestChartIcon: the operator chart's icon is a file shipped in the chart, named with a file://
// path relative to the repository root (Rancher reads such icons from the Git repository of the
// charts; it cannot fetch a data: URI), never an external URL. The file is a self-contained SVG:
// no scripts, no external references.
func TestChartIcon(t *testing.T) {
	c, err := Load(chartDir(OperatorChart))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(c.Metadata.Icon)
	if err != nil || u.Scheme != "file" {
		t.Fatalf("icon %q: want a file:// path into the chart", c.Metadata.Icon)
	}
	rel := strings.TrimPrefix(c.Metadata.Icon, "file://")
	prefix := "charts/" + OperatorChart + "/"
	if !strings.HasPrefix(rel, prefix) || strings.Contains(rel, "..") {
		t.Fatalf("icon %q: want a file of the chart, %s...", c.Metadata.Icon, prefix)
	}
	inChart := strings.TrimPrefix(rel, prefix)
	if !hasFile(c, inChart) {
		t.Errorf("icon %s is not a file of the chart", inChart)
	}
	data, err := os.ReadFile(filepath.Join(chartDir(OperatorChart), filepath.FromSlash(inChart)))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 16*1024 {
		t.Errorf("icon of %d bytes; keep it small", len(data))
	}
	dec := xml.NewDecoder(strings.NewReader(string(data)))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("icon: %v", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = el.Name.Local
			if root != "svg" || !hasAttr(el, "viewBox") {
				t.Errorf("icon root <%s>; want <svg> with a viewBox", root)
			}
		}
		if el.Name.Local == "script" || el.Name.Local == "foreignObject" {
			t.Errorf("icon has a <%s> element", el.Name.Local)
		}
		for _, a := range el.Attr {
			if a.Name.Local == "href" || strings.HasPrefix(a.Name.Local, "on") || strings.Contains(a.Value, "url(http") {
				t.Errorf("icon: <%s %s=%q> refers outside the file or runs code", el.Name.Local, a.Name.Local, a.Value)
			}
		}
	}
}

func hasAttr(el xml.StartElement, name string) bool {
	for _, a := range el.Attr {
		if a.Name.Local == name {
			return true
		}
	}
	return false
}

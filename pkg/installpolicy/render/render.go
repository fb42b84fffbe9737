package render

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

// Target says where and as what a chart is rendered: as Helm renders it for the install (revision
// 1) or the upgrade to revision Revision.
type Target struct {
	Name      string
	Namespace string
	Revision  int
	Upgrade   bool
}

// Capabilities are what every render of a guest chart is told of the cluster: the same fixed set
// for the judge's renders and Helm's, whatever a guest's discovery answers, so that both render
// alike.
func Capabilities() *chartutil.Capabilities {
	return chartutil.DefaultCapabilities.Copy()
}

// Doc is one document a chart rendered, with the template it came from.
type Doc struct {
	Template string `json:"template"`
	Content  string `json:"content"`
}

// renderTemplates renders ch with values as Helm does for rel, without any connection (a
// template's lookup finds nothing), and returns the documents in Helm's install order. A hook
// among them is refused: chartarchive.CheckChart keeps hook templates out, and nothing else may
// make one. It has no bounds of its own: Renderer.Render gives it a budget.
func renderTemplates(chart guestchart.Chart, ch *helmchart.Chart, values map[string]interface{}, rel Target) ([]Doc, error) {
	opts := chartutil.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, Revision: rel.Revision,
		IsInstall: !rel.Upgrade, IsUpgrade: rel.Upgrade}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(ch, values, opts, Capabilities(), true)
	if err != nil {
		return nil, guestchart.Refuse(guestchart.ReasonRenderRefused, "", "the %s chart's values do not merge with its defaults: %s", chart, guestchart.Shorten(err.Error()))
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return nil, &TemplateError{Err: err}
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") || strings.HasPrefix(path.Base(name), "_") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, guestchart.Refuse(guestchart.ReasonRenderRefused, "", "the %s chart rendered something that is not YAML", chart)
	}
	if len(hooks) > 0 {
		return nil, guestchart.Refuse(guestchart.ReasonRenderRefused, "", "the %s chart rendered a hook (%s %s): hooks are not installed", chart, guestchart.Shorten(hooks[0].Kind), guestchart.Shorten(hooks[0].Name))
	}
	out := make([]Doc, 0, len(manifests))
	for _, m := range manifests {
		out = append(out, Doc{Template: m.Name, Content: m.Content})
	}
	return out, nil
}

// TemplateError is a chart that failed to render. Its message names only the template and line:
// the engine's own message quotes the values it was given, which may hold credentials.
type TemplateError struct{ Err error }

func (e *TemplateError) Error() string {
	if m := templateFailure.FindStringSubmatch(e.Err.Error()); m != nil {
		return fmt.Sprintf("the chart failed to render at %s line %s (the engine's message is not shown, as it may quote chart values)", m[1], m[2])
	}
	return "the chart failed to render (the engine's message is not shown, as it may quote chart values)"
}

// templateFailure finds where Helm's template engine failed: "execution error at (<file>:<line>:<col>)",
// "parse error at (<file>:<line>)" or Go's own "template: <file>:<line>:<col>".
var templateFailure = regexp.MustCompile(`(?:template: |error at \()([A-Za-z0-9._/-]+):([0-9]+)`)

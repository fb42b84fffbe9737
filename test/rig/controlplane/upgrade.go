package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// crdChartTemplates is where the CRD chart keeps the generated CRDs, in the working tree and in
// every release's commit.
const crdChartTemplates = "charts/kube-fip-operator-crd/templates"

// ReleaseCRDs returns the kubefip CRDs as the CRD chart of commit shipped them, read from the
// repository's history: what a cluster running that release has installed.
func ReleaseCRDs(commit string) ([]*apiextv1.CustomResourceDefinition, error) {
	root, full, err := repoCommit(commit)
	if err != nil {
		return nil, err
	}
	names, err := git(root, "ls-tree", "--name-only", full, crdChartTemplates+"/")
	if err != nil {
		return nil, fmt.Errorf("listing %s at %s: %w", crdChartTemplates, full[:12], err)
	}
	var out []*apiextv1.CustomResourceDefinition
	for _, name := range strings.Fields(names) {
		if ext := path.Ext(name); ext != ".yaml" && ext != ".yml" {
			continue
		}
		data, err := git(root, "show", full+":"+name)
		if err != nil {
			return nil, fmt.Errorf("reading %s at %s: %w", name, full[:12], err)
		}
		defs, err := decodeCRDs(name, []byte(data))
		if err != nil {
			return nil, err
		}
		out = append(out, defs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CRD in %s at %s", crdChartTemplates, full[:12])
	}
	return out, nil
}

// ChartCRDs returns the kubefip CRDs of the working tree's CRD chart: what an upgrade installs.
func ChartCRDs() ([]*apiextv1.CustomResourceDefinition, error) {
	root, err := rig.RepoRoot()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(crdChartTemplates), "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []*apiextv1.CustomResourceDefinition
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		defs, err := decodeCRDs(file, data)
		if err != nil {
			return nil, err
		}
		out = append(out, defs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CRD in %s", crdChartTemplates)
	}
	return out, nil
}

// decodeCRDs reads every CustomResourceDefinition of a YAML stream.
func decodeCRDs(name string, data []byte) ([]*apiextv1.CustomResourceDefinition, error) {
	var out []*apiextv1.CustomResourceDefinition
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var probe metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &probe); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if probe.Kind != "CustomResourceDefinition" {
			continue
		}
		def := &apiextv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(doc, def); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, def)
	}
	return out, nil
}

// UpgradeCRDs replaces each CRD on the API server with its definition in crds, as `helm upgrade`
// of the CRD chart or `kubectl apply` does: an update of the existing object at its
// resourceVersion (read again on a conflict), or a create for a CRD that is new. It waits until
// every one is Established. The API server starts validating with the new schema a moment later:
// a caller that depends on it probes for it.
func UpgradeCRDs(cfg *rest.Config, crds []*apiextv1.CustomResourceDefinition) error {
	cs, err := apiextclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	client := cs.ApiextensionsV1().CustomResourceDefinitions()
	ctx := context.Background()
	for _, def := range crds {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			existing, err := client.Get(ctx, def.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = client.Create(ctx, def.DeepCopy(), metav1.CreateOptions{})
				return err
			}
			if err != nil {
				return err
			}
			next := def.DeepCopy()
			next.ResourceVersion = existing.ResourceVersion
			_, err = client.Update(ctx, next, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("upgrading CRD %s: %w", def.Name, err)
		}
	}
	for _, def := range crds {
		err := rig.Until(time.Minute, fmt.Sprintf("CRD %s Established after its upgrade", def.Name), nil, func() (bool, error) {
			got, err := client.Get(ctx, def.Name, metav1.GetOptions{})
			return err == nil && established(got), err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func established(def *apiextv1.CustomResourceDefinition) bool {
	for _, c := range def.Status.Conditions {
		if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
			return true
		}
	}
	return false
}

// ReleaseChart loads the chart charts/<name> as it was at commit of this repository's history, as
// the Git repository served it then.
func ReleaseChart(commit, name string) (*chart.Chart, error) {
	root, full, err := repoCommit(commit)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kube-fip-release-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := exportCommit(root, full, dir); err != nil {
		return nil, err
	}
	return loader.LoadDir(filepath.Join(dir, "charts", name))
}

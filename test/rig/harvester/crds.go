package harvester

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/kubefip/kube-fip-operator/test/rig"
)

// crdFiles are the CRDs a Harvester cluster serves to the operator, copied from the upstream
// projects (crds/README.md says from where and what was changed).
//
//go:embed crds/*.yaml
var crdFiles embed.FS

// installTimeout bounds how long Install waits for a CRD to be established and served: an API
// server beside a running suite on two cores can take seconds to pick one up.
const installTimeout = time.Minute

// CRDs returns the CRDs of crds/, decoded: each file holds one, after its comment lines.
func CRDs() ([]*apiextv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(crdFiles, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	var defs []*apiextv1.CustomResourceDefinition
	for _, name := range names {
		data, err := crdFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		def, err := decodeCRD(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path.Base(name), err)
		}
		defs = append(defs, def)
	}
	return defs, nil
}

// decodeCRD reads the one CRD of a YAML stream, skipping the empty document a file's comment
// lines before a "---" make.
func decodeCRD(data []byte) (*apiextv1.CustomResourceDefinition, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var found *apiextv1.CustomResourceDefinition
	for {
		def := &apiextv1.CustomResourceDefinition{}
		err := dec.Decode(def)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if def.Name == "" {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("holds %s and %s: one CRD a file", found.Name, def.Name)
		}
		found = def
	}
	if found == nil {
		return nil, errors.New("holds no CRD")
	}
	return found, nil
}

// Install creates the CRDs in the Harvester API server of cfg, or updates those there, and waits
// until each is Established and its resource is in discovery: a client that starts at once must
// find every kind, or a test would see a failure of the rig's making.
func Install(ctx context.Context, cfg *rest.Config) error {
	defs, err := CRDs()
	if err != nil {
		return err
	}
	client, err := apiextclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, def := range defs {
		if err := apply(ctx, crds, def); err != nil {
			return err
		}
	}
	for _, def := range defs {
		if err := waitServed(ctx, crds, disco, def); err != nil {
			return err
		}
	}
	return nil
}

// crdClient is the part of the CRD client apply and waitServed use.
type crdClient interface {
	Create(context.Context, *apiextv1.CustomResourceDefinition, metav1.CreateOptions) (*apiextv1.CustomResourceDefinition, error)
	Get(context.Context, string, metav1.GetOptions) (*apiextv1.CustomResourceDefinition, error)
	Update(context.Context, *apiextv1.CustomResourceDefinition, metav1.UpdateOptions) (*apiextv1.CustomResourceDefinition, error)
}

// apply creates def, or gives an existing CRD of its name def's spec and labels: a second Install
// into the same API server is no error.
func apply(ctx context.Context, crds crdClient, def *apiextv1.CustomResourceDefinition) error {
	_, err := crds.Create(ctx, def.DeepCopy(), metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s: %w", def.Name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := crds.Get(ctx, def.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got.Labels, got.Annotations, got.Spec = def.Labels, def.Annotations, def.Spec
		_, err = crds.Update(ctx, got, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("updating CRD %s: %w", def.Name, err)
	}
	return nil
}

// waitServed waits until def is Established and every served version of it lists its plural in
// discovery.
func waitServed(ctx context.Context, crds crdClient, disco discovery.DiscoveryInterface, def *apiextv1.CustomResourceDefinition) error {
	return rig.Until(installTimeout, "CRD "+def.Name+" established and served", ctx.Err, func() (bool, error) {
		got, err := crds.Get(ctx, def.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !established(got) {
			return false, nil
		}
		for _, v := range def.Spec.Versions {
			if !v.Served {
				continue
			}
			list, err := disco.ServerResourcesForGroupVersion(def.Spec.Group + "/" + v.Name)
			if err != nil {
				return false, err
			}
			if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == def.Spec.Names.Plural }) {
				return false, nil
			}
		}
		return true, nil
	})
}

func established(def *apiextv1.CustomResourceDefinition) bool {
	for _, c := range def.Status.Conditions {
		if c.Type == apiextv1.Established {
			return c.Status == apiextv1.ConditionTrue
		}
	}
	return false
}

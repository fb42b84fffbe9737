package harvester

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// The resources the writers keep, by the names the Harvester cluster serves them under.
var (
	NADResource      = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}
	LBPoolResource   = schema.GroupVersionResource{Group: "loadbalancer.harvesterhci.io", Version: "v1beta1", Resource: "ippools"}
	DHCPPoolResource = schema.GroupVersionResource{Group: "network.harvesterhci.io", Version: "v1alpha1", Resource: "ippools"}
	VMResource       = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	VMIResource      = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
)

// Cluster writes into a Harvester API server the objects its controllers would leave there. Its
// clients act as the cluster's administrator, as Harvester's own controllers do; the operator
// reaches the cluster through the test cluster proxy instead (Register).
type Cluster struct {
	Config *rest.Config
	Dyn    dynamic.Interface
	Kube   kubernetes.Interface
}

// NewCluster connects to the Harvester API server of cfg. The CRDs must be installed (Install).
func NewCluster(cfg *rest.Config) (*Cluster, error) {
	// client-go's default of 5 requests a second would make a test of many VMs wait on the client.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{Config: cfg, Dyn: dyn, Kube: kube}, nil
}

// resource is the client of gvr in namespace, or of the cluster-scoped gvr when namespace is "".
func (c *Cluster) resource(gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return c.Dyn.Resource(gvr)
	}
	return c.Dyn.Resource(gvr).Namespace(namespace)
}

// ensureNamespace creates namespace unless it exists: the API server refuses objects in a
// namespace it does not know, and Harvester's namespaces are the test's to choose.
func (c *Cluster) ensureNamespace(ctx context.Context, namespace string) error {
	if namespace == "" {
		return nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	return nil
}

// change reads an object, lets edit change it, and writes it back, again on a conflict, as a
// controller does: with UpdateStatus through the status subresource when status is set, else
// with a plain Update (the only way for a CRD without one).
func (c *Cluster) change(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, status bool, edit func(*unstructured.Unstructured) error) (*unstructured.Unstructured, error) {
	client := c.resource(gvr, namespace)
	var out *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := edit(obj); err != nil {
			return err
		}
		if status {
			out, err = client.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
		} else {
			out, err = client.Update(ctx, obj, metav1.UpdateOptions{})
		}
		return err
	})
	return out, err
}

// remove deletes an object after taking off its finalizers, which the controllers that would
// process them do not run here; one already gone is no error.
func (c *Cluster) remove(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) error {
	_, err := c.change(ctx, gvr, namespace, name, false, func(obj *unstructured.Unstructured) error {
		obj.SetFinalizers(nil)
		return nil
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clearing the finalizers of %s %s: %w", gvr.Resource, key(namespace, name), err)
	}
	err = c.resource(gvr, namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", gvr.Resource, key(namespace, name), err)
	}
	return nil
}

// key names an object as "namespace/name", or "name" when cluster-scoped.
func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// newObject is an object of kind in group/version with the given name and labels.
func newObject(gvr schema.GroupVersionResource, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// stamp is a time as wrangler's conditions and Harvester's controllers write it: RFC 3339, UTC,
// whole seconds.
func stamp(t metav1.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

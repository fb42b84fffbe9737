// Package metawrite writes the operator's own objects — a FloatingIP discovery creates, the
// allocation object of a claim, a FloatingIP's status — and reads back only what the API server
// gave them: their metadata (uid, resourceVersion, creationTimestamp). The API server answers a
// create or an update with the whole object, which the writer already holds; decoding it was a
// tenth of the operator's CPU through a backlog of new clusters. The request asks for the answer
// as meta.k8s.io/v1 PartialObjectMetadata, so the API server sends the metadata alone too.
//
// The objects it returns are the ones written, with the metadata the API server answered: the
// same object the informer delivers next, as no admission of the operator's kinds changes what
// is written (the CRDs default nothing and keep every field the operator sets).
package metawrite

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
)

// metadataOnly asks for an answer of the object's metadata alone, in JSON; plain JSON is the
// fallback of an API server that cannot transform it (the answer is then the whole object, of
// which only the metadata is read).
const metadataOnly = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// Writer sends the writes to the API server of the operator's group.
type Writer struct {
	client rest.Interface
}

// New returns a Writer on cfg: its rate limiter (rest.CopyConfig keeps the one every client of
// the process shares), user agent and credentials.
func New(cfg *rest.Config) (*Writer, error) {
	c := rest.CopyConfig(cfg)
	c.APIPath = "/apis"
	gv := v1.SchemeGroupVersion
	c.GroupVersion = &gv
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = metadataOnly
	// Decodes the API server's Status of a refused request, so that its errors are the typed
	// errors of apimachinery (IsConflict, IsAlreadyExists) as from any client.
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("creating the client of the operator's writes: %w", err)
	}
	return &Writer{client: client}, nil
}

// write sends obj, of kind, to req and returns the metadata of the answer. The API server reads
// a custom resource's kind from the body: obj's is set to kind.
func write(ctx context.Context, req *rest.Request, kind string, obj runtime.Object) (metav1.ObjectMeta, error) {
	obj.GetObjectKind().SetGroupVersionKind(v1.SchemeGroupVersion.WithKind(kind))
	body, err := json.Marshal(obj)
	if err != nil {
		return metav1.ObjectMeta{}, err
	}
	res := req.Body(body).Do(ctx)
	// Error, not Raw's error: it reads the API server's Status into the typed error.
	if err := res.Error(); err != nil {
		return metav1.ObjectMeta{}, err
	}
	raw, _ := res.Raw()
	var answer struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return metav1.ObjectMeta{}, fmt.Errorf("reading the API server's answer: %w", err)
	}
	if answer.Metadata.UID == "" || answer.Metadata.ResourceVersion == "" {
		return metav1.ObjectMeta{}, fmt.Errorf("the API server's answer names no object (%d bytes)", len(raw))
	}
	return answer.Metadata, nil
}

// FloatingIPs is the generated FloatingIP controller whose Create and UpdateStatus go through
// the Writer; everything else is the controller's.
type FloatingIPs struct {
	kubefipcontrollers.FloatingIPController
	W *Writer
}

// Create creates f and returns it as created.
func (c FloatingIPs) Create(f *v1.FloatingIP) (*v1.FloatingIP, error) {
	meta, err := write(context.TODO(), c.W.client.Post().Namespace(f.Namespace).Resource("floatingips"), "FloatingIP", f)
	return writtenFloatingIP(f, meta, err)
}

// UpdateStatus writes f's status and returns f as written.
func (c FloatingIPs) UpdateStatus(f *v1.FloatingIP) (*v1.FloatingIP, error) {
	req := c.W.client.Put().Namespace(f.Namespace).Resource("floatingips").Name(f.Name).SubResource("status")
	meta, err := write(context.TODO(), req, "FloatingIP", f)
	return writtenFloatingIP(f, meta, err)
}

// writtenFloatingIP is f, its kind set as lasso's client sets it on what it returns, with the
// metadata the API server answered.
func writtenFloatingIP(f *v1.FloatingIP, meta metav1.ObjectMeta, err error) (*v1.FloatingIP, error) {
	if err != nil {
		return nil, err
	}
	out := *f
	out.ObjectMeta = meta
	return &out, nil
}

// Allocations is the generated FloatingIPAllocation controller whose Create goes through the
// Writer.
type Allocations struct {
	kubefipcontrollers.FloatingIPAllocationController
	W *Writer
}

// Create creates a and returns it as created.
func (c Allocations) Create(a *v1.FloatingIPAllocation) (*v1.FloatingIPAllocation, error) {
	meta, err := write(context.TODO(), c.W.client.Post().Resource("floatingipallocations"), "FloatingIPAllocation", a)
	if err != nil {
		return nil, err
	}
	out := *a
	out.ObjectMeta = meta
	return &out, nil
}

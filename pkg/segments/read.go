package segments

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

// Getter does one GET of an absolute API path with its query ("/apis/kubevirt.io/v1/
// virtualmachineinstances?limit=25&continue=…") and returns the body. Its client bounds the
// bytes, JSON values and time of each answer; an answer over its budget is an error wrapping
// guest.ErrGuestResponseTooLarge (as the guest client's is), on which Read asks again for fewer
// objects. A list the cluster does not serve is an error for which apierrors.IsNotFound holds (as
// client-go's is), or one wrapping ErrNotServed.
type Getter interface {
	Get(ctx context.Context, pathAndQuery string) ([]byte, error)
}

// ErrNotServed is what a Getter not built on client-go wraps when the cluster answers 404.
var ErrNotServed = errors.New("the cluster does not serve this API")

// maxContinue bounds the continue token sent back: the API server's is the base64 of a storage
// key and a revision, well under 1 KiB; a longer one is no token of an API server.
const maxContinue = 4096

// Limits bound the read of each kind; a zero or negative field takes DefaultLimits' figure.
type Limits struct {
	// PageSize is how many objects one request asks for at most.
	PageSize int
	// MaxPages bounds the requests that return a page.
	MaxPages int
	// MaxObjects bounds the objects read.
	MaxObjects int
	// MaxBytes bounds the bytes of all pages together. It bounds what a read transfers and
	// costs in time, not what it holds: a page is let go once decoded.
	MaxBytes int64
	// NoVMs leaves out the VirtualMachines and VirtualMachineInstances, by far the most objects of
	// a cluster: a read of its networks and pools only, for a caller that must answer quickly.
	// The view then has no KindVM claims and no interfaces.
	NoVMs bool
}

// DefaultLimits are the limits of each kind's read:
//
//   - PageSize 25: a page of the largest objects read must fit the guest client's budget of
//     16,384 JSON values an answer. A VirtualMachineInstance as Harvester's own testdata shows one
//     is about 200 values; its managed fields, and the interfaces a guest agent reports of a
//     Kubernetes node (a veth for every pod), add a few hundred more. 25 of 600 values fit; a
//     page that does not is asked again at half the size, which then holds for the kind.
//   - MaxObjects 5000: the most objects of one kind a read is worth. A cluster with more is read
//     in part, and View.Limited says so.
//   - MaxPages 400: MaxObjects in pages of 25 twice over, for pages halved, and a bound on a
//     cluster that answers empty pages with a continue token without end.
//   - MaxBytes 128 MiB: MaxObjects objects of about 25 KiB, a VirtualMachineInstance with its
//     managed fields; what a read may transfer, not what it holds.
func DefaultLimits() Limits {
	return Limits{PageSize: 25, MaxPages: 400, MaxObjects: 5000, MaxBytes: 128 << 20}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.PageSize <= 0 {
		l.PageSize = d.PageSize
	}
	if l.MaxPages <= 0 {
		l.MaxPages = d.MaxPages
	}
	if l.MaxObjects <= 0 {
		l.MaxObjects = d.MaxObjects
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	return l
}

// source is one kind's list.
type source struct {
	kind Kind
	path string
}

// sources are the lists a read makes, in the order the builder needs them: NADs before the pools
// and VMIs placed through them.
func sources() []source {
	return []source{
		{kind: KindNetwork, path: "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions"},
		{kind: KindLoadBalancerPool, path: "/apis/loadbalancer.harvesterhci.io/v1beta1/ippools"},
		{kind: KindDHCPPool, path: "/apis/network.harvesterhci.io/v1alpha1/ippools"},
		{kind: KindVM, path: "/apis/kubevirt.io/v1/virtualmachineinstances"},
	}
}

// Objects names the kind's objects for a message: "DHCP IPPools".
func (k Kind) Objects() string { return whatOf(k) }

// whatOf names a kind's objects for a message.
func whatOf(k Kind) string {
	switch k {
	case KindNetwork:
		return "NetworkAttachmentDefinitions"
	case KindLoadBalancerPool, KindGlobalLoadBalancerPool:
		return "load balancer IPPools"
	case KindDHCPPool:
		return "DHCP IPPools"
	case KindVM:
		return "VirtualMachineInstances"
	}
	return string(k)
}

// Read reads what the Harvester cluster cluster (its Rancher management cluster id) says about
// its segments, through get, read-only. A kind whose API is not served is an empty list, named in
// View.Absent; a kind whose read reached a limit is kept as far as it was read, and View.Limited
// says which; any other failure of a list fails the read. Its error wraps the Getter's, whose text
// may come from the cluster: redact it before anyone sees it.
func Read(ctx context.Context, get Getter, cluster string, lim Limits) (*View, error) {
	r := &reader{get: get, lim: lim.withDefaults(), b: newBuilder(cluster)}
	for _, s := range sources() {
		if r.lim.NoVMs && s.kind == KindVM {
			continue
		}
		if err := r.list(ctx, s); err != nil {
			return nil, err
		}
	}
	return r.b.view(), nil
}

type reader struct {
	get Getter
	lim Limits
	b   *builder
}

// limited records a limit that ended the read of a kind.
func (r *reader) limited(k Kind, limit string, figure int64, unit string) {
	v := r.b.v
	if v.Limited != "" {
		v.Limited += "; "
	}
	v.Limited += fmt.Sprintf("%s: %s (%d %s)", whatOf(k), limit, figure, unit)
}

// list reads every page of one kind into the builder, within the limits.
func (r *reader) list(ctx context.Context, s source) error {
	size := r.lim.PageSize
	cont := ""
	objects, pages := 0, 0
	var bytes int64
	for {
		if pages == r.lim.MaxPages {
			r.limited(s.kind, "MaxPages", int64(r.lim.MaxPages), "pages")
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("listing %s: %w", whatOf(s.kind), context.Cause(ctx))
		}
		ask := min(size, r.lim.MaxObjects-objects)
		q := url.Values{"limit": {strconv.Itoa(ask)}}
		if cont != "" {
			q.Set("continue", cont)
		}
		body, err := r.get.Get(ctx, s.path+"?"+q.Encode())
		r.b.v.Requests++
		switch {
		case err == nil:
		case pages == 0 && (apierrors.IsNotFound(err) || errors.Is(err, ErrNotServed)):
			r.b.v.Absent = append(r.b.v.Absent, s.kind)
			return nil
		case errors.Is(err, guest.ErrGuestResponseTooLarge) && ask > 1:
			// Objects vary in size; fewer of them fit. The smaller size holds for the rest of
			// the kind, whose objects are alike.
			size = ask / 2
			continue
		default:
			return fmt.Errorf("listing %s: %w", whatOf(s.kind), err)
		}
		pages++
		bytes += int64(len(body))
		items, next, err := decodePage(body)
		if err != nil {
			return fmt.Errorf("listing %s, page %d: %w", whatOf(s.kind), pages, err)
		}
		// A server that ignores limit is read no further than MaxObjects.
		over := len(items) > r.lim.MaxObjects-objects
		if over {
			items = items[:r.lim.MaxObjects-objects]
		}
		for _, item := range items {
			r.b.add(s.kind, item)
		}
		objects += len(items)
		switch {
		case next == "" && !over:
			return nil
		case objects >= r.lim.MaxObjects:
			r.limited(s.kind, "MaxObjects", int64(r.lim.MaxObjects), "objects")
			return nil
		case bytes >= r.lim.MaxBytes:
			r.limited(s.kind, "MaxBytes", r.lim.MaxBytes, "bytes")
			return nil
		case len(next) > maxContinue:
			return fmt.Errorf("listing %s, page %d: the continue token has %d bytes, more than an API server's", whatOf(s.kind), pages, len(next))
		}
		cont = next
	}
}

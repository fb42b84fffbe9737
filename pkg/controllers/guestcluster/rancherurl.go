package guestcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

// SettingResource is Rancher's settings.management.cattle.io (management.cattle.io/v3 Setting,
// cluster-scoped; its value and default sit at the object's root).
func SettingResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "management.cattle.io", Version: "v3", Resource: "settings"}
}

// settingsGetter reads one Setting by name: the dynamic client in the operator, whose RBAC grants
// get on the two address settings and nothing else.
type settingsGetter interface {
	Get(ctx context.Context, name string, options metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error)
}

// addressReuse is how long one read of Rancher's address settings serves the guest passes that
// follow it. A backlog of guests would otherwise read both settings for each of them, two of the
// nine requests of a guest pass. A Rancher moved to another address is followed within it, and
// the address it left, which was Rancher's, is accepted no longer than that.
const addressReuse = 2 * time.Second

// rancherAddresses returns Rancher's own addresses, read within addressReuse or now (a read in
// flight shared by every pass that needs it); see readRancherAddresses. The slice is shared:
// read-only.
func (c *controller) rancherAddresses(ctx context.Context) ([]string, error) {
	return c.addresses.Get("", func() ([]string, error) { return c.readRancherAddresses(ctx) })
}

// readRancherAddresses reads Rancher's own addresses, the values of its internal-server-url and
// server-url settings, as Rancher reads a setting: its value, else its default. A setting that
// does not exist or is empty adds nothing.
func (c *controller) readRancherAddresses(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	var out []string
	for _, name := range []string{guest.SettingInternalServerURL, guest.SettingServerURL} {
		s, err := c.Settings.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading Rancher's %s setting: %w", name, err)
		}
		value, _, _ := unstructured.NestedString(s.Object, "value")
		if strings.TrimSpace(value) == "" {
			value, _, _ = unstructured.NestedString(s.Object, "default")
		}
		if value = strings.TrimSpace(value); value != "" {
			out = append(out, value)
		}
	}
	return out, nil
}

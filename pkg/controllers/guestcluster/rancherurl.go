package guestcluster

import (
	"context"
	"time"

	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

// addressReuse is how long one read of Rancher's address settings serves the guest passes that
// follow it. A backlog of guests would otherwise read both settings for each of them, two of the
// nine requests of a guest pass. A Rancher moved to another address is followed within it, and
// the address it left, which was Rancher's, is accepted no longer than that.
const addressReuse = 2 * time.Second

// rancherAddresses returns Rancher's own addresses (guest.RancherAddresses), read within
// addressReuse or now, within the operator's request timeout (a read in flight shared by every pass
// that needs it). The slice is shared: read-only.
func (c *controller) rancherAddresses(ctx context.Context) ([]string, error) {
	return c.addresses.Get("", func() ([]string, error) {
		ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
		return guest.RancherAddresses(ctx, c.Settings)
	})
}

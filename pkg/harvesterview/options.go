package harvesterview

import (
	"time"

	"github.com/kubefip/kube-fip-operator/pkg/segments"
)

// Options tune the reading of Harvester clusters.
type Options struct {
	// Interval is how often each Harvester cluster a range names is read; 0 is DefaultInterval,
	// and a negative one reads none (the operator then judges ranges by their objects alone).
	Interval time.Duration
	// Timeout bounds each request.
	Timeout time.Duration
	// Limits bound each read.
	Limits segments.Limits
}

// Off tells whether no Harvester cluster is read.
func (o Options) Off() bool { return o.Interval < 0 }

// readers is how many Harvester clusters are read at once: a read is a few requests, and the
// clusters are few.
const readers = 2

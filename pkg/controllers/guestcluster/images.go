package guestcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/imagedigest"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
)

// Before anything reaches a guest, the images the charts will run: each pinned by a digest is
// held to what its registry's tag names now, with the deployment's pull Secret as credentials, and
// the guest gets the operator's copy of that Secret where the charts' pods pull with it. A refusal
// leaves the running install as it is: no release is upgraded, and the addresses still go where
// the provider installed earlier reads.

// pullSecret is the deployment's image pull Secret as read for one pass: its .dockerconfigjson
// and the credentials in it.
type pullSecret struct {
	where  string
	data   []byte
	config imagedigest.DockerConfig
}

// imagePullSecret reads the deployment's image pull Secret afresh (a rotated one is used at
// once), or returns nil when the deployment names none. Its credentials are masked in every
// message of the pass.
func (c *controller) imagePullSecret(ctx context.Context, p *pass) (*pullSecret, *outcome) {
	secret, where, bad := c.readSecret(ctx, p, "the image pull Secret", c.opts.Namespace, c.opts.ImagePullSecret, v1.ReasonImagePullSecret,
		"; nothing is installed")
	if secret == nil {
		return nil, bad
	}
	data := secret.Data[corev1.DockerConfigJsonKey]
	cfg, err := imagedigest.ParseDockerConfig(data)
	if secret.Type != corev1.SecretTypeDockerConfigJson || err != nil {
		why := "is not of type " + string(corev1.SecretTypeDockerConfigJson)
		if err != nil && secret.Type == corev1.SecretTypeDockerConfigJson {
			why = "has a " + corev1.DockerConfigJsonKey + " that " + err.Error()
		}
		return nil, &outcome{reason: v1.ReasonImagePullSecret, message: fmt.Sprintf("%s %s (kubectl create secret docker-registry); nothing is installed", where, why)}
	}
	p.credentials = append(p.credentials, cfg.Secrets()...)
	return &pullSecret{where: where, data: data, config: cfg}, nil
}

// checkImages holds every image of plans pinned by a digest to its registry's tag, when the
// deployment requires digests. A refusal is a Warning Event too.
func (c *controller) checkImages(ctx context.Context, p *pass, plans []*installpolicy.Plan, pull *pullSecret) *outcome {
	if !c.opts.ChartPolicy.Images().RequireDigest() {
		return nil
	}
	var creds imagedigest.DockerConfig
	if pull != nil {
		creds = pull.config
	}
	for _, plan := range plans {
		err := c.opts.Images.Check(ctx, plan.Values.Ref, creds)
		if err == nil {
			continue
		}
		var moved *imagedigest.Mismatch
		o := &outcome{reason: v1.ReasonImageNotResolved}
		if errors.As(err, &moved) {
			o.reason = v1.ReasonImageTagMoved
		}
		o.message = p.redact(fmt.Sprintf("%s: %v; nothing is installed or upgraded, and what runs in the guest is left as it is", plan.Chart, err))
		c.Recorder.Event(p.fip, v1.EventType(o.reason), o.reason, "guest cluster "+p.cluster+": "+o.message)
		return o
	}
	return nil
}

// writePullSecret keeps the operator's copy of the pull Secret in the releases' namespace of the
// guest, the one Secret the charts' pods name; nothing when the deployment has none.
func (c *controller) writePullSecret(ctx context.Context, client guestAPI, p *pass, namespace string, pull *pullSecret) *outcome {
	if pull == nil {
		if c.opts.ChartPolicy.Images().PullSecret() {
			return &outcome{reason: v1.ReasonImagePullSecret, message: "the deployment's image pull Secret is not set; nothing is installed"}
		}
		return nil
	}
	res, err := client.EnsurePullSecret(ctx, namespace, imagepolicy.GuestPullSecretName, pull.data)
	if err != nil {
		o := &outcome{reason: v1.ReasonImagePullSecret, message: p.redact(fmt.Sprintf("the copy of %s in the guest: %v; nothing is installed", pull.where, err))}
		c.Recorder.Event(p.fip, v1.EventType(o.reason), o.reason, "guest cluster "+p.cluster+": "+o.message)
		return o
	}
	if res != kubevipconfig.PullSecretUnchanged {
		c.Recorder.Eventf(p.fip, v1.EventType(v1.ReasonPullSecretWritten), v1.ReasonPullSecretWritten, "guest cluster %s: image pull Secret %s/%s %s from %s",
			p.cluster, namespace, imagepolicy.GuestPullSecretName, res, pull.where)
	}
	return nil
}

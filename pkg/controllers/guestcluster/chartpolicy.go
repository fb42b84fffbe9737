package guestcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/guest"
)

// ReasonChartCredentials: the chart credentials Secret cannot be read. A chart the deployment does
// not allow gets the reason of config's refusal (config.ProblemChartSourceNotAllowed or
// config.ProblemChartValuesNotAllowed).
const ReasonChartCredentials = "ChartCredentialsInvalid"

// Keys of the chart credentials Secret.
const (
	CredentialsUsernameKey = "username"
	CredentialsPasswordKey = "password"
)

// refuseCharts checks both charts against the deployment's policy before anything is fetched; a
// refused chart gets a Warning Event and nothing is installed.
func (c *controller) refuseCharts(cfg config.Config, p *pass) *outcome {
	for _, s := range []struct {
		name string
		err  error
	}{
		{"kube-vip", c.opts.ChartPolicy.CheckKubevip(cfg)},
		{"kube-vip-cloud-provider", c.opts.ChartPolicy.CheckKubevipCloudProvider(cfg)},
	} {
		var r *config.Refusal
		if !errors.As(s.err, &r) {
			continue
		}
		msg := p.redact(fmt.Sprintf("%s: %v; nothing is installed", s.name, r))
		c.Recorder.Event(p.fip, corev1.EventTypeWarning, r.Reason, "guest cluster "+p.cluster+": "+msg)
		return &outcome{reason: r.Reason, message: msg}
	}
	return nil
}

// chartCredentials reads the chart credentials Secret afresh (so a rotated password is used at
// once), or returns nil when the deployment names none. The password is masked in every message
// of the pass.
func (c *controller) chartCredentials(p *pass) (*guest.Credentials, *outcome) {
	name := c.opts.ChartCredentialsSecret
	if name == "" {
		return nil, nil
	}
	where := fmt.Sprintf("the chart credentials Secret %s/%s", c.opts.Namespace, name)
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	secret, err := c.Secrets.Secrets(c.opts.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, &outcome{reason: ReasonChartCredentials, message: where + " does not exist"}
	case err != nil:
		return nil, &outcome{reason: ReasonChartCredentials, message: where + " cannot be read: " + p.redact(err.Error())}
	}
	user, password := string(secret.Data[CredentialsUsernameKey]), string(secret.Data[CredentialsPasswordKey])
	if user == "" || password == "" {
		return nil, &outcome{reason: ReasonChartCredentials,
			message: fmt.Sprintf("%s needs the keys %s and %s", where, CredentialsUsernameKey, CredentialsPasswordKey)}
	}
	p.credentials = append(p.credentials, password)
	return &guest.Credentials{Username: user, Password: password}, nil
}

// notInstalled ends an install that did not start: the address still goes where a provider
// installed earlier reads, if there is one.
func (c *controller) notInstalled(ctx context.Context, cfg config.Config, client guestAPI, o *outcome) (outcome, guest.ConfigMapRef, bool) {
	ref, err := client.ProviderConfigMap(ctx, cfg.KubevipNamespace, cfg.KubevipCloudProvider.ReleaseName)
	if err == nil {
		o.message += "; the provider installed earlier reads " + ref.String()
	}
	return *o, ref, err == nil
}

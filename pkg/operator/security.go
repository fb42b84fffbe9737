package operator

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
)

// securityReadTimeout bounds one read of the security Secret.
const securityReadTimeout = 10 * time.Second

// ReadSecurity reads the deployment's security settings (the chart's security.*) from the Secret
// name in namespace, by name: at start, and for the webhook at every write of kube-fip-config, so
// that one upgrade of the chart may widen them and use them at once (the chart's Secret is written
// before its ConfigMap). A missing or malformed Secret is an error that names it and never quotes
// its data.
func ReadSecurity(ctx context.Context, secrets typedcorev1.SecretsGetter, namespace, name string) (installpolicy.Deployment, error) {
	ctx, cancel := context.WithTimeout(ctx, securityReadTimeout)
	defer cancel()
	s, err := secrets.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return installpolicy.Deployment{}, fmt.Errorf("the deployment's security Secret %s/%s does not exist: upgrade the chart, which writes it from security.*", namespace, name)
	case err != nil:
		return installpolicy.Deployment{}, fmt.Errorf("reading the deployment's security Secret %s/%s: %w", namespace, name, err)
	}
	d, err := installpolicy.ParseDeployment(s.Data)
	if err != nil {
		return installpolicy.Deployment{}, fmt.Errorf("the deployment's security Secret %s/%s: %w", namespace, name, err)
	}
	return d, nil
}

// admissionPolicy is the policy the webhook judges kube-fip-config by: with a security Secret, the
// one its settings make now; without, the one the operator started with.
func (o *Operator) admissionPolicy(ctx context.Context) (installpolicy.Policy, error) {
	if o.opts.SecuritySecret == "" {
		return o.opts.ChartPolicy, nil
	}
	d, err := ReadSecurity(ctx, o.client.CoreV1(), o.opts.Namespace, o.opts.SecuritySecret)
	if err != nil {
		return installpolicy.Policy{}, err
	}
	p, err := installpolicy.New(d.Apply(o.opts.PolicySettings))
	if err != nil {
		return installpolicy.Policy{}, fmt.Errorf("the deployment's security Secret %s/%s: %w", o.opts.Namespace, o.opts.SecuritySecret, err)
	}
	return p, nil
}

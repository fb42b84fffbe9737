package cleanup

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// stopOperator scales the operator's Deployment to zero through its scale subresource and waits
// until none of its pods runs: a running operator would put its finalizer back on every object
// the clean-up touches.
func stopOperator(ctx context.Context, kube kubernetes.Interface, opts Options) error {
	if opts.Deployment == "" {
		logrus.Info("no operator Deployment named: nothing to stop")
		return nil
	}
	where := opts.Namespace + "/" + opts.Deployment
	deployments := kube.AppsV1().Deployments(opts.Namespace)
	d, err := deployments.Get(ctx, opts.Deployment, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		logrus.Infof("Deployment %s not found: no operator to stop", where)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Deployment %s: %w", where, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || selector.Empty() {
		return fmt.Errorf("the Deployment %s has no usable pod selector (%v): its pods cannot be told apart", where, err)
	}

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := deployments.GetScale(ctx, opts.Deployment, metav1.GetOptions{})
		if err != nil || scale.Spec.Replicas == 0 {
			return err
		}
		scale.Spec.Replicas = 0
		_, err = deployments.UpdateScale(ctx, opts.Deployment, scale, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("scaling Deployment %s to 0: %w", where, err)
	}
	logrus.Infof("scaled Deployment %s to 0; waiting up to %s for its pods to stop", where, opts.StopTimeout)

	running := 0
	err = wait.PollUntilContextTimeout(ctx, opts.PollInterval, opts.StopTimeout, true, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return false, fmt.Errorf("listing the pods of Deployment %s: %w", where, err)
		}
		running = 0
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				running++
			}
		}
		if running > 0 {
			logrus.Debugf("%d pods of Deployment %s still running", running, where)
		}
		return running == 0, nil
	})
	if err != nil {
		if wait.Interrupted(err) {
			return fmt.Errorf("%d pods of Deployment %s still there after %s; no FloatingIP or range was changed", running, where, opts.StopTimeout)
		}
		return err
	}
	logrus.Infof("the operator (Deployment %s) has stopped", where)
	return nil
}

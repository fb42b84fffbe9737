package e2e

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// servedWithin is the acceptance bound: with the chart's defaults, the FloatingIP says
// Served within 30 s of a Service's status holding the address.
const servedWithin = 30 * time.Second

// TestServedFollowsANewServiceAtTheDefaultInterval: on real nodes, with operateGuestClusterInterval
// at the chart's default (480 s, so that no periodic pass comes within the test's deadlines),
// SERVED follows a new Service within 30 s: the echo Service gone, the FloatingIP says Idle within
// 30 s; created again, kube-vip-cloud-provider gives it the address, the real kube-vip binds it and
// writes the Service's status, and the FloatingIP says Served, by default/echo, within 30 s of the
// status holding the address. The lags are printed.
func TestServedFollowsANewServiceAtTheDefaultInterval(t *testing.T) {
	s := current(t)
	ctx := context.Background()
	addr := s.guestFIP(t)
	was := s.setConfig(t, config.KeyOperateGuestClusterInterval, "480")
	t.Cleanup(func() { s.setConfig(t, config.KeyOperateGuestClusterInterval, was) })
	// The configuration change starts a pass of its own: let it be over.
	s.echoService(t)
	s.waitServed(t, 3*time.Minute, v1.ReasonServed)
	time.Sleep(5 * time.Second)

	deleted := time.Now()
	if err := s.guestKube.CoreV1().Services("default").Delete(ctx, "echo", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	s.waitServed(t, servedWithin, v1.ReasonIdle)
	t.Logf("Idle %.1f s after the echo Service was deleted (operateGuestClusterInterval 480 s)", time.Since(deleted).Seconds())
	rig.Eventually(t, time.Minute, "the echo Service gone", func() bool {
		_, err := s.guestKube.CoreV1().Services("default").Get(ctx, "echo", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})

	created := time.Now()
	s.echoService(t)
	var held time.Time
	rig.Eventually(t, 2*time.Minute, "the echo Service's status holding "+addr.String(), func() bool {
		svc, err := s.guestKube.CoreV1().Services("default").Get(ctx, "echo", metav1.GetOptions{})
		if err != nil {
			return false
		}
		return slices.ContainsFunc(svc.Status.LoadBalancer.Ingress, func(in corev1.LoadBalancerIngress) bool {
			a, err := netip.ParseAddr(in.IP)
			return err == nil && a == addr
		})
	})
	held = time.Now()
	t.Logf("the echo Service's status held %s %.1f s after it was created", addr, held.Sub(created).Seconds())
	x := s.waitServed(t, servedWithin-time.Since(held), v1.ReasonServed)
	t.Logf("Served %.1f s after the Service's status held the address (operateGuestClusterInterval 480 s)", time.Since(held).Seconds())
	if x.Status.ServedBy != "default/echo" {
		t.Errorf("servedBy %q; want default/echo", x.Status.ServedBy)
	}
}

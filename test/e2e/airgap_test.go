package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	v1image "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// The suite is an air-gapped Rancher: Rancher's system default registry is the test's registry
// (global.cattle.systemDefaultRegistry), the nodes' containerd pulls every image from it and
// nothing is imported (test/rig/node), and the operator chart is given only what docs/airgap.md
// tells an administrator to give it.

// guestFloatingIP is the guest's FloatingIP.
func (s *suite) guestFloatingIP(t *testing.T) *v1.FloatingIP {
	t.Helper()
	list, err := s.fips.FloatingIP().List(guestID, metav1.ListOptions{})
	rig.Must(t, err)
	if len(list.Items) != 1 {
		t.Fatalf("the guest has %d FloatingIPs; want 1", len(list.Items))
	}
	return &list.Items[0]
}

// waitKubevipInstalled waits for the guest's FloatingIP's KubevipInstalled condition to have
// status and, when given, reason, and returns the FloatingIP.
func (s *suite) waitKubevipInstalled(t *testing.T, timeout time.Duration, status corev1.ConditionStatus, reason string) *v1.FloatingIP {
	t.Helper()
	var x *v1.FloatingIP
	rig.Eventually(t, timeout, "the FloatingIP's KubevipInstalled "+string(status)+" "+reason, func() bool {
		list, err := s.fips.FloatingIP().List(guestID, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false
		}
		x = &list.Items[0]
		c, ok := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
		return ok && c.Status == status && (reason == "" || c.Reason == reason)
	})
	return x
}

// guestWorkloadImages are the images of kube-vip's DaemonSet and the provider's Deployment in the
// guest, as the operator installed them; "" for one not there.
func (s *suite) guestWorkloadImages() (kubevip, provider string) {
	ctx := context.Background()
	ds, err := s.guestKube.AppsV1().DaemonSets("kube-system").Get(ctx, chartvalues.KubevipNameOverride, metav1.GetOptions{})
	if err == nil && len(ds.Spec.Template.Spec.Containers) > 0 {
		kubevip = ds.Spec.Template.Spec.Containers[0].Image
	}
	deps, err := s.guestKube.AppsV1().Deployments("kube-system").List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, d := range deps.Items {
			if image := firstImage(d); strings.Contains(image, "kube-vip-cloud-provider") {
				provider = image
			}
		}
	}
	return kubevip, provider
}

// installedFromRegistry waits until this release's operator installed kube-vip and the provider
// into the guest from the registry, pinned by digest, with kube-vip's pod ready, and returns the
// guest's address.
func (s *suite) installedFromRegistry(t *testing.T) netip.Addr {
	t.Helper()
	var kubevip, provider string
	if !rig.Within(3*time.Minute, func() bool {
		kubevip, provider = s.guestWorkloadImages()
		return kubevip == s.underRegistry(kubevipImage) && provider == s.underRegistry(providerImage)
	}) {
		t.Fatalf("the guest's kube-vip runs %q and its provider %q; want %s and %s", kubevip, provider,
			s.underRegistry(kubevipImage), s.underRegistry(providerImage))
	}
	fip := s.guestFIP(t)
	s.kubevipPod(t, "")
	return fip
}

// underRegistry is ref (repository:tag), pinned, as the guest's workloads name it.
func (s *suite) underRegistry(ref string) string {
	repository, _, _ := strings.Cut(ref, ":")
	return registryHost + "/" + repository + ":" + s.pinned(ref)
}

func firstImage(d appsv1.Deployment) string {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// TestImagesPulledFromTheRegistry: with Rancher's system default registry set to the test's, the
// operator's pod runs its image under the registry and the guest's kube-vip and provider run the
// pinned pair there, pinned by digest; the registry's access log shows the management node
// pulling the operator's image and the guest node pulling both guest images (manifest by digest,
// config and layers), and the address is served.
func TestImagesPulledFromTheRegistry(t *testing.T) {
	s := current(t)
	fip := s.installedFromRegistry(t)
	for _, p := range s.operatorPods(t) {
		if got := p.Spec.Containers[0].Image; got != s.operatorImage {
			t.Errorf("operator pod %s runs %s; want %s", p.Name, got, s.operatorImage)
		}
	}
	for _, c := range []struct {
		where string
		addr  netip.Addr
		ref   string
	}{
		{"the management node", s.mgmt.NodeAddr, strings.TrimPrefix(s.operatorImage, registryHost+"/")},
		{"the guest node", s.guest.NodeAddr, kubevipImage},
		{"the guest node", s.guest.NodeAddr, providerImage},
	} {
		repository, _, _ := strings.Cut(c.ref, ":")
		ok, missing, err := s.registry.Pulled(c.addr, repository, s.images[c.ref])
		rig.Must(t, err)
		if !ok {
			t.Errorf("%s (%s) did not pull %s from the registry: the access log lacks %s", c.where, c.addr, c.ref, missing)
		} else {
			t.Logf("%s (%s) pulled %s from %s", c.where, c.addr, c.ref, registryHost)
		}
	}
	s.echoServed(t, fip, "kube-vip pulled from the registry")
}

// TestMovedTagIsRefused: the same tag pushed again with another image (a moved tag) is refused
// before anything reaches the guest: KubevipInstalled False, ImageTagMoved, naming both digests,
// while kube-vip's pod keeps running the pinned image and the address stays served. Pushing the
// pinned image back under its tag clears it.
func TestMovedTagIsRefused(t *testing.T) {
	s := current(t)
	fip := s.installedFromRegistry(t)
	before := s.kubevipPod(t, "")
	repository, tag, _ := strings.Cut(kubevipImage, ":")
	pinned := s.images[kubevipImage]
	moved := anotherBuild(t, pinned)
	movedDigest, err := s.registry.Push(repository, tag, moved)
	rig.Must(t, err)
	restored := false
	t.Cleanup(func() {
		if !restored {
			_, _ = s.registry.Push(repository, tag, pinned)
		}
	})
	x := s.waitKubevipInstalled(t, 3*time.Minute, corev1.ConditionFalse, v1.ReasonImageTagMoved)
	c, _ := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
	if !strings.Contains(c.Message, movedDigest.String()) || !strings.Contains(c.Message, s.digestOf(kubevipImage)) {
		t.Errorf("ImageTagMoved says %q; want both the pinned digest %s and the tag's %s", c.Message, s.digestOf(kubevipImage), movedDigest)
	}
	t.Logf("KubevipInstalled: %s", c.Message)
	after := s.kubevipPod(t, "")
	if after.UID != before.UID || after.Spec.Containers[0].Image != before.Spec.Containers[0].Image {
		t.Errorf("kube-vip's pod %s (%s) became %s (%s): the running install was changed", before.Name, before.Spec.Containers[0].Image,
			after.Name, after.Spec.Containers[0].Image)
	}
	s.echoServed(t, fip, "kube-vip while its tag is moved")

	_, err = s.registry.Push(repository, tag, pinned)
	rig.Must(t, err)
	restored = true
	s.waitKubevipInstalled(t, 3*time.Minute, corev1.ConditionTrue, "")
}

// TestMissingImageIsNotReady: kube-vip's image is gone from the registry (its tag and manifest)
// and from the node (as after the kubelet's image garbage collection, or on a new node): the
// operator refuses to install it (KubevipInstalled False, ImageNotResolved), kube-vip's new pod
// cannot be pulled, and the FloatingIP says so, not Ready, its Served condition naming the pull
// failure. Pushing the image back, the pod pulls it and the address is served again.
func TestMissingImageIsNotReady(t *testing.T) {
	s := current(t)
	ctx := context.Background()
	fip := s.installedFromRegistry(t)
	before := s.kubevipPod(t, "")
	repository, tag, _ := strings.Cut(kubevipImage, ":")
	rig.Must(t, s.registry.Remove(repository, tag))
	restored := false
	push := func() {
		_, err := s.registry.Push(repository, tag, s.images[kubevipImage])
		rig.Must(t, err)
		restored = true
	}
	t.Cleanup(func() {
		if !restored {
			push()
		}
	})
	forgot, err := s.guest.ForgetImages(ctx, registryHost+"/"+repository)
	rig.Must(t, err)
	t.Logf("the guest node no longer has %v", forgot)
	rig.Must(t, s.guestKube.CoreV1().Pods("kube-system").Delete(ctx, before.Name, metav1.DeleteOptions{}))

	x := s.waitKubevipInstalled(t, 3*time.Minute, corev1.ConditionFalse, v1.ReasonImageNotResolved)
	c, _ := v1.GetCondition(x.Status.Conditions, v1.KubevipInstalled)
	t.Logf("KubevipInstalled: %s", c.Message)
	var why string
	rig.Eventually(t, 3*time.Minute, "the FloatingIP not Ready, its Served condition naming the pull failure", func() bool {
		x := s.guestFloatingIP(t)
		r, _ := v1.GetCondition(x.Status.Conditions, v1.Ready)
		sv, _ := v1.GetCondition(x.Status.Conditions, v1.Served)
		why = fmt.Sprintf("Ready %s %s; Served %s %s: %s", r.Status, r.Reason, sv.Status, sv.Reason, sv.Message)
		return r.Status == corev1.ConditionFalse && sv.Status == corev1.ConditionFalse &&
			(strings.Contains(sv.Message, "ImagePullBackOff") || strings.Contains(sv.Message, "ErrImagePull"))
	})
	t.Logf("%s", why)

	push()
	// The kubelet backs off from a failed pull for up to five minutes; a new pod pulls at once.
	for _, p := range s.kubevipPods(t) {
		rig.Must(t, s.guestKube.CoreV1().Pods("kube-system").Delete(ctx, p.Name, metav1.DeleteOptions{}))
	}
	s.kubevipPod(t, "")
	s.waitKubevipInstalled(t, 3*time.Minute, corev1.ConditionTrue, "")
	s.echoServed(t, fip, "kube-vip pulled again")
}

// kubevipPods are the pods of kube-vip's DaemonSet in the guest.
func (s *suite) kubevipPods(t *testing.T) []corev1.Pod {
	t.Helper()
	list, err := s.guestKube.CoreV1().Pods("kube-system").List(context.Background(),
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + chartvalues.KubevipNameOverride})
	rig.Must(t, err)
	return list.Items
}

// anotherBuild is img with another configuration: another digest under the same tag.
func anotherBuild(t *testing.T, img v1image.Image) v1image.Image {
	t.Helper()
	cfg, err := img.ConfigFile()
	rig.Must(t, err)
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.description": "another build under the same tag"}
	out, err := mutate.ConfigFile(img, cfg)
	rig.Must(t, err)
	return out
}

package guestcluster

import (
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/random"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/helminstall"
	"github.com/kubefip/kube-fip-operator/pkg/imagedigest"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartsource"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/pkg/outbound"
	"github.com/kubefip/kube-fip-operator/test/rig/registry"
)

const pullPassword = "pu11-pa55w0rd"

// airGapped makes w a deployment whose guest images come from a registry (an in-memory one, with
// both pinned images pushed), digests required, with a pull Secret; kube-fip-config pins the images
// the registry holds. It returns the registry's host, a push of another image under a tag, and what
// each EnsureRelease and EnsurePullSecret was given.
func airGapped(t *testing.T, w *world) (host string, push func(repo, tag string) string, given map[string]helminstall.Release, wrote *[]string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.Start(l)
	t.Cleanup(func() { _ = reg.Close() })
	host = reg.Host
	push = func(repo, tag string) string {
		img, err := random.Image(128, 1)
		if err != nil {
			t.Fatal(err)
		}
		d, err := reg.Push(repo, tag, img)
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	kv, cp := push("kube-vip/kube-vip", "v1.0.0"), push("kube-vip/kube-vip-cloud-provider", "v0.0.12")
	policy, err := installpolicy.New(installpolicy.Settings{ChartSources: chartsource.DefaultChartSources(), Registry: host, RequireDigest: true, PullSecret: true})
	if err != nil {
		t.Fatal(err)
	}
	w.opts.ChartPolicy, w.opts.Images, w.opts.ImagePullSecret = policy, imagedigest.New(outbound.Network{}, false, time.Second), "registry-pull"
	w.cfg.KubevipGuestInstall = config.InstallEnabled
	w.cfg.Kubevip.Values = map[string]interface{}{"image": map[string]interface{}{"repository": config.DefaultKubevipImageRepository, "tag": "v1.0.0@" + kv}}
	w.cfg.KubevipCloudProvider.Values = map[string]interface{}{"image": map[string]interface{}{"repository": config.DefaultKubevipCloudProviderImageRepository, "tag": "v0.0.12@" + cp}}
	auth := base64.StdEncoding.EncodeToString([]byte("robot:" + pullPassword))
	w.secrets = append(w.secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-pull", Namespace: w.opts.Namespace},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth))}})
	var mu sync.Mutex
	given, wrote = map[string]helminstall.Release{}, &[]string{}
	w.guest.release = func(rel helminstall.Release) (helminstall.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		given[rel.Chart] = rel
		return helminstall.Result{Outcome: helminstall.Installed}, nil
	}
	w.guest.pullSecret = func(namespace, name string, data []byte) (kubevipconfig.PullSecretResult, error) {
		*wrote = append(*wrote, namespace+"/"+name+" "+string(data))
		return kubevipconfig.PullSecretCreated, nil
	}
	return host, push, given, wrote
}

// TestAirGappedInstall: with a registry, the pinned images under it are sent by tag and digest,
// after the registry confirmed each tag; the guest gets the operator's copy of the pull Secret, in
// the releases' namespace under its fixed name, and both charts' pods name it.
func TestAirGappedInstall(t *testing.T) {
	w := newWorld()
	host, _, given, wrote := airGapped(t, w)
	f, events := w.pass(t, testCluster+"-kubevip")
	if reason, status, message := reasonOf(f, v1.KubevipInstalled); reason != v1.ReasonInstalled || status != corev1.ConditionTrue {
		t.Fatalf("KubevipInstalled = %s/%s %q", status, reason, message)
	}
	for chart, repo := range map[string]string{"kube-vip": "/kube-vip/kube-vip:v1.0.0@sha256:", "kube-vip-cloud-provider": "/kube-vip/kube-vip-cloud-provider:v0.0.12@sha256:"} {
		plan := given[chart].Plan
		if plan == nil || !strings.HasPrefix(plan.Values.Ref, host+repo) {
			t.Errorf("%s: sent %+v; want %s%s...", chart, plan, host, repo)
			continue
		}
		if pull := fmt.Sprint(plan.Values.Map["imagePullSecrets"]); !strings.Contains(pull, imagepolicy.GuestPullSecretName) {
			t.Errorf("%s: imagePullSecrets %s; want %s", chart, pull, imagepolicy.GuestPullSecretName)
		}
	}
	if len(*wrote) != 1 || !strings.HasPrefix((*wrote)[0], "kube-system/"+imagepolicy.GuestPullSecretName+" {\"auths\"") {
		t.Errorf("pull Secrets written: %q; want one, kube-system/%s", *wrote, imagepolicy.GuestPullSecretName)
	}
	if !hasEvent(events, "Normal "+v1.ReasonPullSecretWritten) {
		t.Errorf("Events %q; want %s", events, v1.ReasonPullSecretWritten)
	}
	noSecret(t, f, events, pullPassword)
}

// TestAMovedTagIsRefused: a tag pushed again with other content, or missing, is refused with its
// reason before anything reaches the guest: no release is installed or upgraded and no Secret
// written, while the address still goes where the provider installed earlier reads.
func TestAMovedTagIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, reason, says string
		change             func(w *world, push func(repo, tag string) string)
	}{
		{"moved", v1.ReasonImageTagMoved, "the tag was moved", func(_ *world, push func(repo, tag string) string) {
			push("kube-vip/kube-vip-cloud-provider", "v0.0.12")
		}},
		{"missing", v1.ReasonImageNotResolved, "did not say which manifest", func(w *world, _ func(repo, tag string) string) {
			w.cfg.Kubevip.Values["image"] = map[string]interface{}{"tag": "v1.0.1@sha256:" + strings.Repeat("0", 64)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			_, push, given, wrote := airGapped(t, w)
			tc.change(w, push)
			f, events := w.pass(t, testCluster+"-kubevip")
			reason, status, message := reasonOf(f, v1.KubevipInstalled)
			if reason != tc.reason || status != corev1.ConditionFalse || !strings.Contains(message, tc.says) || !strings.Contains(message, "left as it is") {
				t.Errorf("KubevipInstalled = %s/%s %q; want %s saying %q", status, reason, message, tc.reason, tc.says)
			}
			if len(given) != 0 || len(*wrote) != 0 {
				t.Errorf("releases %d and pull Secrets %q reached the guest", len(given), *wrote)
			}
			if cfgReason, cfgStatus, _ := reasonOf(f, v1.GuestConfigured); cfgReason != v1.ReasonConfigured || cfgStatus != corev1.ConditionTrue {
				t.Errorf("GuestConfigured = %s/%s; want the address written where the installed provider reads", cfgStatus, cfgReason)
			}
			if !hasEvent(events, "Warning "+tc.reason) {
				t.Errorf("Events %q; want a Warning %s", events, tc.reason)
			}
		})
	}
}

// TestPullSecretProblems: a pull Secret that is missing, of another type, or whose copy the guest
// refuses stops the install with ImagePullSecretInvalid, saying which.
func TestPullSecretProblems(t *testing.T) {
	for _, tc := range []struct {
		name, says string
		change     func(w *world)
	}{
		{"missing", "kube-fip/registry-pull does not exist", func(w *world) { w.secrets = w.secrets[:len(w.secrets)-1] }},
		{"an Opaque Secret", "is not of type kubernetes.io/dockerconfigjson", func(w *world) { w.secrets[len(w.secrets)-1].Type = corev1.SecretTypeOpaque }},
		{"not a Docker config", "is not a Docker config", func(w *world) {
			w.secrets[len(w.secrets)-1].Data[corev1.DockerConfigJsonKey] = []byte("robot:" + pullPassword)
		}},
		{"someone else's in the guest", "not the operator's", func(w *world) {
			w.guest.pullSecret = func(namespace, name string, _ []byte) (kubevipconfig.PullSecretResult, error) {
				return kubevipconfig.EnsurePullSecret(t.Context(), fakeSecretsOfSomeoneElse(namespace, name), namespace, name, nil)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			_, _, given, _ := airGapped(t, w)
			tc.change(w)
			f, events := w.pass(t, testCluster+"-kubevip")
			reason, status, message := reasonOf(f, v1.KubevipInstalled)
			if reason != v1.ReasonImagePullSecret || status != corev1.ConditionFalse || !strings.Contains(message, tc.says) {
				t.Errorf("KubevipInstalled = %s/%s %q; want %s saying %q", status, reason, message, v1.ReasonImagePullSecret, tc.says)
			}
			if len(given) != 0 {
				t.Error("a release reached the guest")
			}
			noSecret(t, f, events, pullPassword)
		})
	}
}

// noSecret fails when secret is in any condition of f or any Event.
func noSecret(t *testing.T, f *v1.FloatingIP, events []string, secret string) {
	t.Helper()
	texts := append([]string{}, events...)
	if f != nil {
		for _, c := range f.Status.Conditions {
			texts = append(texts, c.Message)
		}
	}
	for _, text := range texts {
		if strings.Contains(text, secret) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte("robot:"+secret))) {
			t.Errorf("the pull Secret's password reached a condition or an Event: %q", text)
		}
	}
}

// fakeSecretsOfSomeoneElse is a guest whose namespace holds a Secret of that name the operator
// did not write.
func fakeSecretsOfSomeoneElse(namespace, name string) corev1client.SecretsGetter {
	return fake.NewSimpleClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type: corev1.SecretTypeDockerConfigJson}).CoreV1()
}

// Package suite is what the packages of tests against the real control plane share: a control
// plane (or shards of one, Shards) and one operator build per package, clients for it, and the
// observations of FloatingIPs, allocations and Events their assertions are made of.
package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org"
	kubefipcontrollers "github.com/kubefip/kube-fip-operator/pkg/generated/controllers/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/controlplane"
	"github.com/kubefip/kube-fip-operator/test/rig/guests"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// Suite is shared by every test in a package: one control plane and one operator build.
type Suite struct {
	Env *controlplane.Environment
	// Operator is the path of the operator binary built from the working tree.
	Operator string
	// Kube and Kubefip are an administrator's clients; only their client half is used, no informer
	// is started. client-go's default of 5 requests a second would pace tests that create hundreds
	// of objects, so they may send far more.
	Kube    kubernetes.Interface
	Kubefip kubefipcontrollers.Interface
}

// Shared is a package's Suite, set by Main before the package's tests run.
type Shared struct{ *Suite }

// Main is a package's TestMain: it runs the package's tests with the Suite set and exits with
// their result.
func (s *Shared) Main(m *testing.M) {
	os.Exit(Run(m, func(x *Suite) { s.Suite = x }))
}

// MainAudited is Main with the API servers' audit logs kept (controlplane.StartAudited).
func (s *Shared) MainAudited(m *testing.M) {
	os.Exit(run(m, func(x *Suite) { s.Suite = x }, controlplane.StartAudited))
}

// Run is a package's TestMain: it builds the operator, starts the control plane, hands both to use
// and runs the tests, and returns the exit code.
func Run(m *testing.M, use func(*Suite)) int {
	return run(m, use, controlplane.Start)
}

func run(m *testing.M, use func(*Suite), startPlane func() (*controlplane.Environment, error)) int {
	return runOn(m, 1, func(suites []*Suite) { use(suites[0]) }, startPlane)
}

// runOn builds the operator, starts a control plane and n-1 shards of it, hands a Suite of each to
// use and runs the tests, and returns the exit code.
func runOn(m *testing.M, n int, use func([]*Suite), startPlane func() (*controlplane.Environment, error)) int {
	dir, err := os.MkdirTemp("", "kube-fip-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)

	binary, err := controlplane.BuildOperator(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err := startPlane()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}()
	envs := make([]*controlplane.Environment, n)
	envs[0] = env
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			envs[i], errs[i] = env.StartShard(fmt.Sprint(i))
		}()
	}
	wg.Wait()
	suites := make([]*Suite, n)
	for i, e := range envs {
		if errs[i] == nil {
			suites[i], errs[i] = New(e, binary)
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	use(suites)
	return m.Run()
}

// New is the Suite of the control plane env and the operator binary: a package's own, or one a
// test starts for itself, such as a control plane with another release's CRDs.
func New(env *controlplane.Environment, binary string) (*Suite, error) {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	s := &Suite{Env: env, Operator: binary}
	var err error
	if s.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	fips, err := kubefip.NewFactoryFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	s.Kubefip = fips.Kubefip().V1()
	return s, nil
}

// CreateNamespace creates namespace name; one that exists is kept.
func (s *Suite) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	_, err := s.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// Events lists the Events about the object name in namespace ns.
func (s *Suite) Events(t testing.TB, ns, name string) []corev1.Event {
	t.Helper()
	list, err := s.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// HasEvent tells whether an Event of type typ and reason, its message containing contains, is
// about the object name in namespace ns.
func (s *Suite) HasEvent(t testing.TB, ns, name, typ, reason, contains string) bool {
	t.Helper()
	for _, e := range s.Events(t, ns, name) {
		if e.Type == typ && e.Reason == reason && strings.Contains(e.Message, contains) {
			return true
		}
	}
	return false
}

// Rancher is a test's Rancher world, whose objects are deleted when the test ends, before the
// cleanups registered earlier run.
func (s *Suite) Rancher(t testing.TB) *rancher.World {
	t.Helper()
	w, err := rancher.NewWorld(s.Env.Config)
	rig.Must(t, err)
	t.Cleanup(w.Cleanup)
	return w
}

// WriteOperatorConfig writes kube-fip-config in namespace ns with data, creating or replacing it.
func (s *Suite) WriteOperatorConfig(t testing.TB, ns string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-fip-config", Namespace: ns}, Data: data}
	_, err := s.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = s.Kube.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// StartClusterProxy starts the test cluster proxy, published as Rancher's address, until the test
// ends.
func (s *Suite) StartClusterProxy(t testing.TB) *guests.ClusterProxy {
	t.Helper()
	p, err := guests.StartClusterProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	restore, err := rancher.PublishRancherAddress(s.Env.Config, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restore() })
	return p
}

// StartGuest starts a guest API server named name, stopped when the test ends.
func (s *Suite) StartGuest(t testing.TB, name string) *controlplane.Guest {
	t.Helper()
	g, err := s.Env.StartGuest(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.StopSoon)
	return g
}

// WaitPast waits until the API server's clock has passed the second of stamp, so that an object
// created next is younger than one stamped then: creation timestamps have one-second resolution.
// The server's clock is read from the creation timestamp it gives a dry-run object.
func (s *Suite) WaitPast(t testing.TB, stamp metav1.Time) {
	t.Helper()
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "clock-", Namespace: metav1.NamespaceDefault}}
	err := rig.Until(5*time.Second, "the API server's clock past "+stamp.String(), nil, func() (bool, error) {
		cm, err := s.Kube.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(context.Background(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return cm.CreationTimestamp.After(stamp.Time), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const (
	testNamespace = "kube-fip"
	testSecret    = "kube-fip-webhook-tls"
	testWebhook   = "kube-fip-operator"
	testHost      = "kube-fip-webhook.kube-fip.svc"
)

// testHosts are the hosts the tests' serving certificates are for.
func testHosts() []string {
	return []string{testHost, "kube-fip-webhook.kube-fip.svc.cluster.local", "10.43.0.7"}
}

// fakeClock is a clock the tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// newFakeClock returns a clock at a whole second of the real time.
func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Now().Truncate(time.Second)}
}

// Now returns the clock's time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newTestCerts returns Certs on cs for opts (namespace and Secret name defaulted), on clock when
// not nil, logging to log when not nil and nowhere otherwise.
func newTestCerts(cs *fake.Clientset, opts CertOptions, clock *fakeClock, log logrus.FieldLogger) *Certs {
	if opts.Namespace == "" {
		opts.Namespace = testNamespace
	}
	if opts.SecretName == "" {
		opts.SecretName = testSecret
	}
	if opts.Hosts == nil {
		opts.Hosts = testHosts()
	}
	c := NewCerts(cs.CoreV1().Secrets(opts.Namespace), cs.AdmissionregistrationV1().ValidatingWebhookConfigurations(), opts)
	if clock != nil {
		c.now = clock.Now
	}
	if log == nil {
		log, _ = logtest.NewNullLogger()
	}
	c.log = log
	return c
}

// withResourceVersions makes cs's Secrets behave like the API server's for optimistic
// concurrency: a create sets resourceVersion 1, an update must carry the stored resourceVersion
// (else Conflict) and increments it. The fake's tracker alone accepts every update.
func withResourceVersions(cs *fake.Clientset) *fake.Clientset {
	gvr := corev1.SchemeGroupVersion.WithResource("secrets")
	cs.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*corev1.Secret).DeepCopy()
		s.ResourceVersion = "1"
		if err := cs.Tracker().Create(gvr, s, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, s, nil
	})
	cs.PrependReactor("update", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.UpdateAction).GetObject().(*corev1.Secret).DeepCopy()
		obj, err := cs.Tracker().Get(gvr, a.GetNamespace(), s.Name)
		if err != nil {
			return true, nil, err
		}
		cur := obj.(*corev1.Secret)
		if cur.ResourceVersion != s.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), s.Name, errors.New("the object has been modified"))
		}
		n, _ := strconv.Atoi(cur.ResourceVersion)
		s.ResourceVersion = strconv.Itoa(n + 1)
		if err := cs.Tracker().Update(gvr, s, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, s, nil
	})
	return cs
}

// mustSync calls c.Sync and fails the test on an error.
func mustSync(t *testing.T, c *Certs) {
	t.Helper()
	if err := c.Sync(context.Background()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

// getSecret returns the test Secret in cs.
func getSecret(t *testing.T, cs *fake.Clientset) *corev1.Secret {
	t.Helper()
	s, err := cs.CoreV1().Secrets(testNamespace).Get(context.Background(), testSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the Secret: %v", err)
	}
	return s
}

// leafOf returns the serving certificate c serves.
func leafOf(t *testing.T, c *Certs) *x509.Certificate {
	t.Helper()
	cert, err := c.GetCertificate(&tls.ClientHelloInfo{ServerName: testHost})
	if err != nil {
		t.Fatalf("GetCertificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatalf("parse the served certificate: %v", err)
	}
	return leaf
}

// certsOf parses PEM holding certificates only.
func certsOf(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	certs, err := parseCertificates(data)
	if err != nil {
		t.Fatalf("parse certificates: %v", err)
	}
	return certs
}

// poolOf returns a pool trusting the certificates in bundle.
func poolOf(t *testing.T, bundle []byte) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		t.Fatal("no certificate in the bundle")
	}
	return pool
}

// handshake runs a TLS handshake over loopback TCP between a server serving c.GetCertificate and
// a client trusting roots and asking for serverName, both at time now. It returns the client's
// error.
func handshake(t *testing.T, c *Certs, roots *x509.CertPool, serverName string, now time.Time) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	clock := func() time.Time { return now }
	deadline := time.Now().Add(10 * time.Second)
	served := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(deadline)
		served <- tls.Server(conn, &tls.Config{GetCertificate: c.GetCertificate, Time: clock}).Handshake()
	}()
	conn, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	_ = conn.SetDeadline(deadline)
	err = tls.Client(conn, &tls.Config{RootCAs: roots, ServerName: serverName, Time: clock}).Handshake()
	conn.Close()
	// The server side fails whenever the client refuses, so the client's error is the answer; a
	// server that failed alone is one too.
	if serverErr := <-served; err == nil {
		return serverErr
	}
	return err
}

// TestSyncCreatesTheSecretAndServes: on an empty namespace Sync creates a kubernetes.io/tls Secret
// with the CA and a serving certificate for the hosts; a client trusting CABundle completes a
// handshake for a DNS name and an IP address, one trusting another CA does not.
func TestSyncCreatesTheSecretAndServes(t *testing.T) {
	t.Parallel()
	cs := fake.NewSimpleClientset()
	clock := newFakeClock()
	c := newTestCerts(cs, CertOptions{}, clock, nil)
	if loaded(c) || c.CABundle() != nil {
		t.Fatal("ready before Sync")
	}
	if _, err := c.GetCertificate(&tls.ClientHelloInfo{}); err == nil {
		t.Fatal("GetCertificate succeeds before Sync")
	}
	mustSync(t, c)
	if !loaded(c) {
		t.Fatal("not ready after Sync")
	}

	s := getSecret(t, cs)
	if s.Type != corev1.SecretTypeTLS || s.Labels[managedByLabel] != managedByValue {
		t.Errorf("Secret type %q labels %v", s.Type, s.Labels)
	}
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt", "ca.key"} {
		if len(s.Data[k]) == 0 {
			t.Errorf("Secret has no %s", k)
		}
	}
	if !bytes.Equal(s.Data["ca.crt"], c.CABundle()) {
		t.Error("CABundle differs from the Secret's ca.crt")
	}
	cas := certsOf(t, c.CABundle())
	if len(cas) != 1 || !cas[0].IsCA || cas[0].Subject.CommonName != "kube-fip-operator-webhook-ca" {
		t.Fatalf("CA bundle: %d certificates, first %v", len(cas), cas[0].Subject)
	}
	if life := cas[0].NotAfter.Sub(clock.Now()); life != 10*DefaultCertLifetime {
		t.Errorf("CA life %v, want %v", life, 10*DefaultCertLifetime)
	}
	chain := certsOf(t, s.Data["tls.crt"])
	if len(chain) != 2 || !chain[1].Equal(cas[0]) {
		t.Errorf("tls.crt holds %d certificates, want the serving one then the CA", len(chain))
	}

	leaf := leafOf(t, c)
	if !leaf.Equal(chain[0]) {
		t.Error("the served certificate is not the Secret's")
	}
	if want := clock.Now().Add(-time.Minute); !leaf.NotBefore.Equal(want) {
		t.Errorf("NotBefore %v, want %v", leaf.NotBefore, want)
	}
	if want := clock.Now().Add(DefaultCertLifetime); !leaf.NotAfter.Equal(want) {
		t.Errorf("NotAfter %v, want %v", leaf.NotAfter, want)
	}
	if len(leaf.ExtKeyUsage) != 1 || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("ExtKeyUsage %v", leaf.ExtKeyUsage)
	}
	if len(leaf.DNSNames) != 2 || len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("10.43.0.7")) {
		t.Errorf("SANs: DNS %v IP %v", leaf.DNSNames, leaf.IPAddresses)
	}

	for _, name := range []string{testHost, "10.43.0.7"} {
		if err := handshake(t, c, poolOf(t, c.CABundle()), name, clock.Now()); err != nil {
			t.Errorf("handshake for %s: %v", name, err)
		}
	}
	other, _, _, err := newCA(clock.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(other)
	err = handshake(t, c, pool, testHost, clock.Now())
	if !errors.As(err, &x509.UnknownAuthorityError{}) {
		t.Errorf("handshake trusting another CA: %v, want an unknown authority", err)
	}
	if err := handshake(t, c, poolOf(t, c.CABundle()), "other.kube-fip.svc", clock.Now()); err == nil {
		t.Error("handshake for a host not in Hosts succeeds")
	}

	// A second Sync has nothing to write.
	before := len(cs.Actions())
	mustSync(t, c)
	for _, a := range cs.Actions()[before:] {
		if a.GetVerb() != "get" {
			t.Errorf("second Sync: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestSyncWithoutHostsFails: a serving certificate without a host would be trusted by nobody.
func TestSyncWithoutHostsFails(t *testing.T) {
	t.Parallel()
	cs := fake.NewSimpleClientset()
	c := newTestCerts(cs, CertOptions{Hosts: []string{" "}}, nil, nil)
	if err := c.Sync(context.Background()); err == nil {
		t.Fatal("Sync without hosts succeeds")
	}
	if len(cs.Actions()) != 0 {
		t.Errorf("%d API calls", len(cs.Actions()))
	}
}

// TestConcurrentSyncsAgree: replicas syncing at the same time, on an empty namespace or over an
// unusable Secret, all end up serving the one certificate written and trusting the one bundle.
func TestConcurrentSyncsAgree(t *testing.T) {
	t.Parallel()
	for name, initial := range map[string][]runtime.Object{
		"empty namespace": nil,
		"unusable Secret": {&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testSecret},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{"tls.crt": []byte("garbage")},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cs := withResourceVersions(fake.NewSimpleClientset(initial...))
			replicas := make([]*Certs, 4)
			for i := range replicas {
				replicas[i] = newTestCerts(cs, CertOptions{}, nil, nil)
			}
			var wg sync.WaitGroup
			errs := make([]error, len(replicas))
			start := make(chan struct{})
			for i, c := range replicas {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs[i] = c.Sync(context.Background())
				}()
			}
			close(start)
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("replica %d: %v", i, err)
				}
			}
			s := getSecret(t, cs)
			stored := certsOf(t, s.Data["tls.crt"])[0]
			for i, c := range replicas {
				if leaf := leafOf(t, c); leaf.SerialNumber.Cmp(stored.SerialNumber) != 0 {
					t.Errorf("replica %d serves serial %v, the Secret holds %v", i, leaf.SerialNumber, stored.SerialNumber)
				}
				if !bytes.Equal(c.CABundle(), s.Data["ca.crt"]) {
					t.Errorf("replica %d trusts another CA bundle", i)
				}
			}
		})
	}
}

// validSecretData returns the data of a Secret a Sync wrote for testHosts.
func validSecretData(t *testing.T) map[string][]byte {
	t.Helper()
	cs := fake.NewSimpleClientset()
	mustSync(t, newTestCerts(cs, CertOptions{}, nil, nil))
	return getSecret(t, cs).Data
}

// TestUnusableSecretIsReplaced: whatever is wrong in the Secret, Sync writes a usable one over
// it and serves it; a CA that is fine is kept when only the serving pair is wrong.
func TestUnusableSecretIsReplaced(t *testing.T) {
	t.Parallel()
	a, b := validSecretData(t), validSecretData(t)
	with := func(changes map[string][]byte) map[string][]byte {
		d := map[string][]byte{}
		for k, v := range a {
			d[k] = v
		}
		for k, v := range changes {
			if v == nil {
				delete(d, k)
			} else {
				d[k] = v
			}
		}
		return d
	}
	for name, tc := range map[string]struct {
		data   map[string][]byte
		keepCA bool
	}{
		"garbage":                    {data: map[string][]byte{"tls.crt": []byte("garbage"), "tls.key": {0, 1, 2}, "ca.crt": []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "ca.key": []byte("x")}},
		"no data":                    {},
		"no ca.key":                  {data: with(map[string][]byte{"ca.key": nil})},
		"ca.key of another CA":       {data: with(map[string][]byte{"ca.key": b["ca.key"]})},
		"ca.crt with a key block":    {data: with(map[string][]byte{"ca.crt": append(bytes.Clone(a["ca.crt"]), a["ca.key"]...)})},
		"ca.crt with trailing junk":  {data: with(map[string][]byte{"ca.crt": append(bytes.Clone(a["ca.crt"]), "junk"...)})},
		"more than 64 KiB":           {data: with(map[string][]byte{"padding": make([]byte, 64<<10)})},
		"tls.key of another pair":    {data: with(map[string][]byte{"tls.key": b["tls.key"]}), keepCA: true},
		"no tls.crt":                 {data: with(map[string][]byte{"tls.crt": nil}), keepCA: true},
		"serving pair of another CA": {data: with(map[string][]byte{"tls.crt": b["tls.crt"], "tls.key": b["tls.key"]}), keepCA: true},
		"bad PEM in tls.crt":         {data: with(map[string][]byte{"tls.crt": []byte("-----BEGIN CERTIFICATE-----\n!!!\n")}), keepCA: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cs := fake.NewSimpleClientset(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testSecret},
				Type:       corev1.SecretTypeTLS,
				Data:       tc.data,
			})
			c := newTestCerts(cs, CertOptions{}, nil, nil)
			mustSync(t, c)
			s := getSecret(t, cs)
			st, err := parseSecret(s)
			if err != nil || st.leaf == nil {
				t.Fatalf("the Secret after Sync is unusable: %v %v", err, st.leafErr)
			}
			if _, ok := s.Data["padding"]; ok {
				t.Error("a key Certs does not write is still there")
			}
			if kept := bytes.Equal(s.Data["ca.crt"], a["ca.crt"]); kept != tc.keepCA {
				t.Errorf("CA kept: %v, want %v", kept, tc.keepCA)
			}
			if !bytes.Equal(c.CABundle(), s.Data["ca.crt"]) {
				t.Error("CABundle is not the Secret's")
			}
			if err := handshake(t, c, poolOf(t, c.CABundle()), testHost, time.Now()); err != nil {
				t.Errorf("handshake: %v", err)
			}
		})
	}
}

// TestRenewalKeepsTheCA: with a 3s life the serving certificate is kept while two thirds of its
// life are left and renewed after, signed by the same CA.
func TestRenewalKeepsTheCA(t *testing.T) {
	t.Parallel()
	cs := fake.NewSimpleClientset()
	clock := newFakeClock()
	c := newTestCerts(cs, CertOptions{Lifetime: 3 * time.Second, Webhook: testWebhook}, clock, nil)
	mustSync(t, c)
	first, bundle := leafOf(t, c), c.CABundle()

	clock.Advance(time.Second)
	mustSync(t, c)
	if leafOf(t, c).SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatal("renewed with two thirds of its life left")
	}

	clock.Advance(1500 * time.Millisecond)
	mustSync(t, c)
	renewed := leafOf(t, c)
	if renewed.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("not renewed with a sixth of its life left")
	}
	if !bytes.Equal(c.CABundle(), bundle) {
		t.Error("the CA bundle changed on a renewal")
	}
	if want := clock.Now().Add(3 * time.Second).Truncate(time.Second); !renewed.NotAfter.Equal(want) {
		t.Errorf("renewed NotAfter %v, want %v (certificates hold whole seconds)", renewed.NotAfter, want)
	}
	if err := handshake(t, c, poolOf(t, bundle), testHost, clock.Now()); err != nil {
		t.Errorf("handshake with the renewed certificate: %v", err)
	}
}

// TestCARollover: a CA with less than a third of its life left is replaced; the bundle trusts
// both, so certificates of either CA verify, until the old CA expires and leaves the bundle.
func TestCARollover(t *testing.T) {
	t.Parallel()
	cs := fake.NewSimpleClientset(webhookConfiguration(2))
	clock := newFakeClock()
	c := newTestCerts(cs, CertOptions{Lifetime: time.Hour, Webhook: testWebhook}, clock, nil)
	mustSync(t, c)
	oldCA := certsOf(t, c.CABundle())[0]

	clock.Advance(6*time.Hour + 30*time.Minute) // the CA has 3.5 of 10 hours left
	mustSync(t, c)
	if cas := certsOf(t, c.CABundle()); len(cas) != 1 || !cas[0].Equal(oldCA) {
		t.Fatal("the CA changed with more than a third of its life left")
	}
	oldLeaf := leafOf(t, c)

	clock.Advance(30 * time.Minute) // 3 of 10 hours left
	mustSync(t, c)
	cas := certsOf(t, c.CABundle())
	if len(cas) != 2 || cas[0].Equal(oldCA) || !cas[1].Equal(oldCA) {
		t.Fatalf("after the rollover the bundle holds %d certificates, want the new CA then the old", len(cas))
	}
	if !bytes.Equal(getSecret(t, cs).Data["ca.crt"], c.CABundle()) {
		t.Error("the Secret's ca.crt is not the bundle")
	}
	newLeaf := leafOf(t, c)
	if err := newLeaf.CheckSignatureFrom(cas[0]); err != nil {
		t.Errorf("the serving certificate is not the new CA's: %v", err)
	}
	bundle := poolOf(t, c.CABundle())
	if err := handshake(t, c, bundle, testHost, clock.Now()); err != nil {
		t.Errorf("handshake trusting the bundle: %v", err)
	}
	opts := x509.VerifyOptions{Roots: bundle, CurrentTime: clock.Now(), DNSName: testHost}
	if _, err := oldLeaf.Verify(opts); err != nil {
		t.Errorf("a replica's certificate of the old CA is not trusted during the rollover: %v", err)
	}
	assertWebhookBundle(t, cs, c.CABundle())

	clock.Advance(3*time.Hour + time.Minute) // the old CA has expired
	mustSync(t, c)
	if cas2 := certsOf(t, c.CABundle()); len(cas2) != 1 || !cas2[0].Equal(cas[0]) {
		t.Errorf("after the old CA expired the bundle holds %d certificates, want the new CA only", len(cas2))
	}
	assertWebhookBundle(t, cs, c.CABundle())
	if err := handshake(t, c, poolOf(t, c.CABundle()), testHost, clock.Now()); err != nil {
		t.Errorf("handshake after the old CA left: %v", err)
	}
}

// webhookConfiguration returns the ValidatingWebhookConfiguration testWebhook with n webhooks
// and no caBundle.
func webhookConfiguration(n int) *admissionregistrationv1.ValidatingWebhookConfiguration {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: testWebhook}}
	for i := range n {
		path := fmt.Sprintf("/validate-%d", i)
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: fmt.Sprintf("w%d.kubefip.io", i),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Namespace: testNamespace, Name: "kube-fip-webhook", Path: &path},
			},
		})
	}
	return cfg
}

// assertWebhookBundle checks that every webhook of testWebhook in cs trusts bundle.
func assertWebhookBundle(t *testing.T, cs *fake.Clientset, bundle []byte) {
	t.Helper()
	cfg, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), testWebhook, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the webhook configuration: %v", err)
	}
	for _, w := range cfg.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, bundle) {
			t.Errorf("webhook %s: caBundle is not the CA bundle", w.Name)
		}
	}
}

// webhookWrites counts the writes to ValidatingWebhookConfigurations among cs's actions.
func webhookWrites(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "validatingwebhookconfigurations" && a.GetVerb() != "get" {
			n++
		}
	}
	return n
}

// TestWebhookCABundle: every webhook of the configuration gets CABundle once; a missing
// configuration is not an error, and none named means none read.
func TestWebhookCABundle(t *testing.T) {
	t.Parallel()
	t.Run("set", func(t *testing.T) {
		t.Parallel()
		cs := fake.NewSimpleClientset(webhookConfiguration(2))
		c := newTestCerts(cs, CertOptions{Webhook: testWebhook}, nil, nil)
		mustSync(t, c)
		assertWebhookBundle(t, cs, c.CABundle())
		if n := webhookWrites(cs); n != 1 {
			t.Errorf("%d writes to the webhook configuration, want 1", n)
		}
		mustSync(t, c)
		if n := webhookWrites(cs); n != 1 {
			t.Errorf("a Sync with the caBundle in place wrote the configuration (%d writes)", n)
		}
	})
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		cs := fake.NewSimpleClientset()
		c := newTestCerts(cs, CertOptions{Webhook: testWebhook}, nil, nil)
		mustSync(t, c)
		if !loaded(c) {
			t.Error("not ready")
		}
	})
	t.Run("conflict", func(t *testing.T) {
		t.Parallel()
		cs := fake.NewSimpleClientset(webhookConfiguration(1))
		gr := admissionregistrationv1.Resource("validatingwebhookconfigurations")
		cs.PrependReactor("update", "validatingwebhookconfigurations", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewConflict(gr, testWebhook, errors.New("modified"))
		})
		c := newTestCerts(cs, CertOptions{Webhook: testWebhook}, nil, nil)
		mustSync(t, c)
	})
	t.Run("none named", func(t *testing.T) {
		t.Parallel()
		cs := fake.NewSimpleClientset(webhookConfiguration(1))
		mustSync(t, newTestCerts(cs, CertOptions{}, nil, nil))
		for _, a := range cs.Actions() {
			if a.GetResource().Resource == "validatingwebhookconfigurations" {
				t.Errorf("%s on the webhook configuration", a.GetVerb())
			}
		}
	})
}

// TestNewHostRenews: a host added to Hosts gets a certificate naming it, from the same CA.
func TestNewHostRenews(t *testing.T) {
	t.Parallel()
	cs := fake.NewSimpleClientset()
	before := newTestCerts(cs, CertOptions{}, nil, nil)
	mustSync(t, before)
	const added = "kube-fip-webhook-2.kube-fip.svc"
	after := newTestCerts(cs, CertOptions{Hosts: append(testHosts(), added)}, nil, nil)
	mustSync(t, after)
	leaf := leafOf(t, after)
	if leaf.SerialNumber.Cmp(leafOf(t, before).SerialNumber) == 0 {
		t.Fatal("not renewed for a new host")
	}
	if !covers(leaf, added) || uncovered(leaf, testHosts()) != "" {
		t.Errorf("SANs %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	if !bytes.Equal(after.CABundle(), before.CABundle()) {
		t.Error("the CA changed for a new host")
	}
	if err := handshake(t, after, poolOf(t, after.CABundle()), added, time.Now()); err != nil {
		t.Errorf("handshake for the new host: %v", err)
	}
}

// TestRun: Run syncs at once, then every Lifetime/10 within [1s, 1m], and returns when its
// context ends.
func TestRun(t *testing.T) {
	t.Parallel()
	for life, want := range map[time.Duration]time.Duration{
		0:                time.Minute,
		3 * time.Second:  time.Second,
		5 * time.Minute:  30 * time.Second,
		30 * time.Minute: time.Minute,
	} {
		if got := newTestCerts(fake.NewSimpleClientset(), CertOptions{Lifetime: life}, nil, nil).interval(); got != want {
			t.Errorf("Lifetime %v: interval %v, want %v", life, got, want)
		}
	}

	c := newTestCerts(fake.NewSimpleClientset(), CertOptions{}, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	for deadline := time.Now().Add(10 * time.Second); !loaded(c); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not ready 10s after Run")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// TestLogsHoldNoKeyMaterial: through creation, renewal, a host change, a replaced Secret, a CA
// rollover and the webhook configuration's updates, no log line (message or field) holds PEM.
func TestLogsHoldNoKeyMaterial(t *testing.T) {
	t.Parallel()
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.TraceLevel)
	cs := withResourceVersions(fake.NewSimpleClientset(webhookConfiguration(2)))
	clock := newFakeClock()
	opts := CertOptions{Lifetime: time.Hour, Webhook: testWebhook}
	c := newTestCerts(cs, opts, clock, log)
	mustSync(t, c)
	clock.Advance(50 * time.Minute)
	mustSync(t, c)
	opts.Hosts = append(testHosts(), "added.kube-fip.svc")
	mustSync(t, newTestCerts(cs, opts, clock, log))
	s := getSecret(t, cs)
	s.Data["tls.key"] = append([]byte("-----BEGIN PRIVATE KEY-----\n"), s.Data["ca.key"]...)
	s.Data["ca.crt"] = append(s.Data["ca.crt"], "junk"...)
	if _, err := cs.CoreV1().Secrets(testNamespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustSync(t, c)
	clock.Advance(7 * time.Hour)
	mustSync(t, c)
	mustSync(t, newTestCerts(cs, CertOptions{Webhook: "missing"}, clock, log))

	// A failing Sync, logged by Run.
	broken := fake.NewSimpleClientset()
	broken.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("unavailable")
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(hook.AllEntries()) == 0 || !strings.Contains(hook.LastEntry().Message, "sync failed") {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	newTestCerts(broken, CertOptions{}, clock, log).Run(ctx)

	var created, renewed, rolled, replaced bool
	for _, e := range hook.AllEntries() {
		line, err := e.String()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range e.Data {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		if strings.Contains(line, "PRIVATE KEY") || strings.Contains(line, "CERTIFICATE") || strings.Contains(line, "-----") {
			t.Errorf("log line with PEM: %q", line)
		}
		created = created || strings.HasPrefix(e.Message, "created the webhook certificate")
		renewed = renewed || strings.HasPrefix(e.Message, "renewed the webhook certificate")
		rolled = rolled || strings.HasPrefix(e.Message, "rolled the webhook CA over")
		replaced = replaced || strings.HasPrefix(e.Message, "the webhook certificate Secret was unusable") && e.Level == logrus.WarnLevel
	}
	if !created || !renewed || !rolled || !replaced {
		t.Errorf("logged created %v, renewed %v, rolled over %v, replaced %v: want all", created, renewed, rolled, replaced)
	}
}

// TestParseCertificatesIsStrict: only CERTIFICATE blocks, and nothing after them but space.
func TestParseCertificatesIsStrict(t *testing.T) {
	t.Parallel()
	ca, _, keyPEM, err := newCA(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	if certs, err := parseCertificates(append(bytes.Clone(certPEM), "\n\n"...)); err != nil || len(certs) != 1 {
		t.Errorf("one certificate: %d, %v", len(certs), err)
	}
	for name, data := range map[string][]byte{
		"empty":     nil,
		"key":       keyPEM,
		"cert, key": append(bytes.Clone(certPEM), keyPEM...),
		"junk":      append(bytes.Clone(certPEM), "junk"...),
	} {
		if _, err := parseCertificates(data); err == nil {
			t.Errorf("%s: parsed", name)
		} else if strings.Contains(err.Error(), "-----") {
			t.Errorf("%s: the error holds PEM: %v", name, err)
		}
	}
}

// loaded tells whether c has a serving certificate loaded.
func loaded(c *Certs) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cert != nil
}

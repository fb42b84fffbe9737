package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"maps"
	"strings"
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
	"k8s.io/client-go/util/cert"
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
type fakeClock struct{ t time.Time }

// Now returns the clock's time.
func (c *fakeClock) Now() time.Time { return c.t }

// newTestCerts returns Certs on cs for opts (Secret and hosts defaulted), on clock when not nil,
// and the hook of its log. At the test's end no log line (message or field) may hold PEM.
func newTestCerts(t *testing.T, cs *fake.Clientset, opts CertOptions, clock *fakeClock) (*Certs, *logtest.Hook) {
	opts.Namespace, opts.SecretName = testNamespace, testSecret
	if opts.Hosts == nil {
		opts.Hosts = testHosts()
	}
	c := NewCerts(cs.CoreV1().Secrets(testNamespace), cs.AdmissionregistrationV1().ValidatingWebhookConfigurations(), opts)
	if clock != nil {
		c.now = clock.Now
	}
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.TraceLevel)
	c.log = log
	t.Cleanup(func() {
		for _, e := range hook.AllEntries() {
			line, _ := e.String()
			if strings.Contains(line+fmt.Sprint(e.Data), "-----") {
				t.Errorf("log line with PEM: %q %v", line, e.Data)
			}
		}
	})
	return c, hook
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
	return cert.Leaf
}

// certsOf parses PEM holding certificates.
func certsOf(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	certs, err := cert.ParseCertsPEM(data)
	if err != nil {
		t.Fatalf("parse certificates: %v", err)
	}
	return certs
}

// verify checks leaf, for a server named host at now, against the CAs in bundle.
func verify(leaf *x509.Certificate, bundle []byte, host string, now time.Time) error {
	roots, err := cert.NewPoolFromBytes(bundle)
	if err == nil {
		_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now})
	}
	return err
}

// TestSyncCreatesTheSecret: without hosts Sync fails, calling nothing. On an empty namespace it
// creates a labelled kubernetes.io/tls Secret with a CA of ten serving lives and a serving
// certificate for every host, backdated a minute; until then nothing is served, and a second Sync
// writes nothing. A host added gets a certificate naming it, from the same CA.
func TestSyncCreatesTheSecret(t *testing.T) {
	t.Parallel()
	cs := fake.NewSimpleClientset()
	if c, _ := newTestCerts(t, cs, CertOptions{Hosts: []string{" "}}, nil); c.Sync(context.Background()) == nil || len(cs.Actions()) != 0 {
		t.Fatalf("Sync without hosts succeeds or calls the API (%d calls)", len(cs.Actions()))
	}
	clock := &fakeClock{time.Now().Truncate(time.Second)}
	c, _ := newTestCerts(t, cs, CertOptions{}, clock)
	if _, err := c.GetCertificate(&tls.ClientHelloInfo{}); err == nil || c.CABundle() != nil {
		t.Fatal("a certificate or a CA bundle before Sync")
	}
	mustSync(t, c)

	s := getSecret(t, cs)
	if s.Type != corev1.SecretTypeTLS || s.Labels[managedByLabel] != managedByValue {
		t.Errorf("Secret type %q labels %v", s.Type, s.Labels)
	}
	if !bytes.Equal(s.Data["ca.crt"], c.CABundle()) {
		t.Error("CABundle differs from the Secret's ca.crt")
	}
	cas := certsOf(t, c.CABundle())
	if len(cas) != 1 || cas[0].Subject.CommonName != caCommonName || !cas[0].NotAfter.Equal(clock.t.Add(10*DefaultCertLifetime)) {
		t.Fatalf("CA bundle: %d certificates, the first %v until %v", len(cas), cas[0].Subject, cas[0].NotAfter)
	}
	chain := certsOf(t, s.Data["tls.crt"])
	leaf := leafOf(t, c)
	if len(chain) != 2 || !chain[0].Equal(leaf) || !chain[1].Equal(cas[0]) {
		t.Errorf("tls.crt holds %d certificates, want the one served then the CA", len(chain))
	}
	if !leaf.NotBefore.Equal(clock.t.Add(-time.Minute)) || !leaf.NotAfter.Equal(clock.t.Add(DefaultCertLifetime)) {
		t.Errorf("valid from %v to %v", leaf.NotBefore, leaf.NotAfter)
	}
	for _, h := range testHosts() {
		if err := verify(leaf, c.CABundle(), h, clock.t); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}

	before := len(cs.Actions())
	mustSync(t, c)
	for _, a := range cs.Actions()[before:] {
		if a.GetVerb() != "get" {
			t.Errorf("second Sync: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}

	const added = "kube-fip-webhook-2.kube-fip.svc"
	more, _ := newTestCerts(t, cs, CertOptions{Hosts: append(testHosts(), added)}, clock)
	mustSync(t, more)
	if !bytes.Equal(more.CABundle(), c.CABundle()) {
		t.Error("the CA changed for a new host")
	}
	if err := verify(leafOf(t, more), more.CABundle(), added, clock.t); err != nil {
		t.Errorf("the new host: %v", err)
	}
}

// validSecretData returns the data of a Secret a Sync wrote for testHosts.
func validSecretData(t *testing.T) map[string][]byte {
	t.Helper()
	cs := fake.NewSimpleClientset()
	c, _ := newTestCerts(t, cs, CertOptions{}, nil)
	mustSync(t, c)
	return getSecret(t, cs).Data
}

// TestLostWriteRace: a replica whose write loses to another's (AlreadyExists on create, Conflict
// on update, NotFound when the Secret went meanwhile) reads the Secret again and serves what it
// then holds, leaving a usable Secret another replica wrote as it is.
func TestLostWriteRace(t *testing.T) {
	t.Parallel()
	gvr := corev1.SchemeGroupVersion.WithResource("secrets")
	meta := metav1.ObjectMeta{Namespace: testNamespace, Name: testSecret}
	winner := &corev1.Secret{ObjectMeta: meta, Data: validSecretData(t)}
	unusable := &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"tls.crt": []byte("garbage")}}
	for name, tc := range map[string]struct {
		initial []runtime.Object
		verb    string
		other   func(k8stesting.ObjectTracker) error // what another replica does just before our write
		err     error                                // what our write then gets
	}{
		"created first": {nil, "create", func(tr k8stesting.ObjectTracker) error { return tr.Create(gvr, winner, testNamespace) },
			apierrors.NewAlreadyExists(gvr.GroupResource(), testSecret)},
		"updated first": {[]runtime.Object{unusable}, "update", func(tr k8stesting.ObjectTracker) error { return tr.Update(gvr, winner, testNamespace) },
			apierrors.NewConflict(gvr.GroupResource(), testSecret, errors.New("the object has been modified"))},
		"deleted": {[]runtime.Object{unusable}, "update", func(tr k8stesting.ObjectTracker) error { return tr.Delete(gvr, testNamespace, testSecret) },
			apierrors.NewNotFound(gvr.GroupResource(), testSecret)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cs := fake.NewSimpleClientset(tc.initial...)
			raced := false
			cs.PrependReactor(tc.verb, "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
				if raced {
					return false, nil, nil
				}
				raced = true
				if err := tc.other(cs.Tracker()); err != nil {
					t.Error(err)
				}
				return true, nil, tc.err
			})
			c, _ := newTestCerts(t, cs, CertOptions{}, nil)
			mustSync(t, c)
			s := getSecret(t, cs)
			if !raced || !leafOf(t, c).Equal(certsOf(t, s.Data["tls.crt"])[0]) || !bytes.Equal(c.CABundle(), s.Data["ca.crt"]) {
				t.Errorf("raced %v; Certs serves or trusts other certificates than the Secret's", raced)
			}
			if name != "deleted" && !bytes.Equal(s.Data["tls.crt"], winner.Data["tls.crt"]) {
				t.Error("the other replica's Secret was written over")
			}
		})
	}
}

// TestUnusableSecretIsReplaced: whatever is wrong in the chart's Opaque Secret, Sync writes a
// usable one over it, keeping its type, and serves it; a CA that is fine is kept when only the
// serving pair is wrong.
func TestUnusableSecretIsReplaced(t *testing.T) {
	t.Parallel()
	a, b := validSecretData(t), validSecretData(t)
	with := func(changes map[string][]byte) map[string][]byte {
		d := maps.Clone(a)
		maps.Copy(d, changes)
		return d
	}
	st, err := parseSecret(&corev1.Secret{Data: a})
	if err != nil {
		t.Fatal(err)
	}
	intermediate, _, intermediateKey, err := issue(&x509.Certificate{
		Subject: pkix.Name{CommonName: "intermediate"}, NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}, st.ca, st.caKey)
	if err != nil {
		t.Fatal(err)
	}
	intermediatePEM, _ := cert.EncodeCertificates(intermediate)
	for name, tc := range map[string]struct {
		data   map[string][]byte
		keepCA bool
	}{
		"no data":                    {},
		"ca.key of another CA":       {data: with(map[string][]byte{"ca.key": b["ca.key"]})},
		"ca.crt with a key block":    {data: with(map[string][]byte{"ca.crt": append(bytes.Clone(a["ca.crt"]), a["ca.key"]...)})},
		"a CA not self-signed":       {data: with(map[string][]byte{"ca.crt": intermediatePEM, "ca.key": intermediateKey})},
		"more than 64 KiB":           {data: with(map[string][]byte{"padding": make([]byte, 64<<10)})},
		"tls.key of another pair":    {data: with(map[string][]byte{"tls.key": b["tls.key"], "padding": {1}}), keepCA: true},
		"serving pair of another CA": {data: with(map[string][]byte{"tls.crt": b["tls.crt"], "tls.key": b["tls.key"]}), keepCA: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cs := fake.NewSimpleClientset(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: testSecret},
				Type:       corev1.SecretTypeOpaque,
				Data:       tc.data,
			})
			c, hook := newTestCerts(t, cs, CertOptions{}, nil)
			mustSync(t, c)
			if e := hook.AllEntries()[0]; !tc.keepCA && (e.Level != logrus.WarnLevel || !strings.HasPrefix(e.Message, "the webhook certificate Secret was unusable (")) {
				t.Errorf("first log line: %s %q, want a warning saying why the Secret was replaced", e.Level, e.Message)
			}
			s := getSecret(t, cs)
			if st, err := parseSecret(s); err != nil || c.renewal(st, time.Now()) != "" {
				t.Fatalf("the Secret after Sync is unusable: %v", err)
			}
			if s.Type != corev1.SecretTypeOpaque || s.Labels[managedByLabel] != managedByValue || s.Data["padding"] != nil {
				t.Errorf("Secret type %q labels %v, keys besides Certs': %v", s.Type, s.Labels, s.Data["padding"] != nil)
			}
			if kept := bytes.Equal(s.Data["ca.crt"], tc.data["ca.crt"]); kept != tc.keepCA {
				t.Errorf("CA kept: %v, want %v", kept, tc.keepCA)
			}
			if !leafOf(t, c).Equal(certsOf(t, s.Data["tls.crt"])[0]) || !bytes.Equal(c.CABundle(), s.Data["ca.crt"]) {
				t.Error("Certs serves or trusts other certificates than the Secret's")
			}
		})
	}
}

// TestRenewalAndCARollover: with a 1h life the serving certificate is renewed once less than a
// third of its life is left, from the same CA. A CA (10h) with less than a third of its life left
// is replaced; the bundle, in the Secret and the webhook configuration, trusts both, so
// certificates of either CA verify, until the old CA expires and leaves it.
func TestRenewalAndCARollover(t *testing.T) {
	t.Parallel()
	cs := fake.NewSimpleClientset(webhookConfiguration(2))
	clock := &fakeClock{time.Now().Truncate(time.Second)}
	c, _ := newTestCerts(t, cs, CertOptions{Lifetime: time.Hour, Webhook: testWebhook}, clock)
	mustSync(t, c)
	first, bundle := leafOf(t, c), c.CABundle()
	oldCA := certsOf(t, bundle)[0]

	clock.t = clock.t.Add(40 * time.Minute) // 20 of 60 minutes left
	mustSync(t, c)
	if !leafOf(t, c).Equal(first) {
		t.Fatal("renewed with a third of its life left")
	}
	clock.t = clock.t.Add(time.Second)
	mustSync(t, c)
	renewed := leafOf(t, c)
	if renewed.Equal(first) || !renewed.NotAfter.Equal(clock.t.Add(time.Hour)) {
		t.Fatalf("with less than a third of its life left: renewed %v, until %v", !renewed.Equal(first), renewed.NotAfter)
	}
	if !bytes.Equal(c.CABundle(), bundle) {
		t.Error("the CA bundle changed on a renewal")
	}

	clock.t = clock.t.Add(6*time.Hour - 11*time.Minute) // the CA has 3.5 of 10 hours left
	mustSync(t, c)
	if !bytes.Equal(c.CABundle(), bundle) {
		t.Fatal("the CA changed with more than a third of its life left")
	}
	oldLeaf := leafOf(t, c)

	clock.t = clock.t.Add(30 * time.Minute) // 3 of 10 hours left
	mustSync(t, c)
	cas := certsOf(t, c.CABundle())
	if len(cas) != 2 || cas[0].Equal(oldCA) || !cas[1].Equal(oldCA) {
		t.Fatalf("after the rollover the bundle holds %d certificates, want the new CA then the old", len(cas))
	}
	if !bytes.Equal(getSecret(t, cs).Data["ca.crt"], c.CABundle()) {
		t.Error("the Secret's ca.crt is not the bundle")
	}
	assertWebhookBundle(t, cs, c.CABundle())
	if err := leafOf(t, c).CheckSignatureFrom(cas[0]); err != nil {
		t.Errorf("the serving certificate is not the new CA's: %v", err)
	}
	if err := verify(oldLeaf, c.CABundle(), testHost, clock.t); err != nil {
		t.Errorf("a replica's certificate of the old CA is not trusted during the rollover: %v", err)
	}

	clock.t = clock.t.Add(3*time.Hour + time.Minute) // the old CA has expired
	mustSync(t, c)
	if cas2 := certsOf(t, c.CABundle()); len(cas2) != 1 || !cas2[0].Equal(cas[0]) {
		t.Errorf("after the old CA expired the bundle holds %d certificates, want the new CA only", len(cas2))
	}
	assertWebhookBundle(t, cs, c.CABundle())
}

// webhookConfiguration returns the ValidatingWebhookConfiguration testWebhook with n webhooks
// and no caBundle.
func webhookConfiguration(n int) *admissionregistrationv1.ValidatingWebhookConfiguration {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: testWebhook}}
	for i := range n {
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: fmt.Sprintf("w%d.kubefip.io", i)})
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

// webhookCalls counts the calls with verb (all verbs when "") on ValidatingWebhookConfigurations
// among cs's actions.
func webhookCalls(cs *fake.Clientset, verb string) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "validatingwebhookconfigurations" && (verb == "" || a.GetVerb() == verb) {
			n++
		}
	}
	return n
}

// TestWebhookCABundle: every webhook of the configuration gets CABundle, written once; a
// configuration changed meanwhile or missing is not an error, and none named means none read.
func TestWebhookCABundle(t *testing.T) {
	t.Parallel()
	cs := fake.NewSimpleClientset(webhookConfiguration(2))
	c, _ := newTestCerts(t, cs, CertOptions{Webhook: testWebhook}, nil)
	mustSync(t, c)
	mustSync(t, c)
	assertWebhookBundle(t, cs, c.CABundle())
	if n := webhookCalls(cs, "update"); n != 1 {
		t.Errorf("%d writes to the webhook configuration, want 1", n)
	}

	refused := fake.NewSimpleClientset(webhookConfiguration(1))
	refused.PrependReactor("update", "validatingwebhookconfigurations", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(admissionregistrationv1.Resource("validatingwebhookconfigurations"), testWebhook, errors.New("modified"))
	})
	for _, cs := range []*fake.Clientset{refused, fake.NewSimpleClientset()} {
		c, _ := newTestCerts(t, cs, CertOptions{Webhook: testWebhook}, nil)
		mustSync(t, c)
	}

	cs = fake.NewSimpleClientset(webhookConfiguration(1))
	c, _ = newTestCerts(t, cs, CertOptions{}, nil)
	mustSync(t, c)
	if n := webhookCalls(cs, ""); n != 0 {
		t.Errorf("%d calls on the webhook configuration with none named", n)
	}
}

// TestRun: Run syncs every Lifetime/10 within [1s, 1m], logs a Sync that failed, and returns when
// its context ends.
func TestRun(t *testing.T) {
	t.Parallel()
	for life, want := range map[time.Duration]time.Duration{0: time.Minute, 3 * time.Second: time.Second, 5 * time.Minute: 30 * time.Second, 30 * time.Minute: time.Minute} {
		if c, _ := newTestCerts(t, fake.NewSimpleClientset(), CertOptions{Lifetime: life}, nil); c.interval() != want {
			t.Errorf("Lifetime %v: interval %v, want %v", life, c.interval(), want)
		}
	}

	cs := fake.NewSimpleClientset()
	cs.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("unavailable")
	})
	c, hook := newTestCerts(t, cs, CertOptions{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		for e := hook.LastEntry(); ctx.Err() == nil && (e == nil || !strings.Contains(e.Message, "sync failed")); e = hook.LastEntry() {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	c.Run(ctx)
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Error("no failed sync logged in 10s")
	}
}

package admission

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// DefaultCertLifetime is the serving certificate's life when CertOptions.Lifetime is 0.
const DefaultCertLifetime = 365 * 24 * time.Hour

const (
	caCommonName     = "kube-fip-operator-webhook-ca"
	caLifetimeFactor = 10          // the CA's life in serving certificate lives
	backdate         = time.Minute // certificates start this far back, for clocks a little behind ours
	maxSecretData    = 64 << 10    // bounds the Secret data (keys and values) Sync parses
	maxWriteAttempts = 5           // bounds how often Sync reads the Secret again after losing a write race
	minSyncInterval  = time.Second // Run's shortest period
	maxSyncInterval  = time.Minute // Run's longest period

	keyCACert = "ca.crt" // the current CA, then older CAs not expired
	keyCAKey  = "ca.key" // the current CA's key

	managedByLabel = "app.kubernetes.io/managed-by"
	managedByValue = "kube-fip-operator"
)

// CertOptions configure Certs.
type CertOptions struct {
	Namespace  string        // the operator's namespace: the Secret lives here
	SecretName string        // the Secret holding the CA and the serving certificate
	Hosts      []string      // DNS names and IP addresses the serving certificate is for (the Service's <svc>.<ns>.svc etc.)
	Lifetime   time.Duration // the serving certificate's life; 0 means DefaultCertLifetime (365 days)
	Webhook    string        // the ValidatingWebhookConfiguration whose every webhook's clientConfig.caBundle is set; "" sets none
}

// Certs keeps the webhook's serving certificate and its CA in one Secret, renews them, serves the
// certificate to tls.Config.GetCertificate and writes the CA bundle into the
// ValidatingWebhookConfiguration. Every replica runs one, and sees what another wrote at its next
// Sync.
//
// Not rancher/dynamiclistener: its Kubernetes storage follows the Secret through a wrangler Secret
// controller, an informer that lists and watches every Secret of the namespace; Certs gets and
// updates its one Secret by name, which RBAC can limit to that name.
type Certs struct {
	secrets  corev1client.SecretInterface
	webhooks admissionv1client.ValidatingWebhookConfigurationInterface
	opts     CertOptions
	now      func() time.Time   // the clock; tests move it
	log      logrus.FieldLogger // where Sync and Run log; tests capture it

	syncMu sync.Mutex // one Sync at a time

	mu       sync.RWMutex
	cert     *tls.Certificate // the serving certificate last loaded; nil before
	caBundle []byte           // the CA bundle PEM loaded with cert
}

// NewCerts returns Certs keeping opts.SecretName in secrets (the client of opts.Namespace) and
// setting the caBundle of opts.Webhook through webhooks. Nothing happens before Sync or Run.
func NewCerts(secrets corev1client.SecretInterface, webhooks admissionv1client.ValidatingWebhookConfigurationInterface, opts CertOptions) *Certs {
	if opts.Lifetime <= 0 {
		opts.Lifetime = DefaultCertLifetime
	}
	opts.Hosts = normalizeHosts(opts.Hosts)
	return &Certs{
		secrets:  secrets,
		webhooks: webhooks,
		opts:     opts,
		now:      time.Now,
		log:      logrus.WithField("secret", opts.Namespace+"/"+opts.SecretName),
	}
}

// normalizeHosts trims, lower-cases (DNS names) and de-duplicates hosts, keeping their order.
func normalizeHosts(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		} else {
			h = strings.ToLower(h)
		}
		if h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// Sync makes sure the Secret holds a CA and a serving certificate valid for opts.Hosts with more
// than a third of its life left (creating or renewing them as needed), loads the serving
// certificate for GetCertificate, and sets the caBundle of opts.Webhook when it differs. It is
// safe to call from several replicas at once: writes use the resourceVersion read (a conflict or
// AlreadyExists means another replica wrote first: read again and use theirs).
func (c *Certs) Sync(ctx context.Context) error {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if len(c.opts.Hosts) == 0 {
		return errors.New("webhook certificate: no hosts to issue it for")
	}
	data, err := c.syncSecret(ctx)
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Errorf("load the webhook serving certificate: %w", err)
	}
	c.mu.Lock()
	c.cert, c.caBundle = &pair, bytes.Clone(data[keyCACert])
	c.mu.Unlock()
	return c.syncWebhook(ctx)
}

// syncSecret reads the Secret, writes a new CA or serving certificate when needed, and returns
// the data in force. It reads again when another replica wrote first.
func (c *Certs) syncSecret(ctx context.Context) (map[string][]byte, error) {
	for range maxWriteAttempts {
		secret, err := c.secrets.Get(ctx, c.opts.SecretName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			secret = nil
		case err != nil:
			return nil, fmt.Errorf("get webhook certificate Secret %s/%s: %w", c.opts.Namespace, c.opts.SecretName, err)
		}
		data, events, err := c.plan(secret, c.now())
		if err != nil {
			return nil, err
		}
		if data == nil {
			return secret.Data, nil
		}
		err = c.write(ctx, secret, data)
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || (secret != nil && apierrors.IsNotFound(err)) {
			c.log.Debug("another replica wrote the webhook certificate Secret first: reading it again")
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range events {
			if e.warn {
				c.log.Warn(e.msg)
			} else {
				c.log.Info(e.msg)
			}
		}
		return data, nil
	}
	return nil, fmt.Errorf("webhook certificate Secret %s/%s: still changing after %d attempts", c.opts.Namespace, c.opts.SecretName, maxWriteAttempts)
}

// write creates the Secret with data, or updates secret (with the resourceVersion read) to hold
// exactly data.
func (c *Certs) write(ctx context.Context, secret *corev1.Secret, data map[string][]byte) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: c.opts.SecretName, Namespace: c.opts.Namespace}}
	if secret != nil {
		s = secret.DeepCopy()
	}
	metav1.SetMetaDataLabel(&s.ObjectMeta, managedByLabel, managedByValue)
	// A Secret's type cannot change in place: the chart's Opaque one stays Opaque.
	switch s.Type {
	case "":
		s.Type = corev1.SecretTypeTLS
	case corev1.SecretTypeTLS, corev1.SecretTypeOpaque:
	default:
		c.log.Warnf("the webhook certificate Secret has type %s, not %s: keeping it", s.Type, corev1.SecretTypeTLS)
	}
	s.Data, s.StringData = data, nil
	var err error
	if secret == nil {
		_, err = c.secrets.Create(ctx, s, metav1.CreateOptions{})
	} else {
		_, err = c.secrets.Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write webhook certificate Secret %s/%s: %w", c.opts.Namespace, c.opts.SecretName, err)
	}
	return nil
}

// stored is what a Secret holds, parsed.
type stored struct {
	ca       *x509.Certificate   // the current CA; nil when missing or unusable
	caKey    crypto.Signer       // its key
	previous []*x509.Certificate // older CAs in ca.crt
	data     map[string][]byte   // the four keys Certs writes, as they are to be written
}

// parseSecret parses secret. An error means the CA part is missing or unusable, or the data is too
// large: the whole Secret counts as empty. The serving pair is renewal's to judge.
func parseSecret(secret *corev1.Secret) (*stored, error) {
	if secret == nil {
		return nil, errors.New("no Secret")
	}
	size := 0
	for k, v := range secret.Data {
		size += len(k) + len(v)
	}
	if size > maxSecretData {
		return nil, fmt.Errorf("its data is %d bytes, more than %d", size, maxSecretData)
	}
	cas, caKey, err := parsePair(secret.Data[keyCACert], secret.Data[keyCAKey])
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", keyCACert, keyCAKey, err)
	}
	if !cas[0].IsCA || cas[0].CheckSignatureFrom(cas[0]) != nil {
		return nil, fmt.Errorf("%s: the first certificate is not a self-signed CA", keyCACert)
	}
	st := &stored{ca: cas[0], caKey: caKey, previous: cas[1:], data: map[string][]byte{}}
	for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, keyCACert, keyCAKey} {
		st.data[k] = secret.Data[k]
	}
	return st, nil
}

// parsePair parses PEM holding certificates and nothing else (so that nothing else goes from
// ca.crt into the caBundle), and the key of the first of them.
func parsePair(certPEM, keyPEM []byte) ([]*x509.Certificate, crypto.Signer, error) {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, nil, errors.New("missing")
	}
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, nil, err
	}
	if canonical, _ := cert.EncodeCertificates(certs...); !bytes.Equal(bytes.TrimSpace(canonical), bytes.TrimSpace(certPEM)) {
		return nil, nil, errors.New("data besides certificates")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, err
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("not a signing key")
	}
	return certs, key, nil
}

// event is a line to log once the Secret is written.
type event struct {
	warn bool
	msg  string
}

// plan decides what the Secret must hold at now. It returns nil data when secret is fine as it
// is, or the new data and what to log once it is written.
func (c *Certs) plan(secret *corev1.Secret, now time.Time) (map[string][]byte, []event, error) {
	var events []event
	note := func(warn bool, format string, args ...any) {
		events = append(events, event{warn: warn, msg: fmt.Sprintf(format, args...)})
	}
	st, err := parseSecret(secret)
	if err != nil {
		if secret != nil {
			note(true, "the webhook certificate Secret was unusable (%v): replaced it", err)
		}
		st = &stored{data: map[string][]byte{}}
	}
	fresh := st.ca == nil // nothing usable: everything is created, not renewed
	rolled := fresh || lowOnLife(st.ca, now)
	if rolled {
		ca, key, keyPEM, err := issue(&x509.Certificate{
			Subject:               pkix.Name{CommonName: caCommonName},
			NotBefore:             now.Add(-backdate),
			NotAfter:              now.Add(caLifetimeFactor * c.opts.Lifetime),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
			BasicConstraintsValid: true,
			IsCA:                  true,
			MaxPathLenZero:        true,
		}, nil, nil)
		if err != nil {
			return nil, nil, err
		}
		if fresh {
			note(false, "created the webhook CA, valid until %s", ca.NotAfter.Format(time.RFC3339))
		} else {
			note(false, "rolled the webhook CA over: the new one is valid until %s, the previous one stays trusted until %s",
				ca.NotAfter.Format(time.RFC3339), st.ca.NotAfter.Format(time.RFC3339))
			st.previous = append([]*x509.Certificate{st.ca}, st.previous...)
		}
		st.ca, st.caKey, st.data[keyCAKey] = ca, key, keyPEM
	}
	changed := rolled

	n := len(st.previous)
	st.previous = slices.DeleteFunc(st.previous, func(ca *x509.Certificate) bool { return !now.Before(ca.NotAfter) })
	if dropped := n - len(st.previous); dropped > 0 {
		note(false, "dropped %d expired CA certificates from the webhook CA bundle", dropped)
		changed = true
	}

	why := "the CA was rolled over"
	if !rolled {
		why = c.renewal(st, now)
	}
	if why != "" {
		leaf, err := c.reissue(st, now)
		if err != nil {
			return nil, nil, err
		}
		hosts, until := strings.Join(c.opts.Hosts, ", "), leaf.NotAfter.Format(time.RFC3339)
		if fresh {
			note(false, "created the webhook certificate for %s, valid until %s", hosts, until)
		} else {
			note(false, "renewed the webhook certificate for %s (%s), valid until %s", hosts, why, until)
		}
		changed = true
	}

	if !changed {
		return nil, nil, nil
	}
	if st.data[keyCACert], err = cert.EncodeCertificates(append([]*x509.Certificate{st.ca}, st.previous...)...); err != nil {
		return nil, nil, err
	}
	return st.data, events, nil
}

// renewal says why the serving certificate in st must be issued again, or "" when it is fine.
func (c *Certs) renewal(st *stored, now time.Time) string {
	chain, _, err := parsePair(st.data[corev1.TLSCertKey], st.data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Sprintf("the stored one was unusable: %s and %s: %v", corev1.TLSCertKey, corev1.TLSPrivateKeyKey, err)
	}
	leaf := chain[0]
	if lowOnLife(leaf, now) {
		return "less than a third of its life was left"
	}
	roots := x509.NewCertPool()
	roots.AddCert(st.ca)
	for _, h := range c.opts.Hosts {
		// Verify checks for ServerAuth when KeyUsages is empty.
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, DNSName: h}); err != nil {
			return fmt.Sprintf("it did not verify for %s against the CA: %v", h, err)
		}
	}
	return ""
}

// lowOnLife reports whether cert has less than a third of its life left at now. Its life counts
// from NotBefore+backdate, when it was issued.
func lowOnLife(cert *x509.Certificate, now time.Time) bool {
	life := cert.NotAfter.Sub(cert.NotBefore.Add(backdate))
	return life <= 0 || 3*cert.NotAfter.Sub(now) < life
}

// reissue puts into st a serving certificate for the hosts, signed by st's CA, valid from
// now-backdate to now+Lifetime (not past the CA); tls.crt holds it, then the CA.
func (c *Certs) reissue(st *stored, now time.Time) (*x509.Certificate, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: c.opts.Hosts[0]},
		NotBefore:   now.Add(-backdate),
		NotAfter:    now.Add(c.opts.Lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if tmpl.NotAfter.After(st.ca.NotAfter) {
		tmpl.NotAfter = st.ca.NotAfter
	}
	for _, h := range c.opts.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	leaf, _, keyPEM, err := issue(tmpl, st.ca, st.caKey)
	if err != nil {
		return nil, err
	}
	st.data[corev1.TLSPrivateKeyKey] = keyPEM
	st.data[corev1.TLSCertKey], err = cert.EncodeCertificates(leaf, st.ca)
	return leaf, err
}

// issue gives tmpl a new ECDSA P-256 key and signs it with parentKey or, when parent is nil, with
// its own key (self-signed). It returns the certificate, its key and the key's PEM.
//
// The CA is not client-go's cert.NewSelfSignedCACert, which fixes ten years from the wall clock:
// the CA's life follows Lifetime, on Certs' clock. Nor is the pair GenerateSelfSignedCertKey's,
// which drops the CA's key, so that no later serving certificate could come from the same CA.
func issue(tmpl, parent *x509.Certificate, parentKey crypto.Signer) (*x509.Certificate, crypto.Signer, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("generate a webhook certificate key: %w", err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("create the webhook certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	crt, err := x509.ParseCertificate(der)
	return crt, key, keyPEM, err
}

// syncWebhook sets every webhook's caBundle in opts.Webhook to CABundle() where it differs. A
// missing configuration, or one another writer changed meanwhile, waits for the next Sync.
func (c *Certs) syncWebhook(ctx context.Context) error {
	if c.opts.Webhook == "" {
		return nil
	}
	if c.webhooks == nil {
		return fmt.Errorf("ValidatingWebhookConfiguration %s: no client to set its caBundle", c.opts.Webhook)
	}
	bundle := c.CABundle()
	cfg, err := c.webhooks.Get(ctx, c.opts.Webhook, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		c.log.Debugf("ValidatingWebhookConfiguration %s not found: no caBundle to set", c.opts.Webhook)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get ValidatingWebhookConfiguration %s: %w", c.opts.Webhook, err)
	}
	cfg = cfg.DeepCopy()
	changed := 0
	for i := range cfg.Webhooks {
		if !bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, bundle) {
			cfg.Webhooks[i].ClientConfig.CABundle = bytes.Clone(bundle)
			changed++
		}
	}
	if changed == 0 {
		return nil
	}
	_, err = c.webhooks.Update(ctx, cfg, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		c.log.Debugf("ValidatingWebhookConfiguration %s changed meanwhile: setting its caBundle at the next sync", c.opts.Webhook)
		return nil
	}
	if err != nil {
		return fmt.Errorf("set the caBundle of ValidatingWebhookConfiguration %s: %w", c.opts.Webhook, err)
	}
	c.log.Infof("set the caBundle of %d webhooks in ValidatingWebhookConfiguration %s", changed, c.opts.Webhook)
	return nil
}

// Run calls Sync now and then every Lifetime/10 (at most every minute, at least every second),
// logging failures, until ctx ends. This is how a replica loads what another wrote.
func (c *Certs) Run(ctx context.Context) {
	ticker := time.NewTicker(c.interval())
	defer ticker.Stop()
	for {
		if err := c.Sync(ctx); err != nil && ctx.Err() == nil {
			c.log.WithError(err).Warn("webhook certificate sync failed: retrying")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// interval is Run's period: Lifetime/10 within [minSyncInterval, maxSyncInterval].
func (c *Certs) interval() time.Duration {
	return min(max(c.opts.Lifetime/10, minSyncInterval), maxSyncInterval)
}

// GetCertificate is tls.Config.GetCertificate: the serving certificate last loaded; an error
// before the first successful Sync.
func (c *Certs) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.cert == nil {
		return nil, errors.New("the webhook serving certificate is not loaded yet")
	}
	return c.cert, nil
}

// CABundle is the PEM the webhook configuration must trust: the current CA and, during a CA
// rollover, the previous one. Nil before the first successful Sync.
func (c *Certs) CABundle() []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return bytes.Clone(c.caBundle)
}

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
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// DefaultCertLifetime is the serving certificate's life when CertOptions.Lifetime is 0.
const DefaultCertLifetime = 365 * 24 * time.Hour

const (
	// caCommonName is the CommonName of the self-signed CA.
	caCommonName = "kube-fip-operator-webhook-ca"
	// servingCommonName is the serving certificate's CommonName when it has no host (never, since
	// Sync refuses an empty Hosts; kept so that the template is always complete).
	servingCommonName = "kube-fip-operator-webhook"
	// caLifetimeFactor is the CA's life in serving certificate lives.
	caLifetimeFactor = 10
	// backdate is how far in the past certificates start, for clocks a little behind ours.
	backdate = time.Minute
	// maxSecretData bounds the Secret data (keys and values) Sync parses.
	maxSecretData = 64 << 10
	// maxWriteAttempts bounds how often Sync reads the Secret again after losing a write race.
	maxWriteAttempts = 5
	// minSyncInterval and maxSyncInterval bound Run's period.
	minSyncInterval = time.Second
	maxSyncInterval = time.Minute

	// Secret data keys.
	keyTLSCert = corev1.TLSCertKey       // serving certificate PEM, then the CA certificate
	keyTLSKey  = corev1.TLSPrivateKeyKey // serving key PEM
	keyCACert  = "ca.crt"                // the CA bundle: the current CA, then older CAs not expired
	keyCAKey   = "ca.key"                // the current CA's key

	managedByLabel = "app.kubernetes.io/managed-by"
	managedByValue = "kube-fip-operator"

	pemCertificate = "CERTIFICATE"
	pemPrivateKey  = "PRIVATE KEY"
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
// ValidatingWebhookConfiguration. Every replica runs one.
//
// Not rancher/dynamiclistener: it is built on wrangler v3's controllers (this project is on
// wrangler v2), and its storage watches every Secret of the namespace (list/watch secrets);
// Certs reads one Secret by name and needs only get/create/update on it.
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
		log: logrus.WithFields(logrus.Fields{
			"secret": opts.Namespace + "/" + opts.SecretName,
		}),
	}
}

// normalizeHosts trims, lower-cases (DNS names) and de-duplicates hosts, keeping their order.
func normalizeHosts(hosts []string) []string {
	out := make([]string, 0, len(hosts))
	seen := map[string]bool{}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		} else {
			h = strings.ToLower(h)
		}
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		out = append(out, h)
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
	if err := c.load(data); err != nil {
		return err
	}
	return c.syncWebhook(ctx)
}

// syncSecret reads the Secret, writes a new CA or serving certificate when needed, and returns
// the data in force. It reads again when another replica wrote first.
func (c *Certs) syncSecret(ctx context.Context) (map[string][]byte, error) {
	for attempt := 0; attempt < maxWriteAttempts; attempt++ {
		secret, err := c.secrets.Get(ctx, c.opts.SecretName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			secret = nil
		case err != nil:
			return nil, fmt.Errorf("get webhook certificate Secret %s/%s: %w", c.opts.Namespace, c.opts.SecretName, err)
		}
		now := c.now()
		data, events, err := c.plan(secret, now)
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
	if secret == nil {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name:      c.opts.SecretName,
				Namespace: c.opts.Namespace,
				Labels:    map[string]string{managedByLabel: managedByValue},
			},
			Type: corev1.SecretTypeTLS,
			Data: data,
		}
		if _, err := c.secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create webhook certificate Secret %s/%s: %w", c.opts.Namespace, c.opts.SecretName, err)
		}
		return nil
	}
	s := secret.DeepCopy()
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[managedByLabel] = managedByValue
	switch s.Type {
	case "":
		s.Type = corev1.SecretTypeTLS
	case corev1.SecretTypeTLS, corev1.SecretTypeOpaque:
		// The chart creates the Secret as Opaque, with no data, so that the operator needs no
		// create permission: it keeps that type.
	default:
		// A Secret's type cannot change in place; the data keys are what Certs reads.
		c.log.Warnf("the webhook certificate Secret has type %s, not %s: keeping it", s.Type, corev1.SecretTypeTLS)
	}
	s.Data = data
	s.StringData = nil
	if _, err := c.secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update webhook certificate Secret %s/%s: %w", c.opts.Namespace, c.opts.SecretName, err)
	}
	return nil
}

// stored is what a Secret holds, parsed. A field is nil when that part is missing or unusable.
type stored struct {
	ca       *x509.Certificate   // the current CA
	caKey    crypto.Signer       // its key
	caKeyPEM []byte              // ca.key as stored
	previous []*x509.Certificate // older CAs in ca.crt

	leaf       *x509.Certificate // the serving certificate
	leafErr    error             // why leaf is nil
	servingPEM []byte            // tls.crt as stored
	keyPEM     []byte            // tls.key as stored
}

// parseSecret parses secret. An error means the CA part is missing or unusable: the whole Secret
// counts as empty. A serving pair that is unusable leaves leaf nil and says why in leafErr.
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
	st := &stored{caKeyPEM: secret.Data[keyCAKey]}
	var err error
	st.ca, st.caKey, st.previous, err = parseCA(secret.Data[keyCACert], st.caKeyPEM)
	if err != nil {
		return nil, err
	}
	st.servingPEM, st.keyPEM = secret.Data[keyTLSCert], secret.Data[keyTLSKey]
	st.leaf, st.leafErr = parseServing(st.servingPEM, st.keyPEM)
	return st, nil
}

// parseCA parses the CA bundle and the current CA's key: the bundle's first certificate must be
// a self-signed CA matching the key.
func parseCA(bundlePEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, []*x509.Certificate, error) {
	if len(bundlePEM) == 0 || len(keyPEM) == 0 {
		return nil, nil, nil, fmt.Errorf("%s or %s is missing", keyCACert, keyCAKey)
	}
	certs, err := parseCertificates(bundlePEM)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", keyCACert, err)
	}
	pair, err := tls.X509KeyPair(bundlePEM, keyPEM)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s and %s: %w", keyCACert, keyCAKey, err)
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, nil, fmt.Errorf("%s: not a signing key", keyCAKey)
	}
	ca := certs[0]
	if !ca.IsCA || !ca.BasicConstraintsValid {
		return nil, nil, nil, fmt.Errorf("%s: the first certificate is not a CA", keyCACert)
	}
	if err := ca.CheckSignatureFrom(ca); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: the first certificate is not self-signed: %w", keyCACert, err)
	}
	return ca, key, certs[1:], nil
}

// parseServing parses the serving certificate chain and key, which must match.
func parseServing(certPEM, keyPEM []byte) (*x509.Certificate, error) {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, fmt.Errorf("%s or %s is missing", keyTLSCert, keyTLSKey)
	}
	if _, err := parseCertificates(certPEM); err != nil {
		return nil, fmt.Errorf("%s: %w", keyTLSCert, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", keyTLSCert, keyTLSKey, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", keyTLSCert, err)
		}
	}
	return leaf, nil
}

// parseCertificates parses PEM that holds one or more CERTIFICATE blocks and nothing else.
func parseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != pemCertificate {
			return nil, fmt.Errorf("a %q PEM block where certificates belong", block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, cert)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("data that is not PEM")
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate")
	}
	return certs, nil
}

// event is a line to log once the Secret is written.
type event struct {
	warn bool
	msg  string
}

// info returns an info event.
func info(format string, args ...any) event {
	return event{msg: fmt.Sprintf(format, args...)}
}

// plan decides what the Secret must hold at now. It returns nil data when secret is fine as it
// is, or the new data and what to log once it is written.
func (c *Certs) plan(secret *corev1.Secret, now time.Time) (map[string][]byte, []event, error) {
	var events []event
	st, err := parseSecret(secret)
	if err != nil && secret != nil {
		events = append(events, event{warn: true, msg: fmt.Sprintf("the webhook certificate Secret was unusable (%v): replaced it", err)})
	}
	if err != nil {
		st = &stored{}
	}
	fresh := st.ca == nil // nothing usable: everything is created, not renewed
	caEvents, caChanged, err := c.planCA(st, now, fresh)
	if err != nil {
		return nil, nil, err
	}
	events = append(events, caEvents...)
	changed := caChanged

	if kept := unexpired(st.previous, now); len(kept) != len(st.previous) {
		events = append(events, info("dropped %d expired CA certificates from the webhook CA bundle", len(st.previous)-len(kept)))
		st.previous = kept
		changed = true
	}

	why := "the CA was rolled over"
	if !caChanged {
		why = c.renewal(st, now)
	}
	if why != "" {
		e, err := c.reissue(st, now, fresh, why)
		if err != nil {
			return nil, nil, err
		}
		events = append(events, e)
		changed = true
	}

	if !changed {
		return nil, nil, nil
	}
	bundle := encodeCertificates(append([]*x509.Certificate{st.ca}, st.previous...))
	return map[string][]byte{
		keyTLSCert: st.servingPEM,
		keyTLSKey:  st.keyPEM,
		keyCACert:  bundle,
		keyCAKey:   st.caKeyPEM,
	}, events, nil
}

// planCA replaces the CA in st when there is none (fresh) or it has less than a third of its life
// left, keeping the old one among the previous CAs. It reports whether it did.
func (c *Certs) planCA(st *stored, now time.Time, fresh bool) ([]event, bool, error) {
	if !fresh && !lowOnLife(st.ca, now) {
		return nil, false, nil
	}
	ca, key, keyPEM, err := newCA(now, caLifetimeFactor*c.opts.Lifetime)
	if err != nil {
		return nil, false, err
	}
	var e event
	if fresh {
		e = info("created the webhook CA, valid until %s", ca.NotAfter.Format(time.RFC3339))
	} else {
		e = info("rolled the webhook CA over: the new one is valid until %s, the previous one stays trusted until %s",
			ca.NotAfter.Format(time.RFC3339), st.ca.NotAfter.Format(time.RFC3339))
		st.previous = append([]*x509.Certificate{st.ca}, st.previous...)
	}
	st.ca, st.caKey, st.caKeyPEM = ca, key, keyPEM
	return []event{e}, true, nil
}

// reissue puts a new serving certificate from st's CA into st; why says why, fresh whether there
// was nothing before.
func (c *Certs) reissue(st *stored, now time.Time, fresh bool, why string) (event, error) {
	leaf, certPEM, keyPEM, err := c.newServing(st.ca, st.caKey, now)
	if err != nil {
		return event{}, err
	}
	st.leaf, st.servingPEM, st.keyPEM = leaf, certPEM, keyPEM
	hosts, until := strings.Join(c.opts.Hosts, ", "), leaf.NotAfter.Format(time.RFC3339)
	if fresh {
		return info("created the webhook certificate for %s, valid until %s", hosts, until), nil
	}
	return info("renewed the webhook certificate for %s (%s), valid until %s", hosts, why, until), nil
}

// renewal says why the serving certificate in st must be issued again, or "" when it is fine.
func (c *Certs) renewal(st *stored, now time.Time) string {
	if st.leaf == nil {
		return fmt.Sprintf("the stored one was unusable: %v", st.leafErr)
	}
	if lowOnLife(st.leaf, now) {
		return "less than a third of its life was left"
	}
	if h := uncovered(st.leaf, c.opts.Hosts); h != "" {
		return "it did not cover " + h
	}
	roots := x509.NewCertPool()
	roots.AddCert(st.ca)
	_, err := st.leaf.Verify(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Sprintf("it did not verify against the CA: %v", err)
	}
	return ""
}

// lowOnLife reports whether cert has less than a third of its life left at now. Its life counts
// from NotBefore+backdate, when it was issued.
func lowOnLife(cert *x509.Certificate, now time.Time) bool {
	life := cert.NotAfter.Sub(cert.NotBefore.Add(backdate))
	if life <= 0 {
		return true
	}
	return 3*cert.NotAfter.Sub(now) < life
}

// uncovered returns a host of hosts that cert's SANs do not name, or "".
func uncovered(cert *x509.Certificate, hosts []string) string {
	for _, h := range hosts {
		if !covers(cert, h) {
			return h
		}
	}
	return ""
}

// covers reports whether cert names host (an IP address or a DNS name) among its SANs.
func covers(cert *x509.Certificate, host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		for _, a := range cert.IPAddresses {
			if a.Equal(ip) {
				return true
			}
		}
		return false
	}
	for _, n := range cert.DNSNames {
		if strings.EqualFold(n, host) {
			return true
		}
	}
	return false
}

// unexpired returns the certificates of certs still valid at now.
func unexpired(certs []*x509.Certificate, now time.Time) []*x509.Certificate {
	var kept []*x509.Certificate
	for _, c := range certs {
		if now.Before(c.NotAfter) {
			kept = append(kept, c)
		}
	}
	return kept
}

// newCA makes a self-signed CA valid from now-backdate to now+life.
func newCA(now time.Time, life time.Duration) (*x509.Certificate, crypto.Signer, []byte, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: caCommonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(life),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return issue("CA", tmpl, nil, nil)
}

// newServing issues a serving certificate for the hosts, signed by ca, valid from now-backdate to
// now+Lifetime (not past the CA). It returns the certificate, tls.crt (it, then the CA) and tls.key.
func (c *Certs) newServing(ca *x509.Certificate, caKey crypto.Signer, now time.Time) (*x509.Certificate, []byte, []byte, error) {
	notAfter := now.Add(c.opts.Lifetime)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: servingCommonName},
		NotBefore:   now.Add(-backdate),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if len(c.opts.Hosts) > 0 {
		tmpl.Subject.CommonName = c.opts.Hosts[0]
	}
	for _, h := range c.opts.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	leaf, _, keyPEM, err := issue("serving", tmpl, ca, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	return leaf, encodeCertificates([]*x509.Certificate{leaf, ca}), keyPEM, nil
}

// issue gives tmpl a new key and serial number and signs it with parent's key, or, when parent is
// nil, with its own (self-signed). It returns the certificate, its key and the key's PEM.
func issue(what string, tmpl, parent *x509.Certificate, parentKey crypto.Signer) (*x509.Certificate, crypto.Signer, []byte, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, nil, err
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return nil, nil, nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("create the webhook %s certificate: %w", what, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parse the new webhook %s certificate: %w", what, err)
	}
	return cert, key, keyPEM, nil
}

// newKey makes an ECDSA P-256 key and its PKCS #8 PEM.
func newKey() (crypto.Signer, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate a key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode a key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), nil
}

// newSerial returns a random 128-bit certificate serial number.
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate a serial number: %w", err)
	}
	return serial, nil
}

// encodeCertificates returns the PEM of certs, in order.
func encodeCertificates(certs []*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&buf, &pem.Block{Type: pemCertificate, Bytes: c.Raw})
	}
	return buf.Bytes()
}

// load makes the serving certificate and the CA bundle in data the ones GetCertificate and
// CABundle return.
func (c *Certs) load(data map[string][]byte) error {
	pair, err := tls.X509KeyPair(data[keyTLSCert], data[keyTLSKey])
	if err != nil {
		return fmt.Errorf("load the webhook serving certificate: %w", err)
	}
	bundle := bytes.Clone(data[keyCACert])
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cert = &pair
	c.caBundle = bundle
	return nil
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
// logging failures, until ctx ends.
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

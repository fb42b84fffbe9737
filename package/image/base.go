package image

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// NonrootUID is the user and group the operator runs as, the distroless convention.
const NonrootUID = 65532

// CABundlePath is where Go's crypto/x509 (and most TLS clients on Linux) look for trusted roots.
const CABundlePath = "etc/ssl/certs/ca-certificates.crt"

// layerTime is every file's modification time. A constant epoch, not the commit time, keeps the base
// layer byte-identical from release to release, so a registry stores it once.
func layerTime() time.Time { return time.Unix(0, 0).UTC() }

// entry is one file or directory of a layer. Owner 0 unless set: system files belong to root.
type entry struct {
	name string
	mode int64
	dir  bool
	uid  int
	data []byte
}

// baseLayer is the whole operating system the operator needs: the passwd and group files naming
// the non-root user, a writable /tmp and the trusted CA roots. Nothing comes from a base image.
func baseLayer() (v1.Layer, error) {
	roots, err := caBundle()
	if err != nil {
		return nil, err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonrootUID, NonrootUID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonrootUID)
	return layer([]entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: CABundlePath, mode: 0o644, data: roots},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, uid: NonrootUID},
		{name: "root/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	})
}

// caBundle is the PEM bundle of the Mozilla NSS roots as the Go project publishes them in the module
// golang.org/x/crypto/x509roots/fallback. It comes through the Go module proxy, the only network a
// build here has; go.sum pins it (checked against the checksum database), so the roots change only
// with a reviewed go.mod bump, and the build is reproducible offline. Roots that NSS trusts only for
// certificates issued before a date are left out: a PEM file cannot carry that limit, and every
// reader of the file would trust them without it.
func caBundle() ([]byte, error) {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
	}
	if buf.Len() == 0 {
		return nil, fmt.Errorf("the CA bundle has no unconstrained roots")
	}
	return buf.Bytes(), nil
}

// layer writes entries, in order, into a deterministic tar: fixed times, numeric owners, no user or
// group names, and gzip that depends only on the bytes.
func layer(entries []entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:     e.name,
			Mode:     e.mode,
			Uid:      e.uid,
			Gid:      e.uid,
			ModTime:  layerTime(),
			Typeflag: tar.TypeReg,
			Size:     int64(len(e.data)),
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

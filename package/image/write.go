package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// WriteLayout assembles the index and writes it into dir, which must be missing or empty, as an
// OCI image layout whose index.json holds that one index (named by Tag). That is the shape
// `crane push <dir> <ref>` and `skopeo copy --all oci:<dir>:<tag> docker://<ref>` read. It returns
// the index's digest.
func WriteLayout(dir string, o Options) (v1.Hash, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return v1.Hash{}, err
	}
	if len(entries) > 0 {
		return v1.Hash{}, fmt.Errorf("image: %s is not empty; remove it first", dir)
	}
	idx, err := Index(o)
	if err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	var opts []layout.Option
	if o.Tag != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{RefNameAnnotation: o.Tag}))
	}
	if err := p.AppendIndex(idx, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("image: writing %s: %w", dir, err)
	}
	return idx.Digest()
}

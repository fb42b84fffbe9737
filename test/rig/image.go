package rig

import (
	"archive/tar"
	"errors"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// ImageFile is one entry of an image's filesystem: its tar header and, for a regular file, its
// content.
type ImageFile struct {
	Header *tar.Header
	Data   []byte
}

// ImageFiles is img's filesystem as its layers stack up (mutate.Extract, as a container runtime
// unpacks them), every entry by its path without a leading or trailing slash.
func ImageFiles(img v1.Image) (map[string]ImageFile, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]ImageFile{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[strings.Trim(h.Name, "/")] = ImageFile{Header: h, Data: data}
	}
}

package guests

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
)

// ReleaseRecordBomb is what Helm keeps in data.release of a release Secret — base64 of gzip of
// the release's JSON — for a record that starts like a release and decompresses to size bytes. It
// is built streaming, one MiB of the plain text at a time, so neither the test nor anything but
// the reader under test ever holds the expanded record: a repeated byte compresses about 1000:1,
// so 600 MiB come out as about 800 KiB of base64, within the 1 MiB a Secret may hold.
func ReleaseRecordBomb(size int64) ([]byte, error) {
	var out bytes.Buffer
	b64 := base64.NewEncoder(base64.StdEncoding, &out)
	gz, err := gzip.NewWriterLevel(b64, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	head := []byte(`{"name":"kube-vip","namespace":"kube-system","version":1,"info":{"status":"deployed"},"manifest":"`)
	if _, err := gz.Write(head); err != nil {
		return nil, err
	}
	block := bytes.Repeat([]byte("a"), 1<<20)
	for left := size - int64(len(head)); left > 0; left -= int64(len(block)) {
		chunk := block
		if left < int64(len(chunk)) {
			chunk = chunk[:left]
		}
		if _, err := gz.Write(chunk); err != nil {
			return nil, err
		}
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	if err := b64.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

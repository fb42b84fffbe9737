package guest

import (
	"fmt"
	"io"
)

// ValueLimit reads JSON text and fails once it holds more than a number of values. It counts
// what a decoder makes room for without decoding anything: every object and array, and every
// comma between members or elements, outside strings; an object in a list counts twice, with its
// comma. Text that is not JSON is counted the same way; the decoder reading it fails on its own.
type ValueLimit struct {
	body             io.ReadCloser
	max, counted     int
	err              error
	inString, escape bool
}

// LimitValues reads r, failing with tooMany once it holds more than max values.
func LimitValues(r io.ReadCloser, max int, tooMany error) *ValueLimit {
	return &ValueLimit{body: r, max: max, err: fmt.Errorf("%w (more than %d JSON values)", tooMany, max)}
}

// Counted is how many values have been read.
func (v *ValueLimit) Counted() int { return v.counted }

func (v *ValueLimit) Read(p []byte) (int, error) {
	if v.counted > v.max {
		return 0, v.err
	}
	n, err := v.body.Read(p)
	for _, c := range p[:n] {
		switch {
		case v.escape:
			v.escape = false
		case v.inString:
			switch c {
			case '\\':
				v.escape = true
			case '"':
				v.inString = false
			}
		case c == '"':
			v.inString = true
		case c == '{' || c == '[' || c == ',':
			v.counted++
		}
	}
	if v.counted > v.max {
		return n, v.err
	}
	return n, err
}

func (v *ValueLimit) Close() error { return v.body.Close() }

package guest

import (
	"fmt"
	"io"
)

// StringValueBytes is how many bytes of a string count as one JSON value: a string costs the
// operator its bytes once decoded, so one of a megabyte must not pass as one value. A string
// counts its share of an answer: MaxGuestResponseValues values of 256 bytes are MaxGuestResponse,
// so an answer's strings and its structure share one budget.
const StringValueBytes = 256

// ValueLimit reads JSON text and fails once it holds more than a number of values. It counts
// what a decoder makes room for without decoding anything: every object and array, every comma
// between members or elements, outside strings, and every StringValueBytes bytes inside a string;
// an object in a list counts twice, with its comma. Text that is not JSON is counted the same way;
// the decoder reading it fails on its own.
type ValueLimit struct {
	body             io.ReadCloser
	max, counted     int
	err              error
	inString, escape bool
	// inThisString are the bytes of the string being read not counted yet.
	inThisString int
}

// LimitValues reads r, failing with tooMany once it holds more than max values.
func LimitValues(r io.ReadCloser, max int, tooMany error) *ValueLimit {
	return &ValueLimit{body: r, max: max, err: fmt.Errorf("%w (more than %d JSON values, a string's every %d bytes counted as one)", tooMany, max, StringValueBytes)}
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
		case v.inString:
			if v.inThisString++; v.inThisString == StringValueBytes {
				v.counted++
				v.inThisString = 0
			}
			switch {
			case v.escape:
				v.escape = false
			case c == '\\':
				v.escape = true
			case c == '"':
				v.inString = false
			}
		case c == '"':
			v.inString, v.inThisString = true, 0
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

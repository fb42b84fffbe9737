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
	// With perValue (LimitEvents), the budget is each top-level value's, not the whole text's:
	// depth is how deep the reader is in the current one, bytes and maxBytes its bytes and their
	// bound, and failed says one went over.
	perValue        bool
	depth           int
	bytes, maxBytes int
	failed          bool
}

// LimitValues reads r, failing with tooMany once it holds more than max values.
func LimitValues(r io.ReadCloser, max int, tooMany error) *ValueLimit {
	return &ValueLimit{body: r, max: max, err: fmt.Errorf("%w (more than %d JSON values, a string's every %d bytes counted as one)", tooMany, max, StringValueBytes)}
}

// LimitEvents reads r, a stream of JSON values such as a watch's events, failing with tooLarge once
// one of them holds more than maxValues values or maxBytes bytes: each value has the budget anew,
// so that a stream may go on for ever while no one event takes more than its share.
func LimitEvents(r io.ReadCloser, maxBytes, maxValues int, tooLarge error) *ValueLimit {
	return &ValueLimit{body: r, max: maxValues, maxBytes: maxBytes, perValue: true,
		err: fmt.Errorf("%w (an event of more than %d bytes or %d JSON values)", tooLarge, maxBytes, maxValues)}
}

// Counted is how many values have been read.
func (v *ValueLimit) Counted() int { return v.counted }

func (v *ValueLimit) Read(p []byte) (int, error) {
	if v.counted > v.max || v.failed {
		return 0, v.err
	}
	n, err := v.body.Read(p)
	for _, c := range p[:n] {
		if v.perValue {
			if v.bytes++; v.bytes > v.maxBytes || v.counted > v.max {
				v.failed = true
				return n, v.err
			}
			if !v.inString {
				switch c {
				case '{', '[':
					v.depth++
				case '}', ']':
					if v.depth--; v.depth <= 0 {
						// The value ends here: the next starts with a budget of its own.
						v.depth, v.counted, v.bytes = 0, 0, 0
					}
				}
			}
		}
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

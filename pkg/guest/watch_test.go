package guest

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestLimitEventsBoundsEachEventNotTheStream: a stream of events, each within the bounds, is read
// to its end however long it is; one event over either bound (bytes or JSON values, a string
// counted by its bytes) fails the stream at that event.
func TestLimitEventsBoundsEachEventNotTheStream(t *testing.T) {
	t.Parallel()
	event := `{"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"1"},"spec":{"ports":[{"port":80},{"port":443}]}}}` + "\n"
	read := func(stream string, bytes, values int) error {
		_, err := io.ReadAll(LimitEvents(io.NopCloser(strings.NewReader(stream)), bytes, values, ErrGuestResponseTooLarge))
		return err
	}
	long := strings.Repeat(event, 1000)
	if err := read(long, len(event)+1, 16); err != nil {
		t.Errorf("a thousand events within the bounds: %v; want all read", err)
	}
	for _, tc := range []struct {
		name   string
		stream string
	}{
		{"an event of too many bytes", long + `{"type":"ADDED","object":{"metadata":{"name":"` + strings.Repeat("b", 200) + `"}}}`},
		{"an event of too many values", long + `{"type":"ADDED","object":{"a":[` + strings.Repeat("{},", 20) + `{}]}}`},
		{"an event of a long string", long + `{"type":"ADDED","object":{"s":"` + strings.Repeat("x", 17*StringValueBytes) + `"}}`},
	} {
		bytes := len(event) + 1
		if tc.name == "an event of a long string" {
			bytes = 1 << 20
		}
		if err := read(tc.stream, bytes, 16); !errors.Is(err, ErrGuestResponseTooLarge) {
			t.Errorf("%s: %v; want ErrGuestResponseTooLarge", tc.name, err)
		}
	}
}

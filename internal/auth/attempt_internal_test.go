package auth

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAttemptEncoding: an attempt reads back as written, and anything cut
// short or run on is refused.
func TestAttemptEncoding(t *testing.T) {
	t.Parallel()
	for _, a := range []attempt{
		{State: "s", Nonce: "n", Verifier: "v", Created: 1_790_000_000},
		{State: strings.Repeat("S", 43), Nonce: strings.Repeat("N", 43), Verifier: strings.Repeat("V", 43), Next: "/meals?month=2026-09&é=1", Invite: strings.Repeat("I", 43), Created: -1},
		{Next: strings.Repeat("/x", maxNextInAttempt/2)},
	} {
		b := a.encode()
		got, ok := decodeAttempt(b)
		if !ok {
			t.Fatalf("decodeAttempt(encode(%+v)) = not ok", a)
		}
		if d := cmp.Diff(a, got); d != "" {
			t.Errorf("decodeAttempt(encode(a)) (-want +got):\n%s", d)
		}
		for _, bad := range [][]byte{b[:len(b)-1], b[:7], append(append([]byte(nil), b...), 0)} {
			if got, ok := decodeAttempt(bad); ok {
				t.Errorf("decodeAttempt(%d of %d bytes) = %+v, ok; want not ok", len(bad), len(b), got)
			}
		}
	}
}

// FuzzDecodeAttempt: no input makes decodeAttempt panic, and what it
// accepts encodes back to the same bytes.
func FuzzDecodeAttempt(f *testing.F) {
	f.Add(attempt{State: "s", Nonce: "n", Verifier: "v", Next: "/meals", Invite: "i", Created: 42}.encode())
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0}) // a length written long
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := decodeAttempt(b)
		if !ok {
			return
		}
		if got := a.encode(); string(got) != string(b) {
			t.Errorf("encode(decodeAttempt(%x)) = %x", b, got)
		}
	})
}

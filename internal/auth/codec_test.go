package auth

import (
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/google/go-cmp/cmp"
)

func TestSessionCodec(t *testing.T) {
	t.Parallel()
	deadline := time.Date(2026, 9, 1, 12, 0, 0, 123, time.UTC)
	values := map[string]any{keyUserID: "sub-1", "other": "st", "empty": ""}
	b, err := SessionCodec{}.Encode(deadline, values)
	if err != nil {
		t.Fatal(err)
	}
	gotDeadline, got, err := SessionCodec{}.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !gotDeadline.Equal(deadline) {
		t.Errorf("deadline = %v, want %v", gotDeadline, deadline)
	}
	if d := cmp.Diff(values, got); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
	if id := sessionUserID(b); id != "sub-1" {
		t.Errorf("sessionUserID = %q, want sub-1", id)
	}
	if _, err := (SessionCodec{}).Encode(deadline, map[string]any{"n": 1}); err == nil {
		t.Error("Encode(an int) = nil error, want one")
	}
	for _, bad := range [][]byte{nil, []byte("gob"), append(b[:len(b)-1:len(b)-1], 0xff, 0xff)} {
		if _, _, err := (SessionCodec{}).Decode(bad); err == nil {
			t.Errorf("Decode(%q) = nil error, want one", bad)
		}
	}
}

// BenchmarkSessionCodec is the case for SessionCodec over scs's gob
// default: a signed-in session (the user ID) read as a page request reads
// it (Decode), as the owner-photo guard reads it (sessionUserID: SessionCodec
// only; with gob the guard would have to Decode), and written at sign-in
// (Encode).
func BenchmarkSessionCodec(b *testing.B) {
	deadline := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	values := map[string]any{keyUserID: "112233445566778899001"}
	for _, c := range []struct {
		name  string
		codec scs.Codec
	}{{"session", SessionCodec{}}, {"gob", scs.GobCodec{}}} {
		enc, err := c.codec.Encode(deadline, values)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, v, err := c.codec.Decode(enc); err != nil || v[keyUserID] != values[keyUserID] {
					b.Fatalf("Decode = %v, %v", v, err)
				}
			}
		})
		b.Run(c.name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.codec.Encode(deadline, values); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	enc, _ := SessionCodec{}.Encode(deadline, values)
	b.Run("session/user-id", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if sessionUserID(enc) == "" {
				b.Fatal("no user ID")
			}
		}
	})
}

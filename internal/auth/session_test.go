package auth

import (
	"net/http"
	"testing"
	"time"

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

func TestCookieValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		headers []string
		want    string
	}{
		{[]string{"ndiro_session=abc"}, "abc"},
		{[]string{"a=1; ndiro_session=abc; b=2"}, "abc"},
		{[]string{"a=1", "ndiro_session=\"abc\""}, "abc"},
		{[]string{"ndiro_sessionx=abc; xndiro_session=def"}, ""},
		{nil, ""},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header["Cookie"] = tc.headers
		if got := cookieValue(r, "ndiro_session"); got != tc.want {
			t.Errorf("cookieValue(%q) = %q, want %q", tc.headers, got, tc.want)
		}
	}
}

package meal

import (
	"net/url"
	"testing"
)

func TestPhotoQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, v, size string }{
		{"v=0123456789ab&size=thumb", "0123456789ab", "thumb"},
		{"size=thumb&v=abc", "abc", "thumb"},
		{"v=a&v=b", "a", ""},
		{"v=a%62&size=th%75mb", "ab", "thumb"},
		{"", "", ""},
		{"x=1&size", "", ""},
	} {
		u := &url.URL{RawQuery: tc.raw}
		v, size := photoQuery(u)
		if v != tc.v || size != tc.size {
			t.Errorf("photoQuery(%q) = %q, %q, want %q, %q", tc.raw, v, size, tc.v, tc.size)
		}
		q := u.Query()
		if q.Get("v") != v || q.Get("size") != size {
			t.Errorf("photoQuery(%q) = %q, %q; url.Query says %q, %q", tc.raw, v, size, q.Get("v"), q.Get("size"))
		}
	}
}

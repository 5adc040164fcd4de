package admin

import (
	"testing"
	"time"
)

// TestGraceWords checks the monitor's wording of NDIRO_ORPHAN_GRACE, so
// the page never says "the last hour" for a grace that is not one.
func TestGraceWords(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{time.Hour, "hour"},
		{2 * time.Hour, "2 hours"},
		{90 * time.Minute, "90 minutes"},
		{time.Minute, "minute"},
		{10 * time.Minute, "10 minutes"},
		{90 * time.Second, "90 seconds"},
		{1500 * time.Millisecond, "1.5s"},
	} {
		if got := graceWords(c.d); got != c.want {
			t.Errorf("graceWords(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

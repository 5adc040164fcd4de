package meal_test

import (
	"fmt"
	"image/color"
	"net/http"
	"net/url"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/meal"
)

// TestUploadLimitPerOwner: the upload allowance (the one uploads.Allow
// call, keyed by the owner's ID) is each owner's own: one owner's spent
// burst refuses nothing of another's, even from the same address.
func TestUploadLimitPerOwner(t *testing.T) {
	t.Parallel()
	app := apptest.New(t)
	first := app.Client()
	first.SignIn("admin@example.com")
	second := app.Client()
	second.SignInVia("/login?invite="+first.CreateInvite(url.Values{"role": {"owner"}}), "second@example.com")
	pic := apptest.JPEG(t, 32, 24, color.RGBA{R: 90, G: 160, B: 60, A: 255})
	send := func(c *apptest.Client, i int) int {
		t.Helper()
		form := url.Values{"date": {"2026-09-01"}, "time": {fmt.Sprintf("13:%02d", i%60)}, "kind": {"lunch"}}
		return c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "p.jpg", Body: pic}).StatusCode
	}
	for i := range meal.UploadBurst {
		if got := send(first, i); got != http.StatusSeeOther {
			t.Fatalf("first owner's upload %d = %d, want 303", i+1, got)
		}
	}
	if got := send(first, meal.UploadBurst); got != http.StatusTooManyRequests {
		t.Fatalf("first owner's upload past the burst = %d, want 429", got)
	}
	for i := range meal.UploadBurst {
		if got := send(second, i); got != http.StatusSeeOther {
			t.Fatalf("second owner's upload %d with the first's spent = %d, want 303", i+1, got)
		}
	}
}

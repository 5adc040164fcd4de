package share_test

import (
	"context"
	"image/color"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
	"ndiro/internal/meal"
	"ndiro/internal/photo"
	"ndiro/internal/user"
)

const (
	adminEmail = "admin@example.com"
	ownerEmail = "ana.lima@example.com"
	otherEmail = "bruno@example.com"
	ownerName  = "Ana Lima"
)

// jpegOf returns a w×h JPEG of one colour, made in the test.
func jpegOf(t testing.TB, w, h int, c color.RGBA) []byte {
	t.Helper()
	return apptest.JPEG(t, w, h, c)
}

// signUp makes email an owner (a users row, as an invite would) and
// returns a client signed in as them, with the provider's name claim name.
func signUp(t testing.TB, app *apptest.App, email, name string) *apptest.Client {
	t.Helper()
	err := app.Users.Create(context.Background(), &user.User{
		ID: localenv.Subject(email), Email: email, Role: user.RoleOwner, Status: user.StatusActive,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := app.Client()
	c.SignInNamed(email, name)
	return c
}

// addMeal logs a meal for c's owner; photo may be nil. kv are more form
// fields (notes, kcal, …). It returns the stored meal.
func addMeal(t testing.TB, app *apptest.App, c *apptest.Client, email, date, tod, kind string, photoBytes []byte, kv ...string) meal.Meal {
	t.Helper()
	form := url.Values{"date": {date}, "time": {tod}, "kind": {kind}}
	if photoBytes == nil {
		form.Set("notes", "a meal") // an empty meal is not saved
	}
	for i := 0; i+1 < len(kv); i += 2 {
		form.Set(kv[i], kv[i+1])
	}
	var resp *apptest.Response
	if photoBytes != nil {
		resp = c.PostMultipart("/meals", form, apptest.File{Field: "photo", Name: "meal.jpg", Body: photoBytes})
	} else {
		resp = c.PostForm("/meals", form)
	}
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add meal on %s: %d, want 303; body %s", date, resp.StatusCode, resp.Body)
	}
	all, err := app.Meals.All(context.Background(), localenv.Subject(email))
	if err != nil {
		t.Fatal(err)
	}
	hhmmss := strings.ReplaceAll(tod, ":", "")
	for _, m := range all {
		if m.Date == date && strings.HasPrefix(m.ID, hhmmss) && string(m.Kind) == kind {
			return m
		}
	}
	t.Fatalf("meal on %s at %s not stored", date, tod)
	return meal.Meal{}
}

// createShare posts the create form as c and returns the new share's
// token.
func createShare(t testing.TB, c *apptest.Client, form url.Values) string {
	t.Helper()
	return c.CreateShare(form)
}

// shareForm is a create form for 1–14 Sep 2026 that never expires; kv
// replace fields.
func shareForm(kv ...string) url.Values {
	v := url.Values{"label": {"Dr. Rossi"}, "from": {"2026-09-01"}, "to": {"2026-09-14"}, "expiry": {"never"}, "notes": {"1"}, "numbers": {"1"}}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			v.Del(kv[i])
			continue
		}
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// object returns the bytes stored under key.
func object(t testing.TB, app *apptest.App, key string) []byte {
	t.Helper()
	out, err := app.Env.S3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("test-photos"), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return b
}

// photoPath is the recipient URL of m's photo in size under tok.
func photoPath(tok string, m meal.Meal, size photo.Size) string {
	p := "/s/" + tok + "/photo/" + m.Date + "/" + m.ID + "?v=" + m.PhotoV.Tag()
	if size == photo.SizeThumb {
		p += "&size=thumb"
	}
	return p
}

// request sends method path as c with the given headers ("Name", "value",
// …).
func request(t testing.TB, c *apptest.Client, base, method, path string, hdr ...string) *apptest.Response {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return c.Do(req)
}

// everything returns a page's text and every attribute value, for tests
// that look for what a page must not hold anywhere.
func everything(t testing.TB, body string) string {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, n := range s.Nodes {
			for _, a := range n.Attr {
				b.WriteString(a.Val + "\n")
			}
		}
	})
	b.WriteString(doc.Text())
	return b.String()
}

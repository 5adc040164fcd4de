package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ndiro/internal/apptest"
	"ndiro/internal/localenv"
)

// lighthouseAudit is one audit's result as e2e/lighthouse.mjs prints it.
type lighthouseAudit struct {
	Score        *float64 `json:"score"`
	Mode         string   `json:"mode"`
	SavingsBytes float64  `json:"savingsBytes"`
	Items        []struct {
		URL         string  `json:"url"`
		WastedBytes float64 `json:"wastedBytes"`
	} `json:"items"`
}

// lighthousePage is one page's line of e2e/lighthouse.mjs.
type lighthousePage struct {
	URL        string                     `json:"url"`
	FinalURL   string                     `json:"finalUrl"`
	Images     int                        `json:"images"`
	ImageBytes int                        `json:"imageBytes"`
	Audits     map[string]lighthouseAudit `json:"audits"`
}

// lighthouseMust are the audits every page must pass: "Properly size
// images" and "Serve images in modern formats".
var lighthouseMust = []string{"uses-responsive-images", "modern-image-formats"}

// TestLighthouse runs Lighthouse (mobile) on the owner's month, a meal
// page and the share link's page of a 90-meal month of testdata's phone
// photos (make lighthouse, e2e/lighthouse.sh, which sets
// NDIRO_LIGHTHOUSE_DIR to where it installed Lighthouse), once for an
// owner whose photos have their sized copies and once for one whose
// photos have only the copies of before sizing. With the sized copies
// "Properly size images" and "Serve images in modern formats" must pass
// on every page (score 1); without them the month must fail at least
// one, so the audits are seen to judge the pages' photos. Each page must
// have loaded photos, as the signed-in owner (or the recipient).
func TestLighthouse(t *testing.T) {
	dir := os.Getenv("NDIRO_LIGHTHOUSE_DIR")
	if dir == "" {
		t.Skip("NDIRO_LIGHTHOUSE_DIR unset: make lighthouse runs it")
	}
	copies := makePhoneCopies(t)
	app := apptest.New(t)
	for _, tc := range []struct {
		email string
		sized bool
	}{{"after@example.com", true}, {"before@example.com", false}} {
		t.Run(tc.email[:strings.IndexByte(tc.email, '@')], func(t *testing.T) {
			tok := fillPhoneMonth(t, app, tc.email, copies, tc.sized)
			ms, err := app.Meals.All(t.Context(), localenv.Subject(tc.email))
			if err != nil || len(ms) == 0 {
				t.Fatalf("meals: %v", err)
			}
			urls := []string{app.URL + "/meals?month=" + browserMonth, app.URL + ms[40].DetailURL(), app.URL + "/s/" + tok}
			pages := runLighthouse(t, dir, app, tc.email, urls)
			for i, p := range pages {
				name := strings.NewReplacer(app.URL, "", tok, "{token}").Replace(p.URL)
				if p.FinalURL != urls[i] || p.Images == 0 {
					t.Errorf("%s: ended at %s with %d photos: not the page, or no photos on it", name, p.FinalURL, p.Images)
				}
				t.Logf("%s: %d images, %d bytes", name, p.Images, p.ImageBytes)
				failed := 0
				for id, a := range p.Audits {
					score := -1.0
					if a.Score != nil {
						score = *a.Score
					}
					t.Logf("%s: %s: score %.2f, %.0f bytes to save", name, id, score, a.SavingsBytes)
					if slices.Contains(lighthouseMust, id) && score >= 0 && score < 1 {
						failed++
						if tc.sized {
							var items []string
							for _, it := range a.Items {
								items = append(items, fmt.Sprintf("%s %.0f", strings.TrimPrefix(it.URL, app.URL), it.WastedBytes))
							}
							t.Errorf("%s: %s fails (score %.2f, %.0f bytes): %s", name, id, score, a.SavingsBytes, strings.Join(items, "; "))
						}
					}
				}
				for _, id := range lighthouseMust {
					if _, ok := p.Audits[id]; !ok {
						t.Errorf("%s: no %s audit", name, id)
					}
				}
				if !tc.sized && i == 0 && failed == 0 {
					t.Errorf("%s with the copies of before sizing passes both audits: they do not judge its photos", name)
				}
			}
		})
	}
}

// runLighthouse audits urls signed in as email (the session cookie of a
// sign-in through the app) and returns each page's result, in order.
func runLighthouse(t *testing.T, dir string, app *apptest.App, email string, urls []string) []lighthousePage {
	t.Helper()
	c := app.Client()
	c.SignIn(email)
	base, _ := url.Parse(app.URL)
	var cookie map[string]string
	for _, ck := range c.HTTP.Jar.Cookies(base) {
		if ck.Name == "ndiro_session" {
			cookie = map[string]string{"name": ck.Name, "value": ck.Value, "url": app.URL}
		}
	}
	if cookie == nil {
		t.Fatal("no session cookie after signing in")
	}
	in, _ := json.Marshal(map[string]any{"chrome": os.Getenv("CHROME_PATH"), "cookie": cookie, "urls": urls})
	cmd := exec.CommandContext(t.Context(), "node", filepath.Join(dir, "lighthouse.mjs"))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lighthouse: %v\n%s", err, stderr.String())
	}
	var pages []lighthousePage
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		var p lighthousePage
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("lighthouse printed %q: %v", sc.Text(), err)
		}
		pages = append(pages, p)
	}
	if len(pages) != len(urls) {
		t.Fatalf("lighthouse reported %d pages, want %d\n%s", len(pages), len(urls), stderr.String())
	}
	return pages
}
